"""Running code that a model wrote (a proposed constraint verifier) behind the operating
system's walls.

In-process Python restrictions are not a sandbox (CPython's audit hooks say so of
themselves, PEP 578): code that can reach a frame, a builtin's ``__self__`` or
``object.__subclasses__()`` can reach everything the interpreter can. So the wall here is
the kernel's. :func:`run_untrusted` and :func:`run_untrusted_batch` start the code in a
child made by bubblewrap (``bwrap``, Debian's ``bubblewrap``: small, unprivileged, the
sandbox Flatpak is built on; chosen over nsjail, which Debian does not package, and
firejail, a setuid program with a much larger attack surface), and that child has

- new user, PID, network, IPC, UTS and mount namespaces (``--unshare-all`` with
  ``--unshare-user`` required), an unprivileged uid (65534), no capabilities, a new session
  (no terminal to push input into), and it dies with the process that started it;
- a root file system of nothing but a read-only view of the interpreter, the shared
  libraries it loads, and the files of the modules it may import (the allow-listed ones,
  what they import, and the ``encodings`` package), found once per process by a probe
  and staged once per content as copies in a folder of the user's alone (the cache,
  ``~/.cache/vicogym/sandbox``, or where that cannot be written,
  ``vicogym-sandbox-<uid>`` in the system's temporary folder, refused when another user
  holds that name), so that a child costs a few mounts; a staged view is compared with
  the host's files, byte for byte, before a process first uses it, and staged anew when
  anything differs (so a view planted or changed by someone else is never mounted); a
  new hostname;
  a private, empty, 1 MiB ``/tmp``; no ``/proc``, no ``/dev``, no network device but its own
  loopback; an empty environment;
- a seccomp filter (compiled by libseccomp, through its Python bindings or ``pyseccomp``)
  from its first instruction that refuses process and thread creation (``fork``,
  ``vfork``, ``clone``, ``clone3``), signals (``kill``, ``tkill``, ``tgkill``, pidfds),
  ``ptrace`` and reading or writing another process' memory, sockets, files opened for
  writing, every call that changes the file system (links, renames, removals, modes,
  owners, times, extended attributes, ``truncate``, ``mknod``), mounts and namespaces,
  ``io_uring``, ``bpf``, ``perf_event_open``, ``userfaultfd``, keyrings and module loading,
  System V and POSIX IPC (memory outside the address-space limit), locks (``flock`` and
  ``fcntl``'s record locks, classic and open-file-description), leases and watches, and
  answers ENOSYS to every call added since Linux 5.1 that it does not name
  (so a new kernel's calls are refused until named); and a second filter the driver
  loads before it reads the code that refuses ``execve``, ``execveat``, ``prctl`` and
  ``seccomp`` (bwrap must still ``exec`` the interpreter once);
- resource limits on CPU time, address space, file size (0) and open files, set by the
  driver before it reads the code.

The parent kills the whole sandbox (bwrap, and with it the PID namespace) at the
wall-clock time-out, and measures each call's time itself: the code cannot switch the
clock off. Everything the child prints is the code's claim, never trusted: the parent
reads at most a fixed number of bytes per line, checks its depth in one linear pass,
parses it as strict JSON (no ``NaN`` or ``Infinity``, no number beyond a float's range
such as ``1e999``, no integer of more than :data:`MAX_INT_DIGITS` digits, no lone
surrogates), checks each line's shape, nonce and value size, and reports anything else
as the code's failure (``ok=False``, its error naming what was wrong:
:class:`NonFiniteNumber`, :class:`IntegerTooLong`, ...), never as an exception of its
own. The error texts it passes on (the code's exception messages, the child's standard
error) are at most :data:`MAX_ERROR` characters, with every character that is not
printable written as its Python escape (``\\x1b``, ``\\x00``, ``\\n``, ``\\u202e``), so
that no escape sequence reaches a terminal and each error is one line.

Inside the walls the old in-process restrictions stay as a second layer that names
problems early (an audit hook refusing sockets, subprocesses, writes and imports outside
the allow-list; builtins without ``open``, ``eval``, ``exec``; prints discarded); they are
not what keeps the code in.

**Fail closed.** Where the walls cannot be built (no ``bwrap``, no user namespaces, no
libseccomp) model-written code does not run at all: :class:`SandboxUnavailable` names what
to install; there is no weaker fallback. :func:`check_sandbox` tells in advance. Linux
only.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import secrets
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from vicogym.errors import VicogymError
from vicogym.validation import is_number

#: modules a verifier may import: text processing only (the standard library's)
ALLOWED_MODULES = ("re", "json", "math", "string", "collections", "itertools", "functools", "unicodedata",
                   "statistics", "fractions", "decimal")
#: the most characters of an error message the parent passes on from the child (escapes included)
MAX_ERROR = 500
#: the most digits of an integer the parent parses in a child's line (CPython's own limit
#: for decimal conversion, :func:`sys.get_int_max_str_digits`, by default)
MAX_INT_DIGITS = 4300
#: the deepest nesting of arrays and objects the parent parses in a child's line
MAX_DEPTH = 32
#: bytes of a child's line beyond the value itself (the envelope, an error message)
LINE_OVERHEAD = 4096
#: the sandboxed user (nobody)
UID = 65534
#: staged views kept in the cache (one per interpreter and allow-list in use)
KEPT_VIEWS = 8
INSTALL_HINT = ("install bubblewrap and libseccomp (Debian/Ubuntu: apt-get install bubblewrap libseccomp2; "
                "Fedora: dnf install bubblewrap libseccomp) and allow unprivileged user namespaces")


class SandboxUnavailable(VicogymError, RuntimeError):
    """The operating-system sandbox cannot start on this machine, so model-written code is
    not run at all; the message names what to install or allow."""


class NonFiniteNumber(ValueError):
    """A child's line held ``NaN``, ``Infinity`` or a number beyond a float's range (it
    would parse to ``inf``): no strict JSON value. Named in the call's error, never
    raised to the caller."""


class IntegerTooLong(ValueError):
    """A child's line held an integer of more than :data:`MAX_INT_DIGITS` digits. Named
    in the call's error, never raised to the caller."""


@dataclass(frozen=True)
class SandboxResult:
    """What the code returned (``ok``) or why it did not (``error``)."""

    ok: bool
    value: Any = None
    error: str = ""


# -- the driver: the first (and, until it reads the code, only) Python in the child -----------
_DRIVER = r'''# vicogym-sandbox-driver
import builtins, json, os, resource, sys

inp, out = sys.stdin.buffer, sys.stdout.buffer
request = json.loads(inp.readline())


def send(message):
    out.write(json.dumps(message).encode() + b"\n")
    out.flush()


def error(exc):
    return f"{type(exc).__name__}: {exc}"[:500].encode("utf-8", "replace").decode("utf-8")


cpu, memory = request["cpu_seconds"], request["memory_mb"] * 1024 * 1024
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))
if request["filter"]:  # the second seccomp filter: no exec, no prctl, no new filters
    import ctypes

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    code = bytes.fromhex(request["filter"])
    buffer = ctypes.create_string_buffer(code, len(code))
    program = Program(len(code) // 8, ctypes.addressof(buffer))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(program), 0, 0):  # NO_NEW_PRIVS, SET_SECCOMP
        send({"loaded": False, "n": request["nonce"],
              "error": f"sandbox: the second seccomp filter did not load (errno {ctypes.get_errno()})"})
        raise SystemExit(3)
    del Program, buffer, program, libc, code
    for name in [n for n in sys.modules if n.split(".")[0] in ("ctypes", "_ctypes")]:
        del sys.modules[name]

allowed = set(request["allowed"])
for name in allowed:
    __import__(name)

WRITE_FLAGS = 0o1 | 0o2 | 0o100 | 0o1000 | 0o2000  # O_WRONLY O_RDWR O_CREAT O_TRUNC O_APPEND
REFUSED = ("socket.", "subprocess.", "os.system", "os.exec", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn",
           "os.kill", "os.remove", "os.unlink", "os.rmdir", "os.rename", "os.chmod", "os.mkdir", "shutil.",
           "ctypes.", "pty.", "sys.setrecursionlimit", "urllib.", "http.", "ftplib.", "smtplib.", "webbrowser.")


def hook(event, args):  # the in-process layer: names problems early; the walls are the kernel's
    if event.startswith(REFUSED):
        raise PermissionError(f"the sandbox refuses {event}")
    if event == "open":
        mode, flags = args[1], args[2]
        writes = isinstance(mode, str) and any(c in mode for c in "wax+")
        if writes or (isinstance(flags, int) and flags & WRITE_FLAGS):
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


class Sink:  # the code's prints go nowhere
    def write(self, text):
        return len(text)

    def flush(self):
        pass


sys.stdout = sys.stderr = Sink()
limit = request["max_value_chars"]
try:
    exec(request["code"], namespace)
    fn = namespace[request["entry"]]
    if not callable(fn):
        raise TypeError(f"{request['entry']} is not a function")
except BaseException as exc:
    send({"loaded": False, "n": request["nonce"], "error": error(exc)})
    raise SystemExit(0)
send({"loaded": True, "n": request["nonce"]})
for line in inp:  # one call at a time: the next comes once this one is answered
    call = json.loads(line)
    try:
        value = fn(*call["args"], **call["kwargs"])
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")  # strict JSON, real text
        text = json.dumps(value)
        if len(text) > limit:
            raise ValueError(f"the value is {len(text)} characters of JSON, more than the {limit} allowed")
        out.write(b'{"n": "' + call["n"].encode() + b'", "ok": true, "value": ' + text.encode() + b"}\n")
        out.flush()
    except BaseException as exc:
        send({"n": call["n"], "ok": False, "error": error(exc)})
'''


# -- the walls ---------------------------------------------------------------------------------
#: refused with EPERM by the first filter (bwrap loads it before it runs the interpreter)
_REFUSED_CALLS = (
    # processes and threads
    "fork", "vfork", "clone",
    # signals to anyone (the child has no use for them), pidfds
    "kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open", "pidfd_send_signal", "pidfd_getfd",
    # other processes' memory
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "process_madvise",
    # sockets
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    # changes to the file system
    "creat", "unlink", "unlinkat", "rmdir", "rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat",
    "mkdir", "mkdirat", "mknod", "mknodat", "chmod", "fchmod", "fchmodat", "chown", "fchown", "lchown", "fchownat",
    "truncate", "ftruncate", "fallocate", "utime", "utimes", "utimensat", "futimesat", "setxattr", "lsetxattr",
    "fsetxattr", "removexattr", "lremovexattr", "fremovexattr", "memfd_create", "name_to_handle_at",
    "open_by_handle_at",
    # mounts and namespaces
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "move_mount", "open_tree", "fsopen", "fsmount",
    "fspick", "mount_setattr",
    # kernel surfaces a verifier never needs
    "io_uring_setup", "io_uring_enter", "io_uring_register", "bpf", "perf_event_open", "userfaultfd", "keyctl",
    "add_key", "request_key", "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
    "swapon", "swapoff", "acct", "quotactl", "syslog", "vhangup", "personality", "modify_ldt", "iopl", "ioperm",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "fanotify_init",
    "fanotify_mark", "lookup_dcookie", "uselib", "ustat", "sysfs", "sysinfo",
    # memory outside the address-space limit (System V, POSIX queues)
    "shmget", "shmat", "shmctl", "msgget", "msgsnd", "semget", "semop", "semtimedop", "mq_open", "mq_unlink",
    # locks and watches (the view's files are copies, shared by this user's children: no use to a verifier
    # either way); fcntl's record locks and leases are refused by their commands, below
    "flock", "inotify_init", "inotify_init1", "inotify_add_watch",
)
#: ``fcntl`` (and ``fcntl64``) commands refused, as the kernel numbers them on x86 and ARM
#: (asm-generic): record locks, classic and open-file-description, taken or asked about
#: (F_GETLK, F_SETLK, F_SETLKW, their 64-bit forms, F_OFD_GETLK, F_OFD_SETLK,
#: F_OFD_SETLKW), leases and directory notifications (F_SETLEASE, F_NOTIFY). The
#: interpreter and the allowed modules use none of them (only F_GETFD, F_SETFD, F_GETFL,
#: F_DUPFD_CLOEXEC and the like, which stay allowed).
_REFUSED_FCNTL = (5, 6, 7, 12, 13, 14, 36, 37, 38, 1024, 1026)
#: every call numbered from here on (the numbers all architectures share since Linux 5.1:
#: pidfds, io_uring, the new mount API, clone3, openat2, landlock, fchmodat2, listmount,
#: and whatever comes next) is answered ENOSYS unless named above
_NEW_CALLS = range(424, 1024)
#: answered ENOSYS (glibc then falls back to the refused calls above)
_ABSENT_CALLS = ("clone3", "openat2")
#: refused by the second filter, loaded by the driver once the interpreter runs
_REFUSED_LATER = ("execve", "execveat", "prctl", "seccomp")


def _seccomp_module() -> Any:
    try:
        import seccomp  # libseccomp's own bindings, where the system has them
    except ImportError:
        try:
            import pyseccomp as seccomp  # the same API over ctypes (a dependency of vicogym)
        except (ImportError, OSError, RuntimeError, TypeError, AttributeError) as exc:
            raise SandboxUnavailable(f"libseccomp could not be loaded ({type(exc).__name__}: {exc}); {INSTALL_HINT}") \
                from None
    return seccomp


def _compile(refused: Sequence[str], absent: Sequence[str] = (), first: bool = False) -> bytes:
    """A seccomp program (classic BPF, as bwrap and ``PR_SET_SECCOMP`` take it) that allows
    every call but ``refused`` (EPERM) and ``absent`` (ENOSYS); the ``first`` one also
    refuses ``open`` and ``openat`` for writing (EACCES), ``fcntl`` record locks, leases
    and notifications (:data:`_REFUSED_FCNTL`), and answers ENOSYS to every call numbered
    in :data:`_NEW_CALLS` it does not name."""
    seccomp = _seccomp_module()
    program = seccomp.SyscallFilter(seccomp.ALLOW)
    program.set_attr(seccomp.Attr.CTL_OPTIMIZE, 2)  # a binary tree: hundreds of rules, a few tests per call
    named: set[int] = set()

    def rule(action: int, name: str, *args: Any) -> bool:
        try:
            program.add_rule(action, name, *args)
            named.add(seccomp.resolve_syscall(seccomp.Arch.NATIVE, name))
            return True
        except (OSError, ValueError, RuntimeError):  # not a call of this architecture
            return False

    known = {name for name in refused if rule(seccomp.ERRNO(errno.EPERM), name)}
    for name in absent:
        rule(seccomp.ERRNO(errno.ENOSYS), name)
    if first:
        for name, flags in (("open", 1), ("openat", 2)):
            for bit in (os.O_WRONLY, os.O_RDWR, os.O_CREAT, os.O_TRUNC, os.O_APPEND):
                rule(seccomp.ERRNO(errno.EACCES), name, seccomp.Arg(flags, seccomp.MASKED_EQ, bit, bit))
        for name in ("fcntl", "fcntl64"):  # (fcntl64: 32-bit architectures only)
            for command in _REFUSED_FCNTL:
                rule(seccomp.ERRNO(errno.EPERM), name, seccomp.Arg(1, seccomp.EQ, command))
        for number in _NEW_CALLS:
            if number not in named:
                program.add_rule(seccomp.ERRNO(errno.ENOSYS), number)
    essential = {"clone", "kill", "ptrace", "socket", "execve", "unlinkat", "shmget"} & set(refused)
    if not essential <= known:
        raise SandboxUnavailable(f"libseccomp does not know {sorted(essential - known)} on this machine; "
                                 f"{INSTALL_HINT}")
    read, write = os.pipe()  # (libseccomp writes to a file descriptor; a program is a few kilobytes)
    with os.fdopen(read, "rb") as source:
        with os.fdopen(write, "wb") as sink:
            program.export_bpf(sink)
        return source.read()


_PROBE = r'''
import json, sys
for name in sys.argv[1:]:
    __import__(name)
files, packages = set(), set()
for module in list(sys.modules.values()):
    for key in ("__file__", "__cached__"):
        path = getattr(module, key, None)
        if isinstance(path, str):
            files.add(path)
    for path in getattr(module, "__path__", None) or []:
        if module.__name__.split(".")[0] in sys.argv[1:] or module.__name__ == "encodings":
            packages.add(path)
maps = set()
with open("/proc/self/maps") as f:
    for line in f:
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and parts[5].startswith("/"):
            maps.add(parts[5].rstrip("\n"))
print(json.dumps({"files": sorted(files), "packages": sorted(packages), "maps": sorted(maps)}))
'''


def _interpreter() -> str:
    return os.path.realpath(sys.executable)


def _resolve(path: str, links: dict[str, str], depth: int = 0) -> str:
    """``path`` with its symbolic links followed as the host follows them, recording each
    link (its location, resolved, -> its text) in ``links``; the real path."""
    if depth > 40:
        raise SandboxUnavailable(f"too many levels of symbolic links under {path}")
    parts = Path(os.path.normpath(path)).parts
    current = "/"
    for i, part in enumerate(parts[1:], start=1):
        candidate = os.path.join(current, part)
        if os.path.islink(candidate):
            target = os.readlink(candidate)
            links[candidate] = target
            rest = parts[i + 1:]
            return _resolve(os.path.join(os.path.normpath(os.path.join(current, target)), *rest), links, depth + 1)
        current = candidate
    return current


def _shared_libraries(objects: Sequence[str]) -> set[str]:
    """The paths the dynamic loader opens for ``objects`` (what ``ldd`` prints)."""
    ldd = shutil.which("ldd") or "/usr/bin/ldd"
    if not os.path.exists(ldd):
        raise SandboxUnavailable(f"ldd is missing (glibc's libc-bin); {INSTALL_HINT}")
    paths: set[str] = set()
    for start in range(0, len(objects), 32):
        done = subprocess.run([ldd, *objects[start:start + 32]], capture_output=True, text=True, env={})
        for line in done.stdout.splitlines():
            line = line.strip()
            if line.endswith(":"):  # the header of one object's list
                continue
            if "=>" in line:
                line = line.split("=>", 1)[1].strip()
            path = line.split(" (", 1)[0].strip()
            if path.startswith("/"):
                paths.add(path)
    return paths


@cache
def _view(allowed: tuple[str, ...]) -> tuple[str, ...]:
    """bwrap's arguments for the child's file system: the interpreter, its shared
    libraries and the modules' files, read-only, and nothing else (staged as one tree, so
    that a child costs a few mounts rather than one per file)."""
    python = _interpreter()
    for name in allowed:
        if not isinstance(name, str) or not all(part.isidentifier() for part in name.split(".")):
            raise ValueError(f"expected allowed as module names, got {name!r}")
    probe = subprocess.run([python, "-I", "-S", "-c", _PROBE, "resource", "json", "ctypes", *allowed],
                           capture_output=True, text=True, env={})
    if probe.returncode != 0:
        raise ValueError(f"the allowed modules {list(allowed)} do not all import in an isolated Python (-I -S): "
                         f"{probe.stderr.strip()[-300:]}")
    found = json.loads(probe.stdout)
    objects = [python] + [p for p in found["maps"] if ".so" in os.path.basename(p) and os.path.isfile(p)]
    links: dict[str, str] = {}
    files = {_resolve(p, links) for p in _shared_libraries(objects)}
    files |= {_resolve(p, links) for p in [python, *found["maps"], *found["files"], "/etc/ld.so.cache"]
              if os.path.exists(p)}
    for package in {_resolve(p, links) for p in found["packages"] if os.path.isdir(p)}:
        for folder, subfolders, names in os.walk(package):
            subfolders[:] = [d for d in subfolders if d not in ("test", "tests")]
            files |= {os.path.join(folder, n) for n in names if os.path.isfile(os.path.join(folder, n))}
    root = _stage(sorted(files), links)
    args: list[str] = []
    for entry in sorted(os.listdir(root)):
        path = os.path.join(root, entry)
        args += (
            ["--symlink", os.readlink(path), "/" + entry] if os.path.islink(path) else ["--ro-bind", path, "/" + entry]
        )
    return tuple(args)


def _private_folder(path: Path) -> str:
    """Make ``path`` a folder (with its parents) where it is none yet; why it is not one of
    this user's alone, that no one else can write or swap ('' when it is)."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        info = os.lstat(path)
    except OSError as exc:
        return f"{path} cannot be made ({exc.strerror or exc})"
    if not stat.S_ISDIR(info.st_mode):
        return f"{path} is no folder (a link or a file stands there)"
    if info.st_uid != os.geteuid():
        return f"{path} belongs to another user (uid {info.st_uid})"
    if info.st_mode & 0o022:
        return f"{path} can be written by other users (mode {stat.S_IMODE(info.st_mode):o})"
    return ""


def _staging_folder() -> Path:
    """Where views are staged: the user's cache (``$XDG_CACHE_HOME/vicogym/sandbox``), or,
    where that is not a folder of the user's alone (it cannot be written, say),
    ``vicogym-sandbox-<uid>`` in the system's temporary folder, a folder of its own (never
    the shared temporary folder itself: anyone can put a ``view-...`` there).
    :class:`SandboxUnavailable` when neither is the user's alone (another user holds the
    name in the temporary folder, say)."""
    import tempfile

    try:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "vicogym" / "sandbox"
        problem = _private_folder(cache)
    except (RuntimeError, KeyError) as exc:  # (no home folder to be found)
        cache, problem = None, f"the cache cannot be found ({exc})"
    if not problem:
        return cache
    fallback = Path(tempfile.gettempdir()) / f"vicogym-sandbox-{os.geteuid()}"
    also = _private_folder(fallback)
    if also:
        raise SandboxUnavailable(f"the sandbox has no folder of this user's alone to stage its view in: {problem}, "
                                 f"and {also}; set XDG_CACHE_HOME to a folder you can write")
    return fallback


def _stage(files: Sequence[str], links: dict[str, str]) -> str:
    """A folder holding copies of ``files`` and ``links`` at their absolute paths beneath
    it, built once per content and kept in a folder of the user's alone
    (:func:`_staging_folder`; its name is a digest of every file's path, size and time;
    the :data:`KEPT_VIEWS` used last are kept). A view found there is used only once
    :func:`_view_problem` finds it a faithful copy of the host's files; otherwise it is
    staged anew (and :class:`SandboxUnavailable` when even that is not)."""
    import hashlib
    import tempfile

    digest = hashlib.sha256()
    for path in files:
        info = os.stat(path)
        digest.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    for where, target in sorted(links.items()):
        digest.update(f"{where}\0->{target}\n".encode())
    base = _staging_folder()
    root = base / f"view-{digest.hexdigest()[:32]}"
    problem = _view_problem(root, files, links)
    if not problem:
        _touch(root)  # in use: the pruning below keeps the views used last
        return str(root / "root")
    build = None
    try:
        if os.path.lexists(root):  # changed since it was staged, or planted: staged anew
            _remove(root)
        build = Path(tempfile.mkdtemp(prefix=".build-", dir=base))
        for path in files:  # copies, not links: a lock, lease or watch on them touches nothing of the host's
            target = build / "root" / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
        for where, text in links.items():
            target = build / "root" / where.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            if not os.path.lexists(target):
                os.symlink(text, target)
        (build / ".complete").write_text("")
        try:
            os.rename(build, root)
        except OSError:  # another process staged the same view first (checked below, as any)
            shutil.rmtree(build, ignore_errors=True)
        build = None
        _prune(base)
    except OSError as exc:
        if build is not None:
            shutil.rmtree(build, ignore_errors=True)
        raise SandboxUnavailable(f"the sandbox's view could not be staged in {base} ({exc}); free some space or set "
                                 f"XDG_CACHE_HOME to a folder you can write") from None
    problem = _view_problem(root, files, links)
    if problem:
        raise SandboxUnavailable(f"the sandbox's view {root} is no faithful copy of this machine's files even when "
                                 f"staged anew ({problem}); set XDG_CACHE_HOME to a folder of your own")
    return str(root / "root")


def _view_problem(view: Path, files: Sequence[str], links: dict[str, str]) -> str:
    """Why the staged ``view`` must not be mounted ('' when it may): it is not a folder of
    this user's alone (so no one else can change it once checked), was not staged to the
    end, holds an entry more or less than ``files``, ``links`` and their folders, a link
    that points elsewhere, or a file that is not this user's or whose bytes differ from the
    host's. Read whole, once per process and view (about the size of the interpreter and
    its libraries): a view someone planted or changed is found here, whatever its name,
    sizes and times say."""
    try:
        info = os.lstat(view)
    except FileNotFoundError:
        return "none is staged"
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        return "it is not a folder of this user's alone"
    if not os.path.isfile(view / ".complete") or not os.path.isdir(view / "root") or os.path.islink(view / "root"):
        return "it was not staged to the end"
    wanted_files = {path.lstrip("/") for path in files}
    wanted_dirs: set[str] = set()
    for path in [*wanted_files, *(w.lstrip("/") for w in links)]:
        while (path := os.path.dirname(path)) and path not in wanted_dirs:
            wanted_dirs.add(path)
    wanted_links = {w.lstrip("/"): text for w, text in links.items()
                    if w.lstrip("/") not in wanted_files and w.lstrip("/") not in wanted_dirs}
    found_files: set[str] = set()
    found_dirs: set[str] = set()
    found_links: dict[str, str] = {}
    folders = [""]
    try:
        while folders:
            folder = folders.pop()
            with os.scandir(view / "root" / folder) as entries:
                for entry in entries:
                    name = os.path.join(folder, entry.name)
                    if entry.is_symlink():
                        found_links[name] = os.readlink(entry.path)
                    elif entry.is_dir(follow_symlinks=False):
                        found_dirs.add(name)
                        folders.append(name)
                    elif entry.is_file(follow_symlinks=False):
                        found_files.add(name)
                    else:
                        return f"it holds /{name}, which is no file, folder or link"
        for kind, found, wanted in (("file", found_files, wanted_files), ("folder", found_dirs, wanted_dirs),
                                    ("link", set(found_links), set(wanted_links))):
            if found != wanted:
                extra, missing = sorted(found - wanted), sorted(wanted - found)
                return f"it holds the {kind} /{extra[0]}, which it should not" if extra else \
                    f"it lacks the {kind} /{missing[0]}"
        for name, text in sorted(found_links.items()):
            if text != wanted_links[name]:
                return f"its link /{name} points to {text!r}, not {wanted_links[name]!r}"
        for path in files:
            if not _same_file(path, view / "root" / path.lstrip("/")):
                return f"its copy of {path} differs from the host's"
    except OSError as exc:
        return f"it cannot be read ({exc})"
    return ""


def _same_file(host: str, copy: Path) -> bool:
    """Whether ``copy`` is a plain file of this user's holding the bytes of ``host`` (opened
    without following a link or waiting on a fifo, then checked by what was opened)."""
    fd = os.open(copy, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as staged, open(host, "rb") as original:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or \
                info.st_size != os.fstat(original.fileno()).st_size:
            return False
        while True:
            chunk = original.read(1 << 20)
            if chunk != staged.read(1 << 20):
                return False
            if not chunk:
                return True


def _touch(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.utime(path)


def _remove(path: Path) -> None:
    """A file, link or folder, gone (as far as this user may remove it)."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _prune(base: Path) -> None:
    """All but the :data:`KEPT_VIEWS` views used last (an interpreter or its modules changed
    since the others were staged)."""
    views = []
    for view in base.glob("view-*"):
        with contextlib.suppress(OSError):  # (another process pruned it)
            views.append((os.lstat(view).st_mtime, str(view)))
    for _, stale in sorted(views, reverse=True)[KEPT_VIEWS:]:
        _remove(Path(stale))


@cache
def _filters() -> tuple[bytes, bytes]:
    """The two seccomp programs: bwrap's (everything but exec) and the driver's (exec)."""
    return (_compile(_REFUSED_CALLS, _ABSENT_CALLS, first=True), _compile(_REFUSED_LATER))


def _walled(allowed: tuple[str, ...]) -> tuple[list[str], bytes, bytes]:
    """The command that starts the driver behind the walls, bwrap's seccomp program (read
    from a file descriptor) and the driver's."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable(f"bwrap (bubblewrap) is not on PATH, so model-written code cannot run; {INSTALL_HINT}")
    first, second = _filters()
    command = [bwrap, "--unshare-all", "--unshare-user", "--uid", str(UID), "--gid", str(UID), "--cap-drop", "ALL",
               "--die-with-parent", "--new-session", "--clearenv", "--hostname", "sandbox", *_view(allowed),
               "--size", str(1 << 20), "--tmpfs", "/tmp", "--chdir", "/tmp", "--seccomp", "{fd}",
               _interpreter(), "-I", "-S", "-c", _DRIVER]
    return command, first, second


def _in_process_only(allowed: tuple[str, ...]) -> tuple[list[str], bytes, bytes]:
    """The driver without the walls: the in-process layer alone. Never used by the
    package; the tests swap it in to show that the walls are what stops their attacks."""
    return [_interpreter(), "-I", "-S", "-c", _DRIVER], b"", b""


#: how the child is started (the tests replace it with :func:`_in_process_only`)
_command = _walled


# -- fail closed -------------------------------------------------------------------------------
_checked: dict[str, str] = {}
_check_lock = threading.Lock()


def check_sandbox() -> None:
    """Raise :class:`SandboxUnavailable` unless the walls stand on this machine: a trusted
    probe behind them must start as the unprivileged user and be refused a change to its
    own private ``/tmp`` (only the seccomp filter refuses that). Checked once per process."""
    with _check_lock:
        if "verdict" not in _checked:
            _checked["verdict"] = _probe_walls()
    if _checked["verdict"]:
        raise SandboxUnavailable(_checked["verdict"])


def _probe_walls() -> str:
    """Why the walls cannot stand here ('' when they do)."""
    if not sys.platform.startswith("linux"):
        return f"the sandbox needs Linux namespaces and seccomp; this is {sys.platform}"
    # /tmp is writable to the mount namespace: only the seccomp filter refuses the link
    code = ("def probe():\n    os = print.__self__.__import__('os')\n    try:\n        os.symlink('/', '/tmp/probe')\n"
            "    except OSError as exc:\n        return [os.getuid(), exc.errno]\n    return 'linked'\n")
    try:
        result = _run(code, "probe", [([], {})], timeout=30.0, call_seconds=10.0, cpu_seconds=10, memory_mb=256,
                      max_value_chars=100, allowed=ALLOWED_MODULES, checked=False)
    except SandboxUnavailable as exc:
        return str(exc)
    answer = result.value[0] if result.ok else result
    if not answer.ok:
        return f"the sandbox did not start here ({answer.error}); {INSTALL_HINT}"
    if answer.value != [UID, errno.EPERM]:
        return f"the sandbox started but its walls do not hold (probe answered {answer.value!r}); {INSTALL_HINT}"
    return ""


# -- the parent's side: bounded, untrusted output ----------------------------------------------
#: what matters to nesting: an escape pair (skipped whole), a quote, a bracket
_TOKEN = re.compile(r'\\.|["\[\]{}]', re.DOTALL)


def _too_deep(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether JSON ``text`` nests arrays and objects deeper than ``limit`` (one linear
    pass; brackets inside strings do not count)."""
    depth, quoted = 0, False
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token == '"':
            quoted = not quoted
        elif not quoted and token in "[{":
            depth += 1
            if depth > limit:
                return True
        elif not quoted and token in "]}":
            depth -= 1
    return False


def _parse(line: bytes) -> tuple[Any, str]:
    """A child's line as JSON, or ``(None, why not)``: strict JSON only, so no ``NaN`` or
    ``Infinity``, no number that would parse to an infinity (``1e999``), no integer longer
    than :data:`MAX_INT_DIGITS` digits and no lone surrogate."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None, "its answer is not UTF-8"
    if _too_deep(text):
        return None, f"its answer nests deeper than {MAX_DEPTH} levels"
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float, parse_int=_bounded_int)
        json.dumps(value, ensure_ascii=False).encode("utf-8")  # lone surrogates are no text
    except (ValueError, RecursionError) as exc:  # (UnicodeEncodeError is a ValueError)
        return None, f"its answer is not strict JSON ({type(exc).__name__}: {_printable(str(exc), 120)})"
    return value, ""


def _literal(text: str) -> str:
    """A number's text as an error names it: whole when short, else its start and length."""
    return text if len(text) <= 24 else f"{text[:12]}... ({len(text)} characters)"


def _no_constant(name: str) -> Any:
    raise NonFiniteNumber(f"{name} is no JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # (float() makes inf of what is beyond its range)
        raise NonFiniteNumber(f"{_literal(text)} is beyond a float's range")
    return value


def _bounded_int(text: str) -> int:
    digits = len(text) - text.startswith("-")
    if digits > MAX_INT_DIGITS:
        raise IntegerTooLong(f"an integer of {digits} digits, more than the {MAX_INT_DIGITS} allowed")
    try:
        return int(text)
    except ValueError:  # (an interpreter whose own limit, sys.set_int_max_str_digits, is lower)
        raise IntegerTooLong(f"an integer of {digits} digits, more than this interpreter converts") from None


def _printable(text: str, limit: int = MAX_ERROR) -> str:
    """``text`` safe to print: each character that is not printable (controls such as
    ESC and NUL, newlines and tabs, C1 controls, bidirectional overrides, separators) as
    its Python escape (``\\x1b``, ``\\x00``, ``\\n``, ``\\u202e``), so that no escape
    sequence reaches a terminal and the text is one line; at most ``limit`` characters,
    ending in an ellipsis where it was cut."""
    pieces: list[str] = []
    size = 0
    for i, char in enumerate(text):
        piece = char if char.isprintable() else repr(char)[1:-1]
        if size + len(piece) > (limit if i + 1 == len(text) else limit - 1):  # (room for the ellipsis)
            pieces.append("\u2026")
            break
        pieces.append(piece)
        size += len(piece)
    return "".join(pieces)


def _error_text(value: Any) -> str:
    return _printable(value) if isinstance(value, str) else f"an error of type {type(value).__name__}"


def _loaded(message: Any, nonce: str) -> tuple[bool, str]:
    if isinstance(message, dict) and message.get("n") == nonce:
        if set(message) == {"loaded", "n"} and message["loaded"] is True:
            return True, ""
        if set(message) == {"loaded", "n", "error"} and message["loaded"] is False:
            return False, _error_text(message["error"])
    return False, f"malformed answer: the sandbox's first line is no load report: {json.dumps(message)[:120]}"


def _answer(message: Any, nonce: str, max_value_chars: int) -> SandboxResult:
    if isinstance(message, dict) and message.get("n") == nonce:
        if set(message) == {"n", "ok", "value"} and message["ok"] is True:
            size = len(json.dumps(message["value"]))
            if size > max_value_chars:
                return SandboxResult(False, error=f"ValueError: the value is {size} characters of JSON, more than "
                                                  f"the {max_value_chars} allowed")
            return SandboxResult(True, message["value"])
        if set(message) == {"n", "ok", "error"} and message["ok"] is False:
            return SandboxResult(False, error=_error_text(message["error"]))
    return SandboxResult(False, error=f"malformed answer: {json.dumps(message)[:120]}")


_EXITS = {128 + signal.SIGXCPU: "CPU time limit (SIGXCPU)", 128 + signal.SIGKILL: "CPU time or memory limit (SIGKILL)",
          128 + signal.SIGXFSZ: "file size limit (SIGXFSZ)", 128 + signal.SIGSEGV: "crashed (SIGSEGV)"}


class _Child:
    """One sandbox child: what is sent to it written and its lines read without blocking,
    each line at most ``cap`` bytes, against deadlines this process keeps."""

    def __init__(self, command: list[str], first: bytes, cap: int):
        read = -1
        fds: tuple[int, ...] = ()
        if "{fd}" in command:
            read, write = os.pipe()
            os.write(write, first)
            os.close(write)
            command = [str(read) if part == "{fd}" else part for part in command]
            fds = (read,)
        try:
            self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, pass_fds=fds, env={}, start_new_session=True)
        except OSError as exc:
            raise SandboxUnavailable(f"the sandbox could not start ({exc}); {INSTALL_HINT}") from None
        finally:
            if read != -1:
                os.close(read)
        self.cap, self.pending, self.buffer, self.stderr = cap, bytearray(), bytearray(), bytearray()
        self.selector = selectors.DefaultSelector()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            os.set_blocking(stream.fileno(), False)
        self.selector.register(self.proc.stdout, selectors.EVENT_READ)
        self.selector.register(self.proc.stderr, selectors.EVENT_READ)
        self.closed = self.writing = False

    def send(self, data: bytes) -> None:
        """Queue ``data`` for the child's input (written as it reads)."""
        if self.proc.stdin.closed:
            return
        self.pending += data
        if not self.writing:
            self.selector.register(self.proc.stdin, selectors.EVENT_WRITE)
            self.writing = True

    def line(self, deadline: float) -> tuple[bytes | None, str]:
        """The next line, or ``(None, why there is none)``: 'timeout', 'overflow' or 'ended'."""
        while True:
            end = self.buffer.find(b"\n", 0, self.cap + 1)
            if end != -1:
                line = bytes(self.buffer[:end])
                del self.buffer[:end + 1]
                return line, ""
            if len(self.buffer) > self.cap:
                return None, "overflow"
            if self.closed:
                return None, "ended"
            left = deadline - time.monotonic()
            if left <= 0:
                return None, "timeout"
            for key, _ in self.selector.select(min(left, 1.0)):
                self._serve(key.fileobj)

    def _serve(self, stream: Any) -> None:
        if stream is self.proc.stdin:
            try:
                sent = os.write(stream.fileno(), self.pending[:1 << 16])
            except BlockingIOError:
                sent = 0
            except OSError:  # the child closed its input: nothing more reaches it
                sent = len(self.pending)
            del self.pending[:sent]
            if not self.pending:
                self.selector.unregister(stream)
                self.writing = False
            return
        try:
            data = os.read(stream.fileno(), 1 << 16)
        except BlockingIOError:
            return
        if not data:
            self.selector.unregister(stream)
        if stream is self.proc.stderr:
            self.stderr = (self.stderr + data)[-2000:]
            return
        self.closed = not data
        self.buffer += data

    def finish(self, grace: float) -> str:
        """Close the child's input, give it ``grace`` seconds to end, then kill the whole
        sandbox; why it ended, when that was not cleanly ('' when it was)."""
        if self.writing:
            self.selector.unregister(self.proc.stdin)
            self.writing = False
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=max(grace, 0.0))
        except subprocess.TimeoutExpired:
            code = None
        self.kill()
        if code is None or code == 0:
            return ""
        return _EXITS.get(128 - code if code < 0 else code, f"exit {code}")

    def kill(self) -> None:
        """The whole sandbox, at once: bwrap's process group (the sandbox dies with bwrap
        and its PID namespace with it)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
        self.proc.wait()
        self.selector.close()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass


def _run(code: str, entry: str, calls: list[tuple[list[Any], dict[str, Any]]], *, timeout: float, call_seconds: float,
         cpu_seconds: int, memory_mb: int, max_value_chars: int, allowed: tuple[str, ...],
         checked: bool = True) -> SandboxResult:
    """Load ``code`` in one child and call ``entry`` for each of ``calls``, one at a time:
    ``value`` is one :class:`SandboxResult` per call answered (fewer when a call ran past
    ``call_seconds`` or answered out of shape: the child is killed there); ``ok=False``
    when the code did not load or the child ended, was killed or overflowed first. Each
    line must carry the nonce of what it answers, so no line written ahead of its call
    is taken for its answer."""
    if checked and _command is _walled:
        check_sandbox()
    command, first, second = _command(tuple(allowed))
    nonce = secrets.token_hex(8)
    header = {"code": code, "entry": entry, "allowed": list(allowed), "cpu_seconds": int(cpu_seconds),
              "memory_mb": int(memory_mb), "max_value_chars": int(max_value_chars), "filter": second.hex(),
              "nonce": nonce}
    deadline = time.monotonic() + timeout
    child = _Child(command, first, max_value_chars + LINE_OVERHEAD)
    try:
        child.send(json.dumps(header).encode() + b"\n")
        line, why = child.line(deadline)
        if line is None:
            return SandboxResult(False, error=_ended(child, why, timeout))
        message, problem = _parse(line)
        loaded, problem = _loaded(message, nonce) if not problem else (False, f"malformed answer: {problem}")
        if not loaded:
            return SandboxResult(False, error=problem)
        results: list[SandboxResult] = []
        for args, kwargs in calls:
            nonce = secrets.token_hex(8)
            child.send(json.dumps({"n": nonce, "args": args, "kwargs": kwargs}).encode() + b"\n")
            line, why = child.line(min(deadline, time.monotonic() + call_seconds))
            if line is None and why == "timeout" and time.monotonic() < deadline:
                results.append(SandboxResult(False, error=f"timeout: no answer within {call_seconds:g} s"))
                break
            if line is None:
                return SandboxResult(False, error=_ended(child, why, timeout))
            message, problem = _parse(line)
            results.append(SandboxResult(False, error=f"malformed answer: {problem}") if problem
                           else _answer(message, nonce, max_value_chars))
            if results[-1].error.startswith("malformed"):
                break
        return SandboxResult(True, results)
    finally:
        child.kill()


def _ended(child: _Child, why: str, timeout: float) -> str:
    """Why the child gave no (more) answers."""
    if why == "overflow":
        return f"the sandbox's answer ran past {child.cap} bytes"
    if why == "timeout":
        return f"timeout: no answer within {timeout:g} s"
    reason = child.finish(0.5)
    if reason.startswith(("CPU", "file size")) or "SIGKILL" in reason:
        return f"killed: {reason}"
    detail = _printable(child.stderr.decode("utf-8", "replace").strip()[-300:], 300)
    return f"the sandbox ended without an answer ({reason or 'exit 0'})" + (f": {detail}" if detail else "")


# -- the interface -------------------------------------------------------------------------------
def run_untrusted(code: str, entry: str, args: list[Any] | tuple[Any, ...] = (),
                  kwargs: dict[str, Any] | None = None, *,
                  timeout: float = 5.0, cpu_seconds: int = 2, memory_mb: int = 256, max_value_chars: int = 1_000_000,
                  allowed: tuple[str, ...] = ALLOWED_MODULES) -> SandboxResult:
    """``entry(*args, **kwargs)`` of ``code`` in a sandboxed child (see the module);
    arguments and the return value travel as JSON. :class:`SandboxUnavailable` when the
    walls cannot be built here."""
    _check(code, entry)
    calls = [(list(args), dict(kwargs or {}))]
    result = _run(code, entry, calls, timeout=timeout, call_seconds=timeout, cpu_seconds=cpu_seconds,
                  memory_mb=memory_mb, max_value_chars=max_value_chars, allowed=tuple(allowed))
    return result.value[0] if result.ok else result


def run_untrusted_batch(code: str, entry: str, calls: Sequence[tuple[Sequence[Any], dict[str, Any]]], *,
                        call_seconds: float = 1.0, timeout: float | None = None, cpu_seconds: int | None = None,
                        memory_mb: int = 256, max_value_chars: int = 20_000,
                        allowed: tuple[str, ...] = ALLOWED_MODULES) -> SandboxResult:
    """``entry(*args, **kwargs)`` of ``code`` for each ``(args, kwargs)`` of ``calls``, all in
    one sandboxed child. ``value`` is one :class:`SandboxResult` per call, in order: a call
    that raised, returned no JSON, returned more than ``max_value_chars`` characters of JSON
    or ran past ``call_seconds`` (timed by this process) is ``ok=False`` with the reason; a
    time-out ends the batch and the calls after it read "not run". The whole batch fails
    (``ok=False``) when the code does not load, or the child is killed (its wall
    ``timeout``, default ``2 s + the calls' seconds``; its CPU time, default the calls'
    seconds + 1; memory) or answers out of turn."""
    _check(code, entry)
    calls = [(list(args), dict(kwargs)) for args, kwargs in calls]
    if not is_number(call_seconds, finite=False) or not call_seconds > 0:
        raise ValueError(f"expected call_seconds as positive seconds, got {call_seconds!r}")
    budget = call_seconds * max(len(calls), 1)
    timeout = 2.0 + budget if timeout is None else timeout
    cpu_seconds = math.ceil(budget) + 1 if cpu_seconds is None else cpu_seconds
    result = _run(code, entry, calls, timeout=timeout, call_seconds=float(call_seconds), cpu_seconds=cpu_seconds,
                  memory_mb=memory_mb, max_value_chars=max_value_chars, allowed=tuple(allowed))
    if not result.ok:
        return result
    skipped = SandboxResult(False, error="not run: an earlier call ran out of time")
    return SandboxResult(True, result.value + [skipped] * (len(calls) - len(result.value)))


def _check(code: str, entry: str) -> None:
    if not isinstance(code, str) or not isinstance(entry, str) or not entry.isidentifier():
        raise TypeError("expected code as a string and entry as a function name")
