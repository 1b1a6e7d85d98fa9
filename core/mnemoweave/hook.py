"""Running one host hook: payload on stdin -> the daemon -> the host's JSON on stdout.

Standard library only: a hook is a short-lived process on the host's hot path. It fails
open: on any error, timeout or bad payload it prints nothing, logs one line to
`$MNEMOWEAVE_HOME/logs/hooks.log` and exits 0 (never 2, which would block the host). When
no daemon answers it starts one, never waiting for its warm-up (a daemon takes hooks while
it warms up), and a session's start is answered from the store (cold_start.py). A payload
the daemon did not take is spooled under `spool/` and stored when the daemon starts, so no
turn is lost. The Claude Code plugin's hooks (run with MNEMOWEAVE_HOOK_VIA=plugin) stand
aside where a settings install of ours is active, so that a prompt gets one memory block
(the daemon checks for that install).

A prompt waits for the hook's whole process, so the common case imports next to nothing:
with a daemon running, the payload goes to it as it was read and its answer comes back as
it was sent, with no JSON parsed on this side. Everything else (no daemon yet, a payload
the daemon refused, spooling) takes the general path, which reads the payload first.
"""

from __future__ import annotations

import os
import sys
import time

from mnemoweave.hosts import client
from mnemoweave.store.private import restrict
from mnemoweave.store.spooled import RESERVE, RESERVE_BYTES, SPOOL

# Seconds each event may spend end to end. The prompt path is the one the user waits on,
# and the only one that tries again while a daemon it woke binds its socket (at most its
# budget): every other event finding no daemon wakes one and is spooled at once (a session's
# start is answered from the store meanwhile: cold_start.py). A daemon that is warming up
# takes every event at once (daemon/warming.py).
HOSTS = ("claude-code", "opencode", "codex", "gemini")  # whose hooks `mnemoweave hook` runs
PROMPTS = ("UserPromptSubmit", "BeforeAgent")  # their events a prompt waits on
OPENING = ("SessionStart", "session.created")  # their events that open a session
BUDGETS = {**dict.fromkeys(PROMPTS, 0.25), "SessionEnd": 1.0, "PreCompact": 5.0}
DEFAULT_BUDGET = 2.0
AGAIN_TIME = 0.05  # seconds a prompt keeps to ask a daemon again that just became warm
AGAIN_PAUSE = 0.005  # seconds between asking a daemon that is becoming warm
MAX_PAYLOAD = 16 * 1024 * 1024  # bytes read from stdin; a longer payload is cut (and logged)

TYPE_CHECKING = False  # typing and pathlib cost imports on the hook's path: paths are strings
if TYPE_CHECKING:
    from os import PathLike
    from pathlib import Path
    from typing import IO, Any


def home() -> str:
    value = os.environ.get("MNEMOWEAVE_HOME")
    return os.path.expanduser(value or os.path.join("~", ".mnemoweave"))


def budget(event: str) -> float:
    """The event's budget in seconds; MNEMOWEAVE_HOOK_BUDGET_MS sets the prompt path's."""
    override = os.environ.get("MNEMOWEAVE_HOOK_BUDGET_MS", "")
    if event in PROMPTS and override.isdigit():
        return int(override) / 1000
    return BUDGETS.get(event, DEFAULT_BUDGET)


def log(where: str | PathLike[str], message: str) -> None:
    try:
        folder = os.path.join(where, "logs")
        os.makedirs(folder, exist_ok=True)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        with open(os.path.join(folder, "hooks.log"), "a", encoding="utf-8") as out:
            out.write(f"{stamp} {' '.join(message.split())[:500]}\n")
    except OSError:
        pass


# What a spooled tool call keeps: what the adapters read of it (its command or file, its
# stderr, whether it was interrupted), never the contents the tool read or wrote.
TOOL_KEPT = {"tool_input": ("command", "file_path"), "tool_response": ("stderr", "interrupted")}


def _kept(payload: Any) -> Any:
    if not isinstance(payload, dict):
        return payload
    kept = dict(payload)
    for field, names in TOOL_KEPT.items():
        if field in payload:
            given = payload[field]
            kept[field] = (
                {k: given[k] for k in names if k in given} if isinstance(given, dict) else None
            )
    return kept


def spool(where: str | PathLike[str], host: str, event: str, payload: Any) -> Path:
    """Keep a payload the daemon did not take (0600), for the daemon to replay: of a tool
    call only what is kept of it (TOOL_KEPT), every string cleaned as stored text is
    (secrets redacted, private spans dropped). On a full disk the spool's reserve is given
    up for it (and the log says so); a write that fails leaves no partial file."""
    import errno
    from pathlib import Path

    with_site()  # cleaning may read the secret detectors' package
    from mnemoweave.text import clean_all

    folder = Path(where) / SPOOL
    folder.mkdir(parents=True, exist_ok=True)
    record = {"host": host, "event": event, "payload": clean_all(_kept(payload))}
    try:
        return _spooled(folder, record)
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT) or not _give_up_reserve(folder):
            raise
    log(where, "the disk is full: the spool's reserve was freed to keep a payload; free space")
    return _spooled(folder, record)


def _spooled(folder: Path, record: dict[str, Any]) -> Path:
    import json

    name = f"{time.time_ns()}-{os.getpid()}.json"
    partial = folder / f".{name}"
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(record, out, ensure_ascii=False)
        os.replace(partial, folder / name)  # whole files only
    except OSError:
        partial.unlink(missing_ok=True)
        raise
    return folder / name


def _give_up_reserve(folder: Path) -> bool:
    try:
        os.unlink(folder / RESERVE)
    except FileNotFoundError:
        return False
    return True


def keep_reserve(where: str | PathLike[str]) -> bool:
    """Make the spool's reserve (RESERVE_BYTES written, not a sparse file) when it is
    missing; whether it is there. The daemon does it when it starts and after a replay."""
    from pathlib import Path

    folder = Path(where) / SPOOL
    reserve = folder / RESERVE
    try:
        if reserve.stat().st_size >= RESERVE_BYTES:
            return True
    except FileNotFoundError:
        pass
    partial = folder / f"{RESERVE}.partial"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(partial, "wb") as out:
            out.write(bytes(RESERVE_BYTES))
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, reserve)
    except OSError:
        partial.unlink(missing_ok=True)
        return False
    return True


HOOK_ROUTE = "/v1/hooks/{host}/{event}"
OUTPUT = b'{"output": '  # how the daemon's answer to a hook begins (server.py: json.dumps)


def _via() -> str | None:
    """Who runs the hook when it is not a settings install: "plugin" (see the module doc)."""
    return os.environ.get("MNEMOWEAVE_HOOK_VIA") or None


def _ask(where: str, host: str, event: str, raw: bytes, deadline: float) -> str | None:
    """The host's output from a running daemon, the payload sent as it was read ("" when
    the event has none). None when the general path must take over: no daemon answered
    (it starts one, or spools), or the daemon refused the payload (the general path reads
    it, repairs what it can and says why). A daemon that failed raises DaemonError."""
    via, head = _via(), b"{"
    if via:
        head += b'"via": "%s", ' % via.encode()
    wait = b""
    if event in PROMPTS:  # a daemon warming up may hold it: the time to ask again is kept
        wait = b'"wait": %.3f, ' % max(0.0, deadline - time.monotonic() - AGAIN_TIME)
    while True:
        try:
            status, answer = client.send(
                where,
                "POST",
                HOOK_ROUTE.format(host=host, event=event),
                head + wait + b'"payload": ' + raw + b"}",
                deadline - time.monotonic(),
            )
        except client.DaemonError:
            return None
        if status != 503 or b'"again": true' not in answer:
            break
        # the daemon became warm (holding it, or just before): asked again, not held
        if deadline - time.monotonic() < AGAIN_PAUSE:
            return None
        wait = b""
        time.sleep(AGAIN_PAUSE)
    if status >= 500:
        raise client.DaemonError(f"the daemon answered HTTP {status}", status)
    if status != 200:
        return None
    if answer.startswith(OUTPUT) and answer.endswith(b"}"):
        output = answer[len(OUTPUT) : -1]
        return "" if output in (b"null", b"{}") else output.decode("utf-8")
    import json  # an answer of another shape: read it whole

    found = json.loads(answer).get("output")
    return json.dumps(found, ensure_ascii=False) if found else ""


def _deliver(where: str, host: str, event: str, payload: Any, deadline: float) -> Any:
    path, body = HOOK_ROUTE.format(host=host, event=event), {"payload": payload}
    if via := _via():
        body["via"] = via
    if deadline <= time.monotonic():
        raise client.DaemonError("no time left in the hook's budget")
    try:
        return client.request(where, "POST", path, body, timeout=deadline - time.monotonic())
    except client.DaemonError as exc:
        left = max(0.1, deadline - time.monotonic())  # a daemon there answers this at once
        if exc.status is not None or client.running(where, timeout=left):
            raise  # refused, or there but slow: retrying would only spend the budget
    started = client.ensure_daemon(where, 0.0)  # one is started if none runs: no waiting
    if not started and (event not in PROMPTS or deadline <= time.monotonic()):
        raise Cold("no daemon answered; one is starting")
    # the prompt tries again within its budget: a daemon that is binding takes it (one that
    # is warming up answers at once: daemon/warming.py)
    return client.request(where, "POST", path, body, timeout=deadline - time.monotonic())


class Cold(client.DaemonError):
    """No daemon answered in time: one was woken (or is starting) for the next hooks."""


UNREADABLE = object()  # what `_read` returns for a payload that is not JSON


def _read(where: str, host: str, event: str, raw: bytes) -> Any:
    """The payload as JSON (cut to MAX_PAYLOAD, its strings made encodable); UNREADABLE,
    logged, when it is not JSON."""
    import json

    if len(raw) > MAX_PAYLOAD:
        log(where, f"{host} {event}: payload over {MAX_PAYLOAD} bytes, cut")
        raw = raw[:MAX_PAYLOAD]
    try:
        return client.encodable(json.loads(raw.decode("utf-8", "replace")))
    except (ValueError, RecursionError) as exc:
        log(where, f"{host} {event}: unreadable payload: {type(exc).__name__}: {exc}")
        return UNREADABLE


def _general(where: str, host: str, event: str, raw: bytes, deadline: float) -> str:
    """The hook the long way: read the payload, reach a daemon (starting one if need be),
    or spool the payload. The host's output, or "" (what went wrong is logged)."""
    import json

    payload = _read(where, host, event, raw)
    if payload is UNREADABLE:
        return ""
    try:
        answer = _deliver(where, host, event, payload, deadline)
    except client.DaemonError as exc:
        opening = isinstance(exc, Cold) and event in OPENING
        cold = _cold_start(where, host, event, payload) if opening else ""
        _failed(where, host, event, payload, exc)
        return cold
    output = answer.get("output") if isinstance(answer, dict) else None
    return json.dumps(output, ensure_ascii=False) if output else ""


def _cold_start(where: str, host: str, event: str, payload: Any) -> str:
    """A session's start answered from the store while the daemon warms ("" when it cannot
    be: see cold_start.py; a failure is logged)."""
    try:
        with_site()
        from mnemoweave.hosts.cold_start import answer

        return answer(where, host, event, payload, _via())
    except Exception as exc:
        log(where, f"{host} {event}: no answer from the store: {type(exc).__name__}: {exc}")
        return ""


def _failed(where: str, host: str, event: str, payload: Any, exc: client.DaemonError) -> None:
    """A refusal is logged; a payload no daemon took is spooled."""
    if exc.status is not None and exc.status < 500:
        log(where, f"{host} {event}: refused: {exc}")
        return
    try:
        spooled = spool(where, host, event, payload)
        log(where, f"{host} {event}: {exc}; spooled to {spooled.name}")
    except OSError as error:
        log(where, f"{host} {event}: {exc}; could not spool: {error}")


def run(host: str, event: str, stdin: IO[bytes], stdout: IO[str]) -> int:
    """One hook invocation; always returns 0."""
    deadline = time.monotonic() + budget(event)
    where = home()
    try:
        raw = stdin.read(MAX_PAYLOAD + 1)
        output = _ask(where, host, event, raw, deadline) if len(raw) <= MAX_PAYLOAD else None
        if output is None:
            output = _general(where, host, event, raw, deadline)
    except client.DaemonError as exc:  # the daemon failed on it: the payload is spooled
        if (payload := _read(where, host, event, raw)) is not UNREADABLE:
            _failed(where, host, event, payload, exc)
        return 0
    except Exception as exc:  # fail open, whatever happened
        log(where, f"{host} {event}: {type(exc).__name__}: {exc}")
        return 0
    if output:
        stdout.write(output)
        stdout.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    """`mnemoweave hook HOST EVENT`, or ENTRY (what the hook scripts and settings run)."""
    restrict()  # the log and the spool are the user's alone
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        log(home(), f"hook called with {args!r}; expected HOST EVENT")
        return 0
    return run(args[0], args[1], sys.stdin.buffer, sys.stdout)


def cli(argv: list[str] | None = None) -> None:
    """The hook process (`argv`: HOST EVENT, default the command line's): run, then exit
    without the interpreter's teardown (the answer is out and every file is closed)."""
    code = main(argv)
    sys.stdout.flush()
    os._exit(code)


# What hosts run: `python -S -c ENTRY PACKAGE_DIR HOST EVENT`. Without site (whose .pth
# files cost a prompt more than this module's imports do) the directory that holds the
# package is passed on; the hook adds the site directories when it needs more than the
# standard library (`with_site`). Not `-m`: runpy's machinery costs a prompt too.
ENTRY = "import sys; sys.path.append(sys.argv.pop(1)); from mnemoweave.hook import cli; cli()"


def package_dir() -> str:
    """The directory that holds this package (what ENTRY is given)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# Where the program is, for the Claude Code plugin's launcher (plugins/claude-code/scripts/
# mnemoweave), which reads the data dir's `program` file when no program is on PATH or the one
# on PATH is the one recorded (then it runs ENTRY with them): this Python, the directory that
# holds the package, and the `mnemoweave` executable that ran (empty under `python -m`).
# `mnemoweave install` writes it (setup.sh runs that) and so does each `mnemoweave hook` (the
# launcher runs one when it finds a program on PATH other than the one recorded).
PROGRAM = "program"
PROGRAM_MISSING = "program-missing"  # the launcher found no program and said so (once)


def record_program(where: str) -> bool:
    """Record this program in the data dir `where`; whether the record changed."""
    argv0 = sys.argv[0] if sys.argv else ""
    program = os.path.abspath(argv0) if os.path.basename(argv0) == "mnemoweave" else ""
    lines = (sys.executable, package_dir(), program)
    if any("\n" in line or "\r" in line for line in lines):
        return False  # the launcher reads lines
    text, path = "\n".join(lines) + "\n", os.path.join(where, PROGRAM)
    try:
        with open(path, encoding="utf-8") as kept:
            if kept.read() == text:
                return False
    except (OSError, ValueError):
        pass
    os.makedirs(where, mode=0o700, exist_ok=True)
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(temporary, path)
    missing = os.path.join(where, PROGRAM_MISSING)
    if os.path.exists(missing):  # to be said again if the program goes missing
        os.unlink(missing)
    return True


def with_site() -> None:
    """The site directories on the path, for a hook started without them (python -S)."""
    if sys.flags.no_site and "site" not in sys.modules:
        import site

        site.main()


if __name__ == "__main__":
    cli()
