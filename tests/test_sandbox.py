"""The sandbox for model-written verifier code: an honest verifier runs; network, file
writes, subprocesses, forbidden imports, CPU and memory bombs and hangs are refused."""

import os

import pytest

from vicogym.sandbox import run_untrusted, run_untrusted_batch

pytestmark = pytest.mark.usefixtures("walls")

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


def test_a_batch_runs_in_one_child_and_each_call_has_its_own_result():
    result = run_untrusted_batch(BATCH, "f", [(["a"], {}), (["crash"], {}), ([], {"kind": "big"}), (["not json"], {}),
                                              (["b"], {})], max_value_chars=1000)
    assert result.ok, result
    ok, crash, big, not_json, last = result.value
    assert ok.ok and ok.value == {"kind": "a"} and last.value == {"kind": "b"}
    assert not crash.ok and "ZeroDivisionError" in crash.error
    assert not big.ok and "more than the 1000 allowed" in big.error
    assert not not_json.ok and "TypeError" in not_json.error


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
