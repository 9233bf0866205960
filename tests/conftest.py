import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def chartqa_dir() -> Path:
    """The real ChartQA sample: $VICOGYM_CHARTQA, or ../shared/data/chartqa beside the repo."""
    return Path(os.environ.get("VICOGYM_CHARTQA", REPO.parent / "shared" / "data" / "chartqa"))


@pytest.fixture(scope="session")
def chartqa() -> Path:
    path = chartqa_dir()
    if not (path / "qa.jsonl").is_file():
        raise FileNotFoundError(f"the real-data tests need the ChartQA sample at {path} (set VICOGYM_CHARTQA)")
    return path
