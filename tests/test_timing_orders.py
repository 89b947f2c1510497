"""The order in which interleaved measurements run their workloads (no GPU needed: the
order is plain arithmetic, and measure_interleaved runs its rounds in exactly these)."""

from collections import Counter

import pytest

from accelgraph_cli.cuda.timing import round_orders


def _followers(rows):
    return Counter((row[i - 1], row[i]) for row in rows for i in range(1, len(row)))


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7, 8])
def test_each_workload_follows_each_other_equally_often_and_never_itself(n):
    rows = round_orders(n)
    assert all(sorted(row) == list(range(n)) for row in rows)  # every workload once a round
    pairs = _followers(rows)
    assert set(pairs) == {(a, b) for a in range(n) for b in range(n) if a != b}
    assert len(set(pairs.values())) == 1  # and each pair equally often


def test_two_workloads_alternate_as_before_and_one_runs_alone():
    assert round_orders(2) == [[0, 1], [1, 0]]
    assert round_orders(1) == [[0]]


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 9])
def test_across_the_rounds_boundaries_no_workload_follows_itself_either(n):
    # the rounds run back to back, cycling through the orders: join two cycles
    chain = [k for row in round_orders(n) * 2 for k in row]
    assert not any(a == b for a, b in zip(chain, chain[1:]))


def test_mirrored_rounds_would_not_be_balanced():
    # The order used before: a, b, c, d then d, c, b, a. Across the rounds' boundary the
    # last workload follows itself, and within them b only ever follows a or c.
    mirrored = [[0, 1, 2, 3], [3, 2, 1, 0]]
    chain = [k for row in mirrored * 2 for k in row]
    pairs = Counter(zip(chain, chain[1:]))
    assert pairs[(3, 3)] and pairs[(0, 0)] and not pairs[(3, 1)]
    chain = [k for row in round_orders(4) * 2 for k in row]
    assert not any(a == b for a, b in zip(chain, chain[1:]))  # nor across boundaries here
