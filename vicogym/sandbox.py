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
Linux and macOS (``resource``); the limits are not available elsewhere.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

#: modules a verifier may import: text processing only
ALLOWED_MODULES = ("re", "json", "math", "string", "collections", "itertools", "functools", "unicodedata",
                   "statistics", "fractions", "decimal")

_CHILD = r'''
import builtins, json, resource, sys

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
try:
    exec(request["code"], namespace)
    value = namespace[request["entry"]](*request["args"], **request["kwargs"])
    json.dumps(value)
    out.write(json.dumps({"ok": True, "value": value}) + "\n")
except BaseException as exc:
    out.write(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}) + "\n")
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
    if not isinstance(code, str) or not isinstance(entry, str) or not entry.isidentifier():
        raise TypeError("expected code as a string and entry as a function name")
    request = {"code": code, "entry": entry, "args": list(args), "kwargs": dict(kwargs or {}),
               "cpu_seconds": int(cpu_seconds), "memory_mb": int(memory_mb), "allowed": list(allowed)}
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
