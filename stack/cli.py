"""``python -m stack``: the one entry point a job container (or local process) runs.

    python -m stack run KIND [--params FILE] --out DIR [--work DIR]
    python -m stack kinds
    python -m stack diff BASELINE.json CURRENT.json [--profiler NAME]
    python -m stack shapes FILE [--backend NAME]

Arguments are parsed by hand rather than with argparse: this runs once per
job and the orchestrator wants many jobs a second, so start-up cost matters.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from stack.causes import FULL_ERRNOS, cause_of, largest_file
from stack.contract import (
    ERRORED,
    EXIT_ERRORED,
    EXIT_OK,
    EXIT_USAGE,
    RESULT_FILENAME,
    RUNNER_SAID_PREFIX,
    SUCCEEDED,
    exit_code_for,
)
from stack.events import Emitter
from stack.kinds import Kind, UnknownKind, apply_defaults, get_kind, kinds_as_json
from stack.runtime import (
    RunContext,
    RunResult,
    build_result,
    cache_dir_from_environment,
    utc_now_iso,
    write_result,
)

USAGE = """\
usage: python -m stack run KIND [--params FILE] --out DIR [--work DIR]
       python -m stack kinds
       python -m stack diff BASELINE.json CURRENT.json [--profiler NAME]
       python -m stack shapes FILE [--backend NAME]

run    run one job of KIND; events on stdout, OUT/result.json at the end
       --params FILE  JSON object of parameters (default: {}; defaults filled in)
       --out DIR      where result.json and artifacts go (created if missing)
       --work DIR     the job's inputs, read-only (default: the folder of --params)
kinds  list the registered kinds as JSON
diff   two profile results (result.json of profile jobs) kernel by kernel, as JSON
       (docs/profiling.md); --profiler picks one both ran (default: torch, ncu, rocprofv3)
shapes the GEMM shapes in FILE (a profile's result.json or trace.json, a ROCBLAS_LAYER=2 or
       HIPBLASLT_LOG_MASK=32 log, a TunableOp file) and the blas-bench params replaying
       them, as JSON; --backend torch (default), rocblas-bench or hipblaslt-bench

exit status: 0 succeeded, 1 failed, 2 usage error (no result.json), 3 errored
"""


class UsageError(Exception):
    """Bad command line, unknown kind or unreadable params: exit 2, no result.json."""


class Terminated(BaseException):
    """SIGTERM arrived while the runner ran (canceled or timed out by the worker).

    A BaseException, like KeyboardInterrupt, so that a runner's broad
    ``except Exception`` cannot swallow the cancellation.
    """


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        if not args:
            raise UsageError("no command given")
        command, rest = args[0], args[1:]
        if command in ("-h", "--help", "help"):
            sys.stdout.write(USAGE)
            return EXIT_OK
        if command == "kinds":
            sys.stdout.write(json.dumps(kinds_as_json(), indent=2) + "\n")
            return EXIT_OK
        if command == "run":
            options = _parse_run_args(rest)
            kind = _get_kind(options["kind"])
            params_path = Path(options["params"]) if options["params"] else None
            params = load_params(params_path)
            out = _prepare_out(Path(options["out"]))
            if options["work"]:
                work = Path(options["work"])
            elif params_path is not None:
                work = params_path.resolve().parent
            else:
                work = Path.cwd()
            return run_with_private_stdout(kind, params, out, work)
        if command in ("diff", "shapes"):
            return _analyse(command, rest)
        raise UsageError(f"unknown command {command!r}")
    except UsageError as exc:
        sys.stderr.write(f"stack: error: {exc}\n\n{USAGE}")
        return EXIT_USAGE
    except Exception:
        # A bug outside the runner must not exit 1, which would read as "failed".
        import traceback

        traceback.print_exc()
        return EXIT_ERRORED


def _analyse(command: str, args: list[str]) -> int:
    """``diff`` and ``shapes``: read files, print JSON; a file that is not what they read
    is a usage error (exit 2) naming the file."""
    options: dict[str, str] = {}
    files: list[str] = []
    allowed = {"diff": ("profiler",), "shapes": ("backend",)}[command]
    i = 0
    while i < len(args):
        if args[i].startswith("--"):
            name = args[i][2:]
            if name not in allowed or i + 1 >= len(args):
                raise UsageError(f"{command}: unknown option or no value: {args[i]}")
            options[name] = args[i + 1]
            i += 2
        else:
            files.append(args[i])
            i += 1
    wanted = 2 if command == "diff" else 1
    if len(files) != wanted:
        raise UsageError(f"{command} needs {wanted} file(s)")
    texts = []
    for name in files:
        try:
            texts.append(Path(name).read_text(encoding="utf-8"))
        except OSError as exc:
            raise UsageError(f"{command}: cannot read {name}: {exc}") from None
    if command == "diff":
        from stack.profile.diff import DiffError, diff_profiles

        try:
            documents = [json.loads(t) for t in texts]
            found = diff_profiles(*documents, profiler=options.get("profiler")).as_dict()
        except (ValueError, DiffError) as exc:
            raise UsageError(f"diff: {exc}") from None
    else:
        from stack.tune.shapes import ShapesError, count_shapes, replay_params, shapes_gemms

        try:
            gemms = shapes_gemms(texts[0])
        except ShapesError as exc:
            raise UsageError(f"shapes: {files[0]}: {exc}") from None
        plan = replay_params(gemms, backend=options.get("backend", "torch"))
        found = {"shapes": count_shapes(gemms), "replay": plan.as_dict()}
    sys.stdout.write(json.dumps(found, indent=1) + "\n")
    return EXIT_OK


def _parse_run_args(args: list[str]) -> dict[str, Any]:
    options: dict[str, Any] = {"params": None, "out": None, "work": None}
    positional: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("--"):
            name, has_value, value = arg[2:].partition("=")
            if name not in options:
                raise UsageError(f"unknown option --{name}")
            if not has_value:
                i += 1
                if i >= len(args):
                    raise UsageError(f"--{name} needs a value")
                value = args[i]
            options[name] = value
        else:
            positional.append(arg)
        i += 1
    if len(positional) != 1:
        raise UsageError("run needs exactly one KIND")
    if not options["out"]:
        raise UsageError("run needs --out DIR")
    options["kind"] = positional[0]
    return options


def _get_kind(name: str) -> Kind:
    try:
        return get_kind(name)
    except UnknownKind as exc:
        raise UsageError(str(exc)) from None


def load_params(path: Path | None) -> dict[str, Any]:
    """Read the params file; UsageError if it is unreadable or not a JSON object."""
    if path is None:
        return {}
    try:
        params = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read params {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise UsageError(f"params {path} is not valid JSON: {exc}") from None
    if not isinstance(params, dict):
        raise UsageError(f"params {path} must hold a JSON object")
    return params


def _prepare_out(out: Path) -> Path:
    try:
        out.mkdir(parents=True, exist_ok=True)
        # A stale result from an earlier attempt must not pass for this one's
        # if this run dies before writing its own.
        (out / RESULT_FILENAME).unlink(missing_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot use --out {out}: {exc.strerror or exc}") from None
    return out


def run_with_private_stdout(kind: Kind, params: dict[str, Any], out: Path, work: Path) -> int:
    """Run a job with the event stream on a private copy of stdout.

    fd 1 is pointed at stderr (and sys.stdout at sys.stderr) while the runner
    runs, so a stray print(), a C library's printf or a tool started without
    capture lands in the log, never in the event stream. The copy of the real
    stdout is not inherited by child processes.
    """
    if sys.stdout is not None:
        sys.stdout.flush()
    try:
        event_fd = os.dup(1)
    except OSError:  # started with fd 1 closed: nobody listens, events go nowhere
        placeholder = os.open(os.devnull, os.O_WRONLY)  # takes the free fd 1
        event_fd = os.dup(placeholder) if placeholder == 1 else placeholder
    saved_stdout = sys.stdout
    try:
        os.dup2(2, 1)
    except OSError:  # started with fd 2 closed too: stray output goes nowhere
        sink = os.open(os.devnull, os.O_WRONLY)
        os.dup2(sink, 1)
        os.close(sink)
    sys.stdout = sys.stderr if sys.stderr is not None else open(os.devnull, "w")  # noqa: SIM115
    stream = os.fdopen(event_fd, "w", encoding="utf-8", buffering=1)
    emitter = Emitter(stream)
    try:
        return execute(kind, params, out, work, emitter)
    finally:
        emitter.close()
        if sys.stderr is not None:
            sys.stderr.flush()
        os.dup2(event_fd, 1)
        sys.stdout = saved_stdout
        stream.close()


def _on_sigterm(signum: int, frame: object) -> None:
    # A second SIGTERM (the worker insisting) kills at once.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise Terminated("received SIGTERM")


def _unwritten_result(out: Path, exc: OSError) -> str:
    """Why result.json could not be written, the cause first. A full out folder is the
    job's own doing: the file that filled it is named, not result.json."""
    if exc.errno in FULL_ERRNOS:
        found = largest_file(out)
        filled = f"; its largest file is out/{found[0]} ({found[1]} bytes)" if found else ""
        return (
            f"{exc.strerror}: the out folder {out} is full{filled}, "
            f"so {RESULT_FILENAME} could not be written"
        )
    return f"{cause_of(exc)}: {RESULT_FILENAME} could not be written to {out}"


def _errored(kind: str, started_at: str, error: str) -> dict[str, Any]:
    return build_result(kind, RunResult(status=ERRORED, error=error), started_at, utc_now_iso())


def _apply_tuned_file(work: Path, emit: Emitter) -> dict[str, Any] | None:
    """A registered tuned GEMM file in the job's inputs, applied only if it fits this stack
    (stack.tune.apply); the job's log says which."""
    from stack.tune import registry

    if not (work / registry.INPUT_FOLDER).is_dir():
        return None
    from stack.tune.apply import apply_from_work

    report = apply_from_work(work)
    if report is not None:
        if report["applied"]:
            emit.log("TunableOp: running with the registered tuned file (validators match)")
        else:
            emit.log(
                "TunableOp: the registered tuned file is NOT applied: "
                + "; ".join(report["reasons"]),
                level="warning",
            )
    return report


def execute(kind: Kind, params: dict[str, Any], out: Path, work: Path, emit: Emitter) -> int:
    """Run one job in this process and write OUT/result.json; return the exit status.

    Whatever the runner does (returns, raises, is sent SIGTERM), a result is
    written: an exception becomes status "errored" with "Type: message" as
    the error (an OSError its cause and path: "No space left on device: /tmp/x") and the
    traceback as an error event.
    """
    params = apply_defaults(kind.params_schema, params)
    started_at = utc_now_iso()
    ctx = RunContext(out=out, emit=emit, work=work, cache_dir=cache_dir_from_environment())
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (an in-process caller): no handler
        previous = None
    saved_env = dict(os.environ)
    try:
        tuned = _apply_tuned_file(work, emit)
        result = kind.load_runner()(params, ctx)
        if not isinstance(result, RunResult):
            raise TypeError(f"runner returned {type(result).__name__}, not RunResult")
        if tuned is not None:
            result.summary.setdefault("tuned_file_used", tuned)
        document = build_result(kind.name, result, started_at, utc_now_iso(), out)
    except Terminated as exc:
        # The worker stopping the run (a cancel, a timeout) is expected, not a bug: one
        # info line, no traceback, which would read as a crash in the job's log.
        emit.log(f"canceled: {exc} (the worker stopped the run)")
        document = _errored(kind.name, started_at, f"{type(exc).__name__}: {exc}")
    except BaseException as exc:  # the job must end with a result, whatever happened
        import traceback

        emit.log(traceback.format_exc().rstrip(), level="error")
        document = _errored(kind.name, started_at, cause_of(exc))
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if os.environ != saved_env:  # an in-process caller gets its environment back
            os.environ.clear()
            os.environ.update(saved_env)

    try:
        write_result(out, document)
    except ValueError as exc:  # NaN or infinity in what the runner returned
        emit.log(f"result not serialisable: {exc}", level="error")
        document = _errored(kind.name, started_at, f"result not serialisable: {exc}")
        write_result(out, document)
    except OSError as exc:
        sys.stderr.write(f"{RUNNER_SAID_PREFIX}{_unwritten_result(out, exc)}\n")
        return EXIT_ERRORED
    if document["status"] == SUCCEEDED and emit.last_pct < 100:
        emit.progress(100, "done")
    return exit_code_for(document["status"])
