"""The sandbox for model-written verifier code: an honest verifier runs; network, file
writes, subprocesses, forbidden imports, CPU and memory bombs and hangs are refused; its
answer channel takes strict JSON only and passes on error texts that are safe to print;
its staged view is used only once it is checked against the host's files."""

import marshal
import os
import stat
import tempfile
from pathlib import Path

import pytest

from vicogym.instruct import sandbox
from vicogym.instruct.sandbox import MAX_ERROR, MAX_INT_DIGITS, SandboxUnavailable, run_untrusted, run_untrusted_batch

#: the tests that run code need the walls (skipped where they cannot stand, failed on CI)
walled = pytest.mark.usefixtures("walls")

VERIFIER = """
import re

def verify(response, n):
    count = len(re.findall(r"\\w+", response))
    return {"pass": count <= n, "actual": count}
"""


@walled
def test_an_honest_verifier_runs_and_returns_json():
    result = run_untrusted(VERIFIER, "verify", ["one two three", 5])
    assert result.ok and result.value == {"pass": True, "actual": 3}


@walled
@pytest.mark.parametrize("code, refused", [
    ("import socket\ndef f():\n    return 1", "allows only"),
    ("def f():\n    import os\n    return os.getcwd()", "allows only"),
    ("def f():\n    return ().__class__.__base__.__subclasses__() and __import__('socket').socket()", "allows only"),
    ("def f():\n    return open('/tmp/vicogym-sandbox-test', 'w')", "NameError"),
    ("import json\ndef f():\n    return json.__loader__.__class__", "TypeError"),  # not JSON: refused as output
    ("def f():\n    return eval('1 + 1')", "NameError"),
])
@walled
def test_forbidden_imports_builtins_and_outputs_are_refused(code, refused):
    result = run_untrusted(code, "f")
    assert not result.ok and refused in result.error, result


@walled
def test_network_file_writes_and_subprocesses_are_refused_even_past_the_import_guard(tmp_path):
    """Code that reaches the real ``__import__`` (through a builtin's ``__self__``) still
    meets the audit hook: no socket, no file opened for writing, no subprocess."""
    target = tmp_path / "written"
    code = f"""
real_import = print.__self__.__import__

def write():
    return real_import("io").open({str(target)!r}, "w").write("x")

def connect():
    return real_import("socket").create_connection(("127.0.0.1", 9))

def spawn():
    return real_import("os").system("touch {target}")
"""
    for entry in ("write", "connect", "spawn"):
        result = run_untrusted(code, entry)
        assert not result.ok and ("refuses" in result.error or "allows only" in result.error), (entry, result)
    assert not target.exists()


@walled
def test_cpu_and_memory_bombs_and_hangs_are_stopped():
    cpu = run_untrusted("def f():\n    while True:\n        pass", "f", cpu_seconds=1, timeout=20)
    assert not cpu.ok and ("CPU time" in cpu.error or "timeout" in cpu.error), cpu
    memory = run_untrusted("def f():\n    return len(bytearray(4 * 1024 ** 3))", "f", memory_mb=128)
    assert not memory.ok and "MemoryError" in memory.error, memory
    hang = run_untrusted("import time\ndef f():\n    time.sleep(60)", "f", timeout=2, allowed=("time",))
    assert not hang.ok and "timeout" in hang.error, hang


@walled
def test_the_child_gets_no_environment_and_arguments_must_be_named():
    assert run_untrusted("def f():\n    return 1", "f").value == 1
    os.environ["VICOGYM_SECRET_TEST"] = "x"
    try:
        leak = run_untrusted("def f():\n    return dict(print.__self__.__import__('os').environ)", "f")
        assert leak.ok and "VICOGYM_SECRET_TEST" not in leak.value
    finally:
        del os.environ["VICOGYM_SECRET_TEST"]
    with pytest.raises(TypeError, match="entry as a function name"):
        run_untrusted("x = 1", "not a name")


BATCH = """
import re

def f(kind):
    print("chatter that must not garble the answer line")
    if kind == "crash":
        return 1 / 0
    if kind == "big":
        return "x" * 50000
    if kind == "not json":
        return {1, 2}
    if kind == "backtrack":
        return bool(re.match(r"(a+)+$", "a" * 40 + "b"))
    if kind == "hang":
        while True:
            pass
    return {"kind": kind}
"""


@walled
def test_a_batch_runs_in_one_child_and_each_call_has_its_own_result():
    result = run_untrusted_batch(BATCH, "f", [(["a"], {}), (["crash"], {}), ([], {"kind": "big"}), (["not json"], {}),
                                              (["b"], {})], max_value_chars=1000)
    assert result.ok, result
    ok, crash, big, not_json, last = result.value
    assert ok.ok and ok.value == {"kind": "a"} and last.value == {"kind": "b"}
    assert not crash.ok and "ZeroDivisionError" in crash.error
    assert not big.ok and "more than the 1000 allowed" in big.error
    assert not not_json.ok and "TypeError" in not_json.error


@walled
def test_a_call_past_its_time_ends_the_batch_and_a_hang_in_c_is_stopped_too():
    import time

    start = time.monotonic()
    result = run_untrusted_batch(BATCH, "f", [(["a"], {}), (["backtrack"], {}), (["b"], {})], call_seconds=0.3)
    assert result.ok and result.value[0].ok and time.monotonic() - start < 5
    assert not result.value[1].ok and "timeout" in result.value[1].error
    assert not result.value[2].ok and result.value[2].error.startswith("not run")
    # this process keeps each call's time: a verifier that swallows every exception is
    # still stopped at its call's seconds, and its child killed
    swallow = "def f():\n    while True:\n        try:\n            while True:\n                pass\n" \
              "        except BaseException:\n            pass\n"
    start = time.monotonic()
    result = run_untrusted_batch(swallow, "f", [([], {}), ([], {})], call_seconds=0.2, timeout=10)
    assert result.ok and "timeout" in result.value[0].error and result.value[1].error.startswith("not run"), result
    assert time.monotonic() - start < 3


@walled
def test_a_batch_keeps_the_guards_and_code_that_does_not_load_fails_it_whole(tmp_path):
    target = tmp_path / "written"
    code = f"def f(what):\n    real = print.__self__.__import__\n" \
           f"    if what == 'write':\n        return real('io').open({str(target)!r}, 'w').write('x')\n" \
           f"    if what == 'connect':\n        return real('socket').create_connection(('127.0.0.1', 9))\n" \
           f"    return real('os').system('touch {target}')\n"
    result = run_untrusted_batch(code, "f", [(["write"], {}), (["connect"], {}), (["spawn"], {})])
    assert result.ok and all(not r.ok and ("refuses" in r.error or "allows only" in r.error) for r in result.value)
    assert not target.exists()
    broken = run_untrusted_batch("import socket\ndef f():\n    return 1", "f", [([], {})] * 3)
    assert not broken.ok and "allows only" in broken.error
    with pytest.raises(ValueError, match="call_seconds"):
        run_untrusted_batch("def f():\n    return 1", "f", [], call_seconds=0)
    assert run_untrusted_batch("def f():\n    return 1", "f", []).value == []


# -- the answer channel: strict JSON, numbers included ---------------------------------------
def _line(value: bytes) -> bytes:
    return b'{"n": "0123", "ok": true, "value": ' + value + b"}"


@pytest.mark.parametrize("value, named", [
    (b"[1e999, -1e999]", "NonFiniteNumber: 1e999 is beyond a float's range"),
    (b"1" * 900_000 + b".0", "NonFiniteNumber: 111111111111... (900002 characters) is beyond a float's range"),
    (b"-1E400", "NonFiniteNumber: -1E400 is beyond"),
    (b"NaN", "NonFiniteNumber: NaN is no JSON number"),
    (b"[Infinity]", "NonFiniteNumber: Infinity is no JSON number"),
    (b'{"x": -Infinity}', "NonFiniteNumber: -Infinity is no JSON number"),
    (b"9" * (MAX_INT_DIGITS + 1), f"IntegerTooLong: an integer of {MAX_INT_DIGITS + 1} digits, more than the "
                                  f"{MAX_INT_DIGITS} allowed"),
    (b"[-" + b"9" * 900_000 + b"]", "IntegerTooLong: an integer of 900000 digits"),
])
def test_a_line_with_a_number_strict_json_does_not_carry_is_refused_with_its_kind_named(value, named):
    parsed, problem = sandbox._parse(_line(value))
    assert parsed is None and problem.startswith("its answer is not strict JSON (") and named in problem, problem


def test_finite_numbers_and_integers_up_to_the_limit_still_parse():
    big = int("9" * MAX_INT_DIGITS)
    parsed, problem = sandbox._parse(_line(b"[1e308, -1.5e-300, 1e-999, -0.0, 0, %d, -%d]" % (big, big)))
    assert problem == "" and parsed["value"] == [1e308, -1.5e-300, 0.0, -0.0, 0, big, -big]


@walled
@pytest.mark.parametrize("value, named", [("[1e999, -1e999]", "NonFiniteNumber"),
                                          ("1" * 900_000 + ".0", "NonFiniteNumber"),
                                          ("NaN", "NonFiniteNumber"), ("9" * 5000, "IntegerTooLong")])
def test_a_verifier_that_forges_such_a_line_gets_the_calls_failure_not_inf(value, named):
    """The driver refuses to write such a value (``allow_nan=False``, its interpreter's own
    integer limit), so the code writes the line itself under its call's nonce."""
    code = f'''
def f():
    frame = None
    try:
        raise ValueError
    except ValueError as e:
        frame = getattr(e, "__trace" + "back__").tb_frame
    while frame.f_back is not None:
        frame = frame.f_back
    os = print.__self__.__import__("os")
    nonce = frame.f_globals["call"]["n"]
    os.write(1, b'{{"n": "' + nonce.encode() + b'", "ok": true, "value": {value}}}\\n')
    os._exit(0)
'''
    result = run_untrusted_batch(code, "f", [([], {})], max_value_chars=1_000_000)
    assert result.ok and not result.value[0].ok, result
    assert result.value[0].error.startswith("malformed answer: its answer is not strict JSON") \
        and named in result.value[0].error, result.value[0].error


# -- error texts: safe to print, bounded -------------------------------------------------------
HOSTILE = "\x1b[2J\x1b]0;owned\x07red\x00nul\r\n\tnext\x9b31m\u202eevil\u2028" + "é中🙂"


def test_error_texts_show_control_characters_as_escapes_and_are_bounded():
    shown = sandbox._printable(HOSTILE)
    assert shown == ("\\x1b[2J\\x1b]0;owned\\x07red\\x00nul\\r\\n\\tnext\\x9b31m\\u202eevil\\u2028" + "é中🙂")
    assert shown.isprintable()
    assert sandbox._printable("plain text: ok, (1/0) \\d 'quoted'") == "plain text: ok, (1/0) \\d 'quoted'"
    for text in ("x" * 10_000, "\x00" * 10_000, "\U000e0001" * 1000, "y" * MAX_ERROR):
        cut = sandbox._printable(text)
        assert len(cut) <= MAX_ERROR and cut.isprintable()
    assert sandbox._printable("y" * MAX_ERROR) == "y" * MAX_ERROR  # what fits is not cut
    assert sandbox._printable("y" * (MAX_ERROR + 1)).endswith("y\u2026")  # what is cut says so
    assert sandbox._printable("ab\x00", 4) == "ab\u2026"  # an escape is never cut in two
    assert sandbox._error_text(HOSTILE * 100) == sandbox._printable(HOSTILE * 100) and sandbox._error_text(3) \
        == "an error of type int"


@walled
def test_a_verifiers_error_reaches_the_caller_without_escape_sequences():
    code = f"MESSAGE = {HOSTILE!r}\n" + '''
def f(where):
    os = print.__self__.__import__("os")
    if where == "raise":
        raise ValueError(MESSAGE * 50)
    if where == "stderr":  # then it dies without an answer: standard error is the reason shown
        os.write(2, MESSAGE.encode())
        os._exit(1)
'''
    raised = run_untrusted(code, "f", ["raise"])
    assert not raised.ok and raised.error.startswith("ValueError: \\x1b[2J\\x1b]0;owned\\x07red\\x00nul\\r\\n"), raised
    assert raised.error.isprintable() and len(raised.error) <= MAX_ERROR
    died = run_untrusted(code, "f", ["stderr"])
    assert not died.ok and "(exit 1): \\x1b[2J" in died.error and died.error.isprintable(), died
    unloaded = run_untrusted(f"raise ValueError({HOSTILE!r})\ndef f():\n    return 1\n", "f")
    assert not unloaded.ok and unloaded.error.isprintable() and "\\x1b]0;owned\\x07" in unloaded.error, unloaded


# -- the staged view: checked before use, and never the shared temporary folder's -----------
@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    """The files and links of the allowed modules' view, as :func:`sandbox._view` finds them
    (found once: staging them is each test's business)."""
    found = []
    empty = tmp_path_factory.mktemp("empty")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sandbox, "_stage", lambda files, links: found.append((files, links)) or str(empty))
        try:
            sandbox._view.__wrapped__(sandbox.ALLOWED_MODULES)
        except SandboxUnavailable as exc:  # (no ldd, say: where the sandbox cannot start)
            message = f"the view cannot be found here: {exc}"
            if os.environ.get("VICOGYM_REQUIRE_SANDBOX") == "1":
                pytest.fail(message)
            pytest.skip(message)
    return found[0]


@pytest.fixture
def fallback(tmp_path, monkeypatch):
    """The cache cannot be written (``XDG_CACHE_HOME`` beneath a file), so views are staged
    in the system's temporary folder: here a fresh one, writable by all as /tmp is."""
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked / "cache"))
    temp = tmp_path / "tmp"
    temp.mkdir()
    temp.chmod(0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


def _keep_times(path: Path, data: bytes) -> None:
    """``path`` rewritten to ``data`` (padded to its size), its size and times kept: a check
    of names, sizes and times sees nothing."""
    info = path.stat()
    assert len(data) <= info.st_size
    path.chmod(0o644)
    path.write_bytes(data.ljust(info.st_size, b"\0" if path.suffix == ".pyc" else b"#"))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def _plant_json(view: Path, files) -> list[str]:
    """The view's ``json`` package rewritten to exit with status 7 when imported (source and
    bytecode, sizes and times kept); the host paths changed."""
    changed = []
    for path in files:
        if path.endswith(("/json/__init__.py", "/json/__pycache__/__init__.cpython-311.pyc")):
            copy = view / "root" / path.lstrip("/")
            code = b"raise SystemExit(7)\n"
            if path.endswith(".pyc"):
                code = copy.read_bytes()[:16] + marshal.dumps(compile(code, path, "exec"))
            _keep_times(copy, code)
            changed.append(path)
    assert changed
    return changed


def _faithful(view: Path, files, links) -> bool:
    """Whether ``view`` is this user's alone and holds the host's files and links, and
    nothing else (checked here without the module's own check)."""
    info = view.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        return False
    root = view / "root"
    entries = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_symlink() or not p.is_dir()}
    if entries != {p.lstrip("/") for p in [*files, *links]}:
        return False
    return all(os.readlink(root / w.lstrip("/")) == text for w, text in links.items()) and all(
        stat.S_ISREG((root / p.lstrip("/")).lstat().st_mode) and (root / p.lstrip("/")).read_bytes()
        == Path(p).read_bytes() for p in files)


TAMPERINGS = {
    "a module's bytes, sizes and times kept": lambda view, files, links: _plant_json(view, files),
    "a file more": lambda view, files, links: (view / "root" / files[0].lstrip("/")).with_name("sitecustomize.py")
    .write_text("import os\n"),
    "a file less": lambda view, files, links: (view / "root" / files[-1].lstrip("/")).unlink(),
    "a link pointing elsewhere": lambda view, files, links: [
        (view / "root" / where.lstrip("/")).unlink() or (view / "root" / where.lstrip("/")).symlink_to("/tmp")
        for where in links][:1],
    "a fifo for a file": lambda view, files, links: [(view / "root" / files[0].lstrip("/")).unlink(),
                                                     os.mkfifo(view / "root" / files[0].lstrip("/"))],
    "the view open to others": lambda view, files, links: view.chmod(0o755),
    "the view another user's": lambda view, files, links: os.chown(view, 12345, 12345),
}


@pytest.mark.parametrize("how", list(TAMPERINGS))
def test_a_view_tampered_with_in_the_fallback_temp_folder_is_staged_anew(how, layout, fallback):
    files, links = layout
    if how == "the view another user's" and os.geteuid() != 0:
        pytest.skip("only root can give a folder to another user")
    view = Path(sandbox._stage(files, links)).parent
    assert fallback in view.parents and view.name.startswith("view-") and _faithful(view, files, links)
    TAMPERINGS[how](view, files, links)
    assert not _faithful(view, files, links)
    again = Path(sandbox._stage(files, links)).parent
    assert again == view and _faithful(view, files, links), how


@pytest.mark.parametrize("holder", ["a link to another folder", "another user's folder", "a folder open to others"])
def test_the_fallback_folder_must_be_this_users_alone_or_no_view_is_staged(holder, layout, fallback):
    """Another user can create any name in /tmp first: a view is never staged or used where
    that user could change it, and ``view-...`` planted in /tmp itself is never looked at."""
    files, links = layout
    name = fallback / f"vicogym-sandbox-{os.geteuid()}"
    planted = fallback / "attackers"
    planted.mkdir()
    if holder == "a link to another folder":
        name.symlink_to(planted)
    elif holder == "another user's folder":
        if os.geteuid() != 0:
            pytest.skip("only root can give a folder to another user")
        name.mkdir(mode=0o700)
        os.chown(name, 12345, 12345)
    else:
        name.mkdir()
        name.chmod(0o777)
    with pytest.raises(SandboxUnavailable, match="no folder of this user's alone.*set XDG_CACHE_HOME"):
        sandbox._stage(files, links)
    assert not any(planted.iterdir()) and not list(fallback.glob("view-*"))


def test_views_are_staged_in_a_folder_of_this_users_alone_not_in_the_temp_folder_itself(layout, fallback):
    files, links = layout
    view = Path(sandbox._stage(files, links)).parent
    assert view.parent == fallback / f"vicogym-sandbox-{os.geteuid()}" and view.name.startswith("view-")
    info = view.parent.lstat()
    assert stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) == 0o700
    assert not list(fallback.glob("view-*"))


@pytest.fixture
def fresh_views():
    """The view staged anew for this test, and again for the tests after it."""
    sandbox._view.cache_clear()
    yield
    sandbox._view.cache_clear()


@walled
def test_a_planted_json_in_the_fallback_view_never_runs(layout, fallback, fresh_views):
    """End to end: the view in the temporary folder is changed between two processes (each
    stages its view once) so that the driver's ``import json`` exits; the next process
    stages it anew and the verifier runs."""
    files, links = layout
    assert run_untrusted("def f():\n    return 1\n", "f").value == 1
    view = Path(sandbox._view(sandbox.ALLOWED_MODULES)[1]).parents[1]  # (what bwrap mounts: view/root/...)
    assert fallback in view.parents
    _plant_json(view, files)
    sandbox._view.cache_clear()  # (a new process)
    result = run_untrusted("def f():\n    return 2\n", "f")
    assert result.ok and result.value == 2, result
    assert _faithful(view, files, links)
