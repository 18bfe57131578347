"""The ``memory-pipeline`` group: global flags, quiet logging and one way to fail.

Every command ends in one of three ways: exit 0 with its output, exit 2 with one line saying what
was wrong with the input and what to do, or exit 1 with one line naming the failure (``--debug``
prints the traceback instead). Errors and logs go to stderr, so ``--json`` output on stdout is
clean JSON. This module imports no heavy library: ``--help`` answers before any model, Dagster or
LanceDB import.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
import warnings
from dataclasses import dataclass

import typer
from typer.core import TyperGroup

try:  # typer carries its own copy of click from 0.2x on; its commands raise that copy's errors
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - older typer on the system click
    from click import exceptions as click_errors

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2
GLOBAL_FLAGS = ("-v", "-vv", "-vvv", "--verbose", "--debug")

# Errors the library raises for input it cannot use, by module: checked only when the module is
# loaded (an exception of a class never imported cannot occur), so nothing is imported for it.
BAD_INPUT_ERRORS = (
    ("memory_pipeline.tenancy", "InvalidTenantError"),
    ("memory_pipeline.tenancy", "UnknownTenantError"),
    ("memory_pipeline.recall.search", "RecallError"),
    ("memory_pipeline.recall.get", "GetError"),
    ("memory_pipeline.recall.get", "AccessDeniedError"),
    ("memory_pipeline.memories.operations", "MemoryOperationError"),
    ("memory_pipeline.recall.scope", "ReadOnlyError"),
    ("memory_pipeline.eval.locomo", "EvalDataError"),
    ("memory_pipeline.eval.updates", "ScenarioError"),
)


class BadInput(Exception):
    """Input a command cannot use; the message says what was wrong and what to do (exit 2)."""


@dataclass
class Flags:
    verbose: int = 0
    debug: bool = False


flags = Flags()


def bad_input(exc: BaseException | None) -> BaseException | None:
    """The bad-input error ``exc`` is or was raised from (Dagster wraps a step's error), if any."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, BadInput) or any(
            sys.modules.get(module) is not None and isinstance(exc, getattr(sys.modules[module], name, ()))
            for module, name in BAD_INPUT_ERRORS
        ):
            return exc
        exc = getattr(exc, "user_exception", None) or exc.__cause__
    return None


def one_line(text: str, limit: int = 400) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _say(message: str) -> None:
    typer.echo(f"error: {one_line(message)}", err=True)


def report(exc: BaseException) -> int:
    """Print one line for an exception a command raised; return the exit code."""
    if flags.debug:
        traceback.print_exception(exc)
    cause = bad_input(exc)
    if cause is not None:
        if not flags.debug:
            _say(str(cause))
        return EXIT_BAD_INPUT
    if not flags.debug:
        _say(f"{type(exc).__name__}: {exc} (run again with --debug for the traceback)")
    return EXIT_FAILURE


class MemoryPipelineGroup(TyperGroup):
    """Typer's group, with every error reported in one line on stderr (see ``report``)."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        args = _global_flags_first(list(sys.argv[1:] if args is None else args))
        _one_line_summaries(self)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
            code = code if isinstance(code, int) else 0
        except click_errors.NoArgsIsHelpError as exc:
            typer.echo(exc.ctx.get_help())
            code = 0
        except click_errors.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx else "memory-pipeline"
            _say(f"{exc.format_message()} (see '{where} --help')")
            code = exc.exit_code
        except click_errors.ClickException as exc:
            _say(exc.format_message())
            code = exc.exit_code
        except (typer.Abort, KeyboardInterrupt):
            typer.echo("aborted", err=True)
            code = 130
        except Exception as exc:  # noqa: BLE001 - the one place a command's failure is reported
            code = report(exc)
        if standalone_mode:
            sys.exit(code)
        return code


def _one_line_summaries(group) -> None:
    """Each command's summary in a command list is its help's first paragraph, as one line.

    Typer's rich help keeps a docstring's line breaks there, so a summary wrapped in the source
    came out broken in the middle of a sentence ("(a key added" / "by hand, ...")."""
    for command in getattr(group, "commands", {}).values():
        if command.help and not command.short_help:
            first = command.help.split("\n\n")[0]
            if "\n" in first.strip():
                command.short_help = " ".join(first.split())
        _one_line_summaries(command)


def _global_flags_first(args: list[str]) -> list[str]:
    """``-v`` and ``--debug`` may follow the command (``memory-pipeline ingest -v``): they are
    the group's options, so they move to the front (never past ``--``)."""
    end = args.index("--") if "--" in args else len(args)
    moved = [a for a in args[:end] if a in GLOBAL_FLAGS]
    return moved + [a for a in args[:end] if a not in GLOBAL_FLAGS] + args[end:]


def _level(verbose: int) -> int:
    """-v: warnings (and the project's own info); -vv: info; -vvv: debug. Without -v a command
    reports the warnings of its runs itself, after them (``runs.summarize``)."""
    return (logging.ERROR, logging.WARNING, logging.INFO)[verbose] if verbose < 3 else logging.DEBUG


def quiet_logging(verbose: int) -> None:
    """Library logs and warnings off the terminal unless ``-v`` (see ``_level``); ``-v`` alone
    once showed every library's and Dagster's info lines, hundreds per run.

    The level is set on the handler this adds, not on the root logger, so a host process (a
    test run) that already handles logging keeps its own levels."""
    level = _level(verbose)
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        handler.setLevel(logging.INFO if verbose == 1 else level)
        if verbose == 1:  # the project's own info lines, every library's warnings
            handler.addFilter(lambda record: record.levelno >= logging.WARNING or record.name.startswith("memory_pipeline"))
        root.addHandler(handler)
    if verbose:
        root.setLevel(min(root.getEffectiveLevel(), logging.INFO if verbose == 1 else level))
    if verbose < 3:  # Dagster's notes on its own beta and preview APIs are for this project's developers
        warnings.filterwarnings("ignore", message=r".* is currently in (beta|preview)")
    else:
        warnings.filterwarnings("ignore")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def dagster_log_level() -> str:
    """The level of Dagster's console logger for a run this process launches (``_level``)."""
    return "CRITICAL" if flags.verbose == 0 else logging.getLevelName(_level(flags.verbose))


app = typer.Typer(
    cls=MemoryPipelineGroup,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Long-term memory for LLM agents: index, consolidate, recall. Exit codes: 0 done, 1 failed, "
    "2 bad input.",
)


@app.callback()
def _global_options(
    verbose: int = typer.Option(
        0, "--verbose", "-v", count=True, help="Show logs as they happen: -v warnings, -vv info, -vvv debug."
    ),
    debug: bool = typer.Option(False, "--debug", help="On an error, print the full traceback."),
) -> None:
    flags.verbose, flags.debug = verbose, debug
    quiet_logging(verbose)
