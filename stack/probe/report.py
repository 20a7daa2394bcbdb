"""How the probe asks one tool: its report, its transcript, its first error.

Every call of a tool goes through call(): a tool that hangs is killed at its
limit, one that cannot start is recorded as such, and what it printed is kept
for the raw-output artifact, so anyone can check what was parsed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stack.parsers import ParseError
from stack.tools import ToolError, ToolRun, ToolTimeout, run_tool


@dataclass
class ToolReport:
    """What one tool told the probe, and how asking it went."""

    name: str
    present: bool = False
    path: str | None = None
    version: str | None = None
    error: str | None = None
    gpus: list[dict[str, Any]] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    libraries: dict[str, str] = field(default_factory=dict)
    transcript: list[str] = field(default_factory=list)

    def fail(self, message: str) -> None:
        """Keep the first error: later ones are usually its consequences."""
        if self.error is None:
            self.error = message

    def status(self) -> dict[str, Any]:
        """The environment's ``tools`` entry."""
        return {
            "present": self.present,
            "path": self.path,
            "version": self.version,
            "error": self.error,
        }


def _exit_text(run: ToolRun) -> str:
    if run.returncode < 0:
        import signal

        try:
            name = signal.Signals(-run.returncode).name
        except ValueError:
            name = f"signal {-run.returncode}"
        reason = f"killed by {name}"
    else:
        reason = f"exit status {run.returncode}"
    line = run.first_line()
    return f"{reason}: {line}" if line else reason


def call(
    report: ToolReport,
    argv: list[str],
    timeout: float,
    *,
    shown: str | None = None,
    cwd: str | None = None,
) -> ToolRun | None:
    """Run one command of a tool, keeping its transcript; None if it could not finish."""
    display = shown or " ".join(argv)
    try:
        run = run_tool(argv, timeout, cwd=cwd, extra_dirs=())
    except ToolTimeout as exc:
        report.transcript.append(
            f"$ {display}\n# timed out after {timeout:g} s and was killed\n"
            f"# --- stdout ---\n{exc.stdout}\n# --- stderr ---\n{exc.stderr}\n"
        )
        report.fail(f"timed out after {timeout:g} s ({display})")
        return None
    except (ToolError, OSError) as exc:
        report.transcript.append(f"$ {display}\n# could not run: {exc}\n")
        report.fail(f"could not run {display}: {exc}")
        return None
    transcript = run.transcript()
    if shown:
        transcript = transcript.replace(" ".join(run.argv), shown, 1)
    report.transcript.append(transcript)
    return run


def ok(report: ToolReport, run: ToolRun | None) -> ToolRun | None:
    """The run if it exited 0; else None, with the exit status kept as the report's error."""
    if run is not None and not run.ok:
        report.fail(_exit_text(run))
        return None
    return run


def parse(report: ToolReport, parser: Callable[[str], Any], text: str) -> Any:
    try:
        return parser(text)
    except (ParseError, ValueError, KeyError, TypeError, AttributeError) as exc:
        report.fail(f"could not parse its output: {exc}")
        return None
