import os

# native thread pools would spin on the few cores the tests share with the renderer
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

from pathlib import Path

import pytest

import vicogym

REPO = Path(__file__).resolve().parents[1]
REQUIRE_DATA = os.environ.get("VICOGYM_REQUIRE_DATA") == "1"
REQUIRE_SANDBOX = os.environ.get("VICOGYM_REQUIRE_SANDBOX") == "1"
REQUIRE_OCR = os.environ.get("VICOGYM_REQUIRE_OCR") == "1"

#: Python for a child process: its peak resident memory in bytes. ``ru_maxrss`` would not
#: do: Linux carries the parent's peak into a child across fork and exec, so a child of a
#: large test worker would report the worker's memory; ``VmHWM`` belongs to the child alone.
CHILD_PEAK_RSS = ("int(next(line for line in open('/proc/self/status') if line.startswith('VmHWM:')).split()[1])"
                  " * 1024")


def _status(field: str) -> int:
    with open("/proc/self/status") as status:
        return int(next(line for line in status if line.startswith(field + ":")).split()[1]) * 1024


def start_peak_rss() -> int:
    """Start measuring this process's peak resident memory afresh (the kernel's high-water
    mark set back to what is resident now); returns the resident bytes it starts from."""
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    return _status("VmRSS")


def peak_rss() -> int:
    """This process's peak resident memory in bytes since :func:`start_peak_rss`."""
    return _status("VmHWM")


# the toy arm joins the registry the way any arm does: one registration, no core change
vicogym.register("vicogym/Toy-v0", "helpers.toy_arm:ToyEnv", description="test-only arm: count the squares")


def chartqa_dir() -> Path:
    """The real ChartQA sample: $VICOGYM_CHARTQA, or ../shared/data/chartqa beside the repo."""
    return Path(os.environ.get("VICOGYM_CHARTQA", REPO.parent / "shared" / "data" / "chartqa"))


def chartqa_missing(path: Path) -> str | None:
    """Why the real-data tests cannot read the ChartQA sample at ``path`` (``None``: they can)."""
    if (path / "qa.jsonl").is_file():
        return None
    return (f"the real-data tests need the ChartQA sample (qa.jsonl, tables/*.csv), not found at {path}: set "
            f"VICOGYM_CHARTQA to its folder; README.md, section Tests, says what it is and where it comes from")


@pytest.fixture(scope="session")
def chartqa() -> Path:
    path = chartqa_dir()
    message = chartqa_missing(path)
    if message is not None:
        if REQUIRE_DATA:  # CI has the data: a skip there would hide lost coverage
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def walls() -> None:
    """The operating-system sandbox model-written code runs in (``vicogym.instruct.sandbox``): where
    it cannot start, the code does not run, so a test of such code is skipped (failed on
    CI, which installs bubblewrap)."""
    from vicogym.instruct.sandbox import SandboxUnavailable, check_sandbox

    try:
        check_sandbox()
    except SandboxUnavailable as exc:
        message = f"model-written code runs only behind the OS sandbox, which cannot start here: {exc}"
        if REQUIRE_SANDBOX:
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="session")
def tesseract():
    """The real reader (``vicogym.ocr``): where Tesseract or its English data is missing, a
    test that reads text is skipped, saying what to install (failed on CI, which installs
    them)."""
    from vicogym import ocr

    reason = ocr.unavailable()
    if reason is not None:
        message = f"this test reads text with Tesseract, which cannot run here: {reason}"
        if REQUIRE_OCR:
            pytest.fail(message)
        pytest.skip(message)
    return ocr.reader()


@pytest.fixture
def serve():
    """Start fake OpenAI-compatible servers (``test_clients.ChatServer``) answering a script;
    closed after the test."""
    from test_clients import ChatServer

    servers = []

    def start(*script):
        servers.append(ChatServer(script))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


@pytest.fixture(autouse=True)
def _constraint_registry():
    """Each test sees the seed constraint types only: types a test registers or a synthesis
    run discovers are removed after it (the registry is process-wide)."""
    from vicogym.programs.instruct import REGISTRY

    before = dict(REGISTRY)
    yield
    REGISTRY.clear()
    REGISTRY.update(before)
