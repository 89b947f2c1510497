"""Sequence alignment: a common subsequence of two label sequences in bounded work."""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter, defaultdict

# Myers' diff finds a longest common subsequence in about D² steps for D edits; past this
# many edits in one stretch, align() splits the stretch instead (see align()).
MAX_EDIT_DISTANCE = 1000

# Myers' steps (diagonals visited, about D²/2 for D edits) one alignment may spend in all,
# about half a second of Python; after that only the linear steps of align() run.
ALIGN_WORK_LIMIT = 2_000_000

# Edits Myers is first given for a stretch, before anchors are looked for (see align()).
_QUICK_EDIT_DISTANCE = 64

# Longest runs of labels tried as anchors (see _unique_anchors).
_GRAM_MAX = 128

# Stretch size (both sides together) below which align() stops cutting and lets Myers work.
_PIECE = 400


def align(
    a: list,
    b: list,
    max_edit_distance: int = MAX_EDIT_DISTANCE,
    budget: list | None = None,
) -> list[tuple[int, int]]:
    """Pairs ``(i, j)`` with ``a[i] == b[j]``, increasing in both i and j: a common subsequence.

    A longest one when the sequences differ by a few edits (``_QUICK_EDIT_DISTANCE``), or by
    up to ``max_edit_distance`` where no anchor is found; a good one, in bounded work,
    otherwise. ``budget`` (a one-item list, shared by the calls of one diff; default
    ``[ALIGN_WORK_LIMIT]``) caps the steps of Myers' search; past it only linear steps run.

    Per stretch: common prefix and suffix; Myers' O(ND) diff if a few edits do; else
    anchors — items, then runs of 8, 32, 128 items, unique in both stretches (their longest
    increasing chain, as in patience diff) — with the stretches between anchors handled the
    same way; else Myers up to ``max_edit_distance``; else cuts at proportional positions
    into pieces small enough for Myers; last, the k-th occurrence of an item paired with
    its k-th.
    """
    pairs: list[tuple[int, int]] = []
    if budget is None:
        budget = [ALIGN_WORK_LIMIT]
    runs: dict = {}  # run ids of a and b, built the first time anchors need them
    work = [(0, len(a), 0, len(b))]
    while work:
        alo, ahi, blo, bhi = work.pop()
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            pairs.append((alo, blo))
            alo += 1
            blo += 1
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi -= 1
            bhi -= 1
            pairs.append((ahi, bhi))
        if alo == ahi or blo == bhi:
            continue
        # A few edits: Myers settles it at once. Many: anchors split the stretch first, so
        # the expensive search below runs only where nothing else can tell where things are.
        quick = min(max_edit_distance, _QUICK_EDIT_DISTANCE)
        found = _myers_within(a, alo, ahi, b, blo, bhi, quick, budget)
        if found is not None:
            pairs.extend(found)
            continue
        anchors = _unique_anchors(a, alo, ahi, b, blo, bhi, runs)
        if anchors:
            previous_i, previous_j = alo, blo
            for i, j, length in anchors:
                pairs.extend((i + t, j + t) for t in range(length))
                if i > previous_i and j > previous_j:
                    work.append((previous_i, i, previous_j, j))
                previous_i, previous_j = i + length, j + length
            if previous_i < ahi and previous_j < bhi:
                work.append((previous_i, ahi, previous_j, bhi))
            continue
        if max_edit_distance > quick:
            found = _myers_within(a, alo, ahi, b, blo, bhi, max_edit_distance, budget)
            if found is not None:
                pairs.extend(found)
                continue
        n, m = ahi - alo, bhi - blo
        if n + m > _PIECE:
            # Periodic stretches (the same layer again and again) have no unique anchor;
            # edits spread evenly keep pieces cut at proportional positions in step.
            pieces = -(-(n + m) // _PIECE)
            cuts_a = [alo + n * t // pieces for t in range(pieces + 1)]
            cuts_b = [blo + m * t // pieces for t in range(pieces + 1)]
            work.extend((cuts_a[t], cuts_a[t + 1], cuts_b[t], cuts_b[t + 1]) for t in range(pieces))
            continue
        pairs.extend(_occurrence_pairs(a, alo, ahi, b, blo, bhi))
    pairs.sort()
    return pairs


def _myers_within(a, alo, ahi, b, blo, bhi, max_d: int, budget: list) -> list | None:
    """Myers on a stretch when it can succeed within ``max_d`` edits and the work budget;
    None when it cannot (or did not)."""
    n, m = ahi - alo, bhi - blo
    count_a = Counter(a[alo:ahi])
    count_b = Counter(b[blo:bhi])
    if not count_a.keys() & count_b.keys():
        return []  # nothing in common: nothing to search for
    # Every item in surplus on one side costs one insertion or deletion at least.
    surplus = sum((count_a - count_b).values()) + sum((count_b - count_a).values())
    max_d = min(max_d, n + m, int(max(budget[0], 0) ** 0.5))
    if surplus > max_d:
        return None
    found = _myers(a, alo, ahi, b, blo, bhi, max_d)
    d = max_d if found is None else n + m - 2 * len(found)
    budget[0] -= (d + 1) * (d + 2) // 2  # diagonals visited (snakes come on top)
    return found


def _unique_anchors(a, alo, ahi, b, blo, bhi, runs: dict) -> list[tuple[int, int, int]]:
    """Anchors for a stretch, as ``(i, j, length)``: runs of ``length`` items that occur
    once in a[alo:ahi] and once in b[blo:bhi], the longest increasing chain of them with
    overlapping runs left out. Single items first, as patience diff does; when none is
    unique (periodic graphs repeat every short run), runs of 128, 32, then 8 items — the
    longest first, since a short run can be unique on both sides by chance at two places
    that have nothing to do with each other. ``runs`` caches the run ids of a and b."""
    anchors = _anchors_of(a[alo:ahi], b[blo:bhi], alo, blo, 1)
    if anchors:
        return anchors
    if not runs:
        runs.update(_run_ids(a, b))
    for length in sorted(runs, reverse=True):
        runs_a, runs_b = runs[length]
        if ahi - alo < length or bhi - blo < length:
            continue
        anchors = _anchors_of(
            runs_a[alo : ahi - length + 1], runs_b[blo : bhi - length + 1], alo, blo, length
        )
        if anchors:
            return anchors
    return []


def _run_ids(a: list, b: list) -> dict[int, tuple[list, list]]:
    """For lengths 8, 32, 128: ids of the runs of that many items starting at each position
    of a and of b (equal runs, equal ids). Built by doubling: O(len) per doubling."""
    levels = {}
    runs_a, runs_b = a, b
    length = 1
    table: dict = {}
    while length < _GRAM_MAX:
        runs_a = _double(runs_a, length, table)
        runs_b = _double(runs_b, length, table)
        length *= 2
        if not runs_a or not runs_b:
            break
        if length in (8, 32, _GRAM_MAX):
            levels[length] = (runs_a, runs_b)
    return levels


def _double(runs: list, length: int, table: dict) -> list:
    """Ids of runs of 2·length items from ids of runs of ``length``: the run at i followed
    by the run at i + length."""
    return [table.setdefault((length, x, y), len(table)) for x, y in zip(runs, runs[length:])]


def _anchors_of(grams_a, grams_b, alo, blo, length) -> list[tuple[int, int, int]]:
    count_a = Counter(grams_a)
    count_b = Counter(grams_b)
    where_b = {
        gram: blo + j for j, gram in enumerate(grams_b) if count_b[gram] == 1 and count_a.get(gram) == 1
    }
    if not where_b:
        return []
    candidates = [(alo + i, where_b[g]) for i, g in enumerate(grams_a) if g in where_b]
    anchors = []
    end_i = end_j = -1
    for i, j in _longest_increasing(candidates):
        if i >= end_i and j >= end_j:
            anchors.append((i, j, length))
            end_i, end_j = i + length, j + length
    return anchors


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of ``pairs`` (sorted by first item) whose second items increase."""
    tails: list[int] = []  # tails[k]: smallest j ending an increasing run of length k+1
    tail_index: list[int] = []
    previous = [-1] * len(pairs)
    for index, (_, j) in enumerate(pairs):
        k = bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_index.append(index)
        else:
            tails[k] = j
            tail_index[k] = index
        previous[index] = tail_index[k - 1] if k else -1
    run = []
    index = tail_index[-1] if tail_index else -1
    while index != -1:
        run.append(pairs[index])
        index = previous[index]
    run.reverse()
    return run


def _myers(a, alo, ahi, b, blo, bhi, max_d: int) -> list[tuple[int, int]] | None:
    """Myers' greedy O(ND) shortest edit script on a[alo:ahi] vs b[blo:bhi] -> matched pairs,
    or None when more than ``max_d`` edits are needed."""
    n, m = ahi - alo, bhi - blo
    if not set(a[alo:ahi]).intersection(b[blo:bhi]):
        return []  # nothing in common: no need to search
    max_d = min(max_d, n + m)
    offset = max_d + 1
    v = [0] * (2 * max_d + 3)
    trace = []
    for d in range(max_d + 1):
        trace.append(v[offset - d - 1 : offset + d + 2])  # state before round d, k in [-d-1, d+1]
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[offset + k - 1] < v[offset + k + 1]):
                x = v[offset + k + 1]
            else:
                x = v[offset + k - 1] + 1
            y = x - k
            while x < n and y < m and a[alo + x] == b[blo + y]:
                x += 1
                y += 1
            v[offset + k] = x
            if x >= n and y >= m:
                return _myers_backtrack(trace, d, n, m, alo, blo)
    return None


def _myers_backtrack(trace, final_d: int, n: int, m: int, alo: int, blo: int) -> list[tuple[int, int]]:
    pairs = []
    x, y = n, m
    for d in range(final_d, 0, -1):
        saved = trace[d]  # saved[k + d + 1] is v[k] before round d

        def v_at(k: int, saved=saved, d=d) -> int:
            return saved[k + d + 1]

        k = x - y
        if k == -d or (k != d and v_at(k - 1) < v_at(k + 1)):
            previous_k = k + 1
        else:
            previous_k = k - 1
        previous_x = v_at(previous_k)
        previous_y = previous_x - previous_k
        while x > previous_x and y > previous_y:
            x -= 1
            y -= 1
            pairs.append((alo + x, blo + y))
        x, y = previous_x, previous_y
    while x > 0 and y > 0:
        x -= 1
        y -= 1
        pairs.append((alo + x, blo + y))
    return pairs


def _occurrence_pairs(a, alo, ahi, b, blo, bhi) -> list[tuple[int, int]]:
    """Linear fallback: the k-th occurrence of an item in a with its k-th in b, in order."""
    positions: dict = defaultdict(list)
    for j in range(bhi - 1, blo - 1, -1):
        positions[b[j]].append(j)  # reversed, so pop() yields them in order
    candidates = []
    for i in range(alo, ahi):
        waiting = positions.get(a[i])
        if waiting:
            candidates.append((i, waiting.pop()))
    return _longest_increasing(candidates)
