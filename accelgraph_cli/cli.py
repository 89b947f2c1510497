"""The `accelgraph` command: one short function per verb, the logic lives in the library.

Exit codes (every verb): 0 ok; 1 a check failed / graphs differ; 2 bad input (file, option,
scenario, illegal call during capture); 3 no usable CUDA GPU; 130 interrupted.
"""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from . import __version__
from .errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, AccelgraphError

app = typer.Typer(
    name="accelgraph",
    help=(
        "Capture, inspect and replay CUDA graphs.\n\n"
        "GPU verbs (capture, replay, dump, smoke) need a CUDA GPU and CuPy; "
        "show and diff work on saved dumps anywhere."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

err_console = Console(stderr=True, highlight=False)


def fail(message: str, code: int = EXIT_BAD_INPUT) -> "typer.Exit":
    """Print one error line to stderr and return the Exit to raise."""
    err_console.print(f"[bold red]accelgraph: error:[/] {message}", soft_wrap=True)
    return typer.Exit(code)


def version_callback(value: bool) -> None:
    if value:
        print(f"accelgraph {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", callback=version_callback, is_eager=True, help="Print the version."
    ),
) -> None:
    """Capture, inspect and replay CUDA graphs."""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `accelgraph` script: run the app, mapping errors to exit codes."""
    try:
        app(args=argv, standalone_mode=False)
    except AccelgraphError as exc:
        fail(str(exc), exc.exit_code)
        return exc.exit_code
    except typer.Exit as exc:
        return exc.exit_code
    except KeyboardInterrupt:
        err_console.print("accelgraph: interrupted")
        return EXIT_INTERRUPTED
    except Exception as exc:  # click usage errors and the like
        import click

        if isinstance(exc, click.exceptions.Abort):
            err_console.print("accelgraph: interrupted")
            return EXIT_INTERRUPTED
        if isinstance(exc, click.ClickException):
            exc.show(file=sys.stderr)
            return EXIT_BAD_INPUT
        raise
    return 0
