"""Running code that a model wrote (a proposed constraint verifier) without trusting it.

The code never runs in this process and is never ``eval``'d here: :func:`run_untrusted`
starts a fresh, isolated Python (``-I``) that, before it reads the code,

- caps its CPU time, address space, file sizes and open files (``resource`` limits);
- installs an audit hook (which cannot be removed) that refuses sockets, subprocesses,
  ``exec*``/``fork``/``system``, ``ctypes``, files opened for writing, and file removal;
- gives the code builtins without ``open``, ``eval``, ``exec``, ``compile``, ``input`` or
  ``breakpoint``, and an ``__import__`` that admits only the allow-listed modules.

The parent kills the child at the wall-clock time-out. The child's only output is one
JSON line: the entry function's return value for the given arguments, or the error.
:func:`run_untrusted_batch` runs many calls of one entry function in one child (a child
costs 0.1-0.3 s to start): each call has its own time limit, error and size cap, and a
call that runs out of time ends the batch. The driver that runs in the child is this
module's; the model's code only ever travels to it as data. Whatever the code prints is
discarded, so it cannot garble the answer line. Linux and macOS (``resource``); the
limits are not available elsewhere.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Sequence

#: modules a verifier may import: text processing only
ALLOWED_MODULES = ("re", "json", "math", "string", "collections", "itertools", "functools", "unicodedata",
                   "statistics", "fractions", "decimal")

_CHILD = r'''
import builtins, json, resource, signal, sys

request = json.loads(sys.stdin.readline())
cpu, memory = request["cpu_seconds"], request["memory_mb"] * 1024 * 1024
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
allowed = set(request["allowed"])
for name in allowed:
    __import__(name)
out = sys.stdout

WRITE_FLAGS = 0o1 | 0o2 | 0o100 | 0o1000 | 0o2000  # O_WRONLY O_RDWR O_CREAT O_TRUNC O_APPEND
REFUSED = ("socket.", "subprocess.", "os.system", "os.exec", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn",
           "os.kill", "os.remove", "os.unlink", "os.rmdir", "os.rename", "os.chmod", "os.mkdir", "shutil.",
           "ctypes.", "pty.", "sys.setrecursionlimit", "urllib.", "http.", "ftplib.", "smtplib.", "webbrowser.")

def hook(event, args):
    if event.startswith(REFUSED):
        raise PermissionError(f"the sandbox refuses {event}")
    if event == "open":
        mode, flags = args[1], args[2]
        if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (isinstance(flags, int) and flags & WRITE_FLAGS):
            raise PermissionError("the sandbox refuses to open files for writing")
    if event == "import" and args[0].split(".")[0] not in allowed and args[0] not in sys.modules:
        raise ImportError(f"the sandbox allows only {sorted(allowed)}, not {args[0]}")

sys.addaudithook(hook)

real_import = builtins.__import__

def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
    if level or name.split(".")[0] not in allowed:
        raise ImportError(f"the sandbox allows only {sorted(allowed)}, not {name}")
    return real_import(name, globals, locals, fromlist, level)

safe = {k: v for k, v in vars(builtins).items()
        if k not in ("open", "eval", "exec", "compile", "input", "breakpoint", "__import__", "exit", "quit", "help")}
safe["__import__"] = guarded_import
namespace = {"__builtins__": safe, "__name__": "verifier"}


class Sink:  # the code's prints go nowhere: the answer line stays the driver's
    def write(self, text):
        return len(text)

    def flush(self):
        pass


class CallTimeout(BaseException):  # BaseException: a verifier's `except Exception` does not swallow it
    pass


def on_alarm(signum, frame):
    raise CallTimeout()


def call(fn, args, kwargs, limit):
    value = fn(*args, **kwargs)
    size = len(json.dumps(value))
    if limit and size > limit:
        raise ValueError(f"the value is {size} characters of JSON, more than the {limit} allowed")
    return value


def error(exc):
    return f"{type(exc).__name__}: {exc}"[:500]


sys.stdout = sys.stderr = Sink()
try:
    exec(request["code"], namespace)
    fn = namespace[request["entry"]]
    if "calls" not in request:
        answer = {"ok": True, "value": call(fn, request["args"], request["kwargs"], 0)}
    else:
        signal.signal(signal.SIGALRM, on_alarm)
        seconds, limit, results = request["call_seconds"], request["max_value_chars"], []
        for args, kwargs in request["calls"]:
            signal.setitimer(signal.ITIMER_REAL, seconds)
            try:
                results.append({"ok": True, "value": call(fn, args, kwargs, limit)})
            except CallTimeout:
                results.append({"ok": False, "error": f"timeout: no answer within {seconds:g} s"})
                break  # a verifier that hung once is not run again: the rest would hang too
            except BaseException as exc:
                results.append({"ok": False, "error": error(exc)})
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        answer = {"ok": True, "value": results}
except BaseException as exc:
    answer = {"ok": False, "error": error(exc)}
out.write(json.dumps(answer) + "\n")
out.flush()
'''


@dataclass(frozen=True)
class SandboxResult:
    """What the code returned (``ok``) or why it did not (``error``)."""

    ok: bool
    value: Any = None
    error: str = ""


def run_untrusted(code: str, entry: str, args: list[Any] | tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None, *,
                  timeout: float = 5.0, cpu_seconds: int = 2, memory_mb: int = 256,
                  allowed: tuple[str, ...] = ALLOWED_MODULES) -> SandboxResult:
    """``entry(*args, **kwargs)`` of ``code`` in a sandboxed child process (see the module);
    arguments and the return value travel as JSON."""
    _check(code, entry)
    return _spawn({"code": code, "entry": entry, "args": list(args), "kwargs": dict(kwargs or {}),
                   "cpu_seconds": int(cpu_seconds), "memory_mb": int(memory_mb), "allowed": list(allowed)}, timeout)


def run_untrusted_batch(code: str, entry: str, calls: Sequence[tuple[Sequence[Any], dict[str, Any]]], *,
                        call_seconds: float = 1.0, timeout: float | None = None, cpu_seconds: int | None = None,
                        memory_mb: int = 256, max_value_chars: int = 20_000,
                        allowed: tuple[str, ...] = ALLOWED_MODULES) -> SandboxResult:
    """``entry(*args, **kwargs)`` of ``code`` for each ``(args, kwargs)`` of ``calls``, all in
    one sandboxed child. ``value`` is one :class:`SandboxResult` per call, in order: a call
    that raised, returned no JSON, returned more than ``max_value_chars`` characters of JSON
    or ran past ``call_seconds`` is ``ok=False`` with the reason; a time-out ends the batch
    and the calls after it read "not run". The whole batch fails (``ok=False``) when the
    code does not load, or the child is killed (its wall ``timeout``, default ``2 s + the
    calls' seconds``; its CPU time, default the calls' seconds + 1; memory)."""
    _check(code, entry)
    calls = [(list(args), dict(kwargs)) for args, kwargs in calls]
    if not isinstance(call_seconds, (int, float)) or not call_seconds > 0:
        raise ValueError(f"expected call_seconds as positive seconds, got {call_seconds!r}")
    budget = call_seconds * max(len(calls), 1)
    timeout = 2.0 + budget if timeout is None else timeout
    cpu_seconds = math.ceil(budget) + 1 if cpu_seconds is None else cpu_seconds
    request = {"code": code, "entry": entry, "calls": calls, "call_seconds": float(call_seconds),
               "max_value_chars": int(max_value_chars), "cpu_seconds": int(cpu_seconds), "memory_mb": int(memory_mb),
               "allowed": list(allowed)}
    result = _spawn(request, timeout)
    if not result.ok:
        return result
    done = [SandboxResult(True, r["value"]) if r["ok"] else SandboxResult(False, error=r["error"]) for r in result.value]
    skipped = SandboxResult(False, error="not run: an earlier call ran out of time")
    return SandboxResult(True, done + [skipped] * (len(calls) - len(done)))


def _check(code: str, entry: str) -> None:
    if not isinstance(code, str) or not isinstance(entry, str) or not entry.isidentifier():
        raise TypeError("expected code as a string and entry as a function name")


def _spawn(request: dict[str, Any], timeout: float) -> SandboxResult:
    """The child's answer to ``request`` (its JSON line), or why there is none."""
    try:
        done = subprocess.run([sys.executable, "-I", "-c", _CHILD], input=json.dumps(request) + "\n",
                              capture_output=True, text=True, timeout=timeout, env={})
    except subprocess.TimeoutExpired:
        return SandboxResult(False, error=f"timeout: no answer within {timeout:g} s")
    line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    try:
        answer = json.loads(line)
    except ValueError:
        if done.returncode < 0:
            import signal

            name = signal.Signals(-done.returncode).name
            reason = {"SIGXCPU": "CPU time limit", "SIGKILL": "CPU time or memory limit",
                      "SIGXFSZ": "file size limit"}.get(name, name)
            return SandboxResult(False, error=f"killed: {reason} ({name})")
        return SandboxResult(False, error=f"the sandbox ended without an answer (exit {done.returncode}): "
                             f"{done.stderr.strip()[-300:]}")
    return SandboxResult(True, answer["value"]) if answer.get("ok") else SandboxResult(False, error=answer["error"])
