"""The sandbox for model-written verifier code: an honest verifier runs; network, file
writes, subprocesses, forbidden imports, CPU and memory bombs and hangs are refused."""

import os
import sys

import pytest

from vicogym.sandbox import run_untrusted

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the sandbox needs POSIX resource limits")

VERIFIER = """
import re

def verify(response, n):
    count = len(re.findall(r"\\w+", response))
    return {"pass": count <= n, "actual": count}
"""


def test_an_honest_verifier_runs_and_returns_json():
    result = run_untrusted(VERIFIER, "verify", ["one two three", 5])
    assert result.ok and result.value == {"pass": True, "actual": 3}


@pytest.mark.parametrize("code, refused", [
    ("import socket\ndef f():\n    return 1", "allows only"),
    ("def f():\n    import os\n    return os.getcwd()", "allows only"),
    ("def f():\n    return ().__class__.__base__.__subclasses__() and __import__('socket').socket()", "allows only"),
    ("def f():\n    return open('/tmp/vicogym-sandbox-test', 'w')", "NameError"),
    ("import json\ndef f():\n    return json.__loader__.__class__", "TypeError"),  # not JSON: refused as output
    ("def f():\n    return eval('1 + 1')", "NameError"),
])
def test_forbidden_imports_builtins_and_outputs_are_refused(code, refused):
    result = run_untrusted(code, "f")
    assert not result.ok and refused in result.error, result


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


def test_cpu_and_memory_bombs_and_hangs_are_stopped():
    cpu = run_untrusted("def f():\n    while True:\n        pass", "f", cpu_seconds=1, timeout=20)
    assert not cpu.ok and ("CPU time" in cpu.error or "timeout" in cpu.error), cpu
    memory = run_untrusted("def f():\n    return len(bytearray(4 * 1024 ** 3))", "f", memory_mb=128)
    assert not memory.ok and "MemoryError" in memory.error, memory
    hang = run_untrusted("import time\ndef f():\n    time.sleep(60)", "f", timeout=2, allowed=("time",))
    assert not hang.ok and "timeout" in hang.error, hang


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
