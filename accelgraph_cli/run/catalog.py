"""The bundled scenarios: list them, and turn a SCENARIO argument into a file.

Every verb that takes a scenario takes a path or the name of a bundled scenario
(``accelgraph replay mlp_decode``). A path that exists always wins, so a file of one's own
named like a bundled scenario is never shadowed. Nothing here runs a scenario or needs a GPU.
"""

from __future__ import annotations

from pathlib import Path

from ..bundled import scenarios_folder
from ..files import path_kind
from .scenario import ScenarioError, ScenarioInfo, inspect_scenario, scenario_path_kind


def bundled_scenario_files() -> list[Path]:
    """The bundled scenario files, sorted by name (files starting with ``_`` are helpers)."""
    folder = scenarios_folder()
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("_"))


def bundled_names() -> list[str]:
    """Names of the bundled scenarios, as verbs accept them: ``["buckets", ...]``."""
    return [p.stem for p in bundled_scenario_files()]


def bundled_scenarios() -> list[ScenarioInfo]:
    """What each bundled scenario declares (name, summary, params...), read without running it."""
    return [inspect_scenario(p) for p in bundled_scenario_files()]


def bundled_scenario(name: str) -> Path | None:
    """The bundled scenario called ``name`` (``"mlp_decode"`` or ``"mlp_decode.py"``), or None."""
    if not name or Path(name).name != name:
        return None  # a path with folders in it names a file, not a bundled scenario
    stem = name[:-3] if name.endswith(".py") else name
    return next((p for p in bundled_scenario_files() if p.stem == stem), None)


def resolve_scenario(argument: str | Path) -> Path:
    """The scenario file a SCENARIO argument names: an existing path as given, else the
    bundled scenario of that name. Neither: a one-line ScenarioError listing the bundled names.
    """
    if not str(argument).strip():  # Path("") is ".": this folder, which nobody named
        raise ScenarioError("an empty scenario name: name a scenario file or a bundled "
                            f"scenario ({', '.join(bundled_names()) or 'none'})")
    path = Path(argument)
    bundled = bundled_scenario(str(argument))
    kind = scenario_path_kind(path)
    if kind != "missing":
        if bundled is not None and (kind == "dir" or path.suffix != ".py"):
            raise ScenarioError(hides_bundled(argument, bundled), path=str(argument))
        return path
    if bundled is not None:
        return bundled
    hint = bundled_by_name(argument)
    if hint:
        raise ScenarioError(hint, path=str(argument))
    raise ScenarioError(
        f"{argument}: no such file, and no bundled scenario of that name; bundled: "
        f"{', '.join(bundled_names()) or 'none'} (`accelgraph scenarios` lists them)",
        path=str(argument),
    )


def bundled_by_name(argument: str | Path) -> str:
    """For a missing ``.py`` path named like a bundled scenario (``scenarios/mlp_decode.py``,
    as the README writes it, run outside a checkout), the error that points to the name;
    "" otherwise."""
    path = Path(argument)
    if path.suffix == ".py" and bundled_scenario(path.name) is not None:
        return f"{argument}: no such file; the bundled scenario {path.stem!r} runs by its " \
               f"name: `{path.stem}`"
    return ""


def hides_bundled(argument: str | Path, bundled: Path) -> str:
    """The error for a path that is not a scenario file but has a bundled scenario's name (a
    path wins over a name): which scenario it hides, and the path that reaches that one."""
    what = "folder" if Path(argument).is_dir() else "file"
    return (f"{argument}: this {what} is not a scenario (.py), and its name hides the bundled "
            f"scenario {argument}; to run that one, give its path: {bundled}")


def is_scenario_argument(argument: str) -> bool:
    """Whether ``argument`` names a scenario rather than a saved graph: a .py path, or the
    name of a bundled scenario where no file of that name exists (for `diff`)."""
    if argument.endswith(".py"):
        return True
    return path_kind(argument) == "missing" and bundled_scenario(argument) is not None


def relative_to_cwd(path: Path) -> Path:
    """``path`` relative to the working directory when it lies inside it (shorter to read)."""
    try:
        return path.relative_to(Path.cwd())
    except (ValueError, OSError):  # OSError: the working directory was deleted
        return path
