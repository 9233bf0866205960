"""The README's and docs/'s examples run as printed.

Every ```python and ```bash block of README.md and docs/*.md runs in a fresh folder of its
own (each example is standalone: imports included, its own --out), with this venv's
`python` and `vicogym` first on PATH. A block that cannot run here says why, in an HTML
comment on the line before it: `<!-- doc-test: skip REASON -->`; `<!-- doc-test: slow -->`
marks a slow one (still run).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\s*$")
MARK = re.compile(r"^<!-- doc-test: (skip|slow)\b\s*(.*?)\s*-->$")
#: the commands that write a run folder, and so must name their own
WRITERS = ("generate", "synthesize", "evolve", "export")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    mark: str = ""  # "skip", "slow" or ""
    reason: str = ""

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, each with the doc-test mark on the line before it."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
        assert end is not None, f"{page.name}:{i + 1}: a code block that never closes"
        mark = MARK.match(lines[i - 1].strip()) if i else None
        found.append(Block(page, i + 1, opening.group(1), "\n".join(lines[i + 1:end]) + "\n",
                           mark.group(1) if mark else "", mark.group(2) if mark else ""))
        i = end + 1
    return found


ALL = [b for page in PAGES for b in blocks(page)]
RUNNABLE = [b for b in ALL if b.language in ("python", "bash")]


def _param(block: Block):
    marks = [pytest.mark.slow] if block.mark == "slow" else []
    return pytest.param(block, id=block.name, marks=marks)


@pytest.mark.parametrize("block", [_param(b) for b in RUNNABLE])
def test_the_example_runs_as_printed(block: Block, tmp_path: Path):
    if block.mark == "skip":
        pytest.skip(f"{block.name}: {block.reason}")
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    env.pop("PYTHONPATH", None)  # the examples see the installed package, as a user does
    if block.language == "python":
        command = [sys.executable, "-c", block.code]
    else:
        command = ["bash", "-euo", "pipefail", "-c", block.code]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (
        f"{block.name} failed (exit {done.returncode}):\n--- stdout\n{done.stdout[-3000:]}\n"
        f"--- stderr\n{done.stderr[-3000:]}"
    )


def test_every_skip_says_why_and_every_mark_sits_on_a_block():
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if "doc-test" not in line:
                continue
            mark = MARK.match(line.strip())
            assert mark, f"{page.name}:{i + 1}: expected '<!-- doc-test: skip REASON -->' or '<!-- doc-test: slow -->'"
            assert i + 1 < len(lines) and FENCE.match(lines[i + 1]), f"{page.name}:{i + 1}: no code block follows"
            if mark.group(1) == "skip":
                assert len(mark.group(2).split()) >= 3, f"{page.name}:{i + 1}: say why the example cannot run here"
    assert sum(b.mark != "skip" for b in RUNNABLE) >= 20, "most examples must run"


def _outs(block: Block) -> list[tuple[str, str]]:
    """The (command, --out) of every run-writing vicogym command in ``block``."""
    code = re.sub(r"\\\n\s*", " ", block.code)  # continuation lines joined
    found = []
    for line in code.splitlines():
        line = line.split(" #")[0].strip()
        if not line.startswith("vicogym "):
            continue
        words = shlex.split(line)
        if words[1] not in WRITERS:
            continue
        if "--out" in words:
            found.append((words[1], words[words.index("--out") + 1]))
        elif "--config" in words:
            found.append((words[1], "config:" + words[words.index("--config") + 1]))
        else:
            found.append((words[1], ""))
    return found


def test_every_example_writes_into_a_folder_of_its_own():
    """Examples tried one after another in one folder must not collide: a run folder holds
    one run, so each example that writes one names its own --out (or a config that does)."""
    seen: dict[str, str] = {}
    for block in RUNNABLE:
        for command, out in _outs(block):
            if block.page.name == "README.md" and block.mark == "skip":
                continue  # the quick start's `vicogym generate` writes the documented default
            assert out, f"{block.name}: `vicogym {command}` names no --out"
            # a block may write its own run again (to resume or extend it); no two blocks share one
            assert seen.get(out, block.name) == block.name, f"{block.name}: --out {out} is also written by {seen[out]}"
            seen[out] = block.name


def test_the_links_between_pages_resolve():
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            assert (page.parent / target).exists(), f"{page.name} links to {target}, which does not exist"


def test_the_readme_test_command_is_what_ci_runs():
    readme = next(b for b in blocks(REPO / "README.md") if b.language == "bash")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    command = readme.code.splitlines()[-1]
    for step in ('pip install -e ".[all,test]"', 'pip install --no-deps "verl==0.9.1"', "ruff check .",
                 "python -m pytest -q -n 2 --dist worksteal --durations=15"):
        assert step in command, f"the README's test command lacks {step}"
        assert step.replace('"', "").replace("--quiet ", "") in ci.replace('"', "").replace("--quiet ", ""), (
            f".ci/run lacks the README's {step}")
    assert "pip install -e . && vicogym generate" in readme.code, "the first command installs the base package only"


def _commands(block: Block) -> list[list[str]]:
    code = re.sub(r"\\\n\s*", " ", block.code)
    return [shlex.split(line.split(" #")[0]) for line in code.splitlines()
            if line.strip().startswith("vicogym ")]


@pytest.mark.parametrize("block", [pytest.param(b, id=b.name) for b in RUNNABLE
                                   if b.mark == "skip" and b.language == "bash" and _commands(b)])
def test_an_example_that_cannot_run_here_still_parses(block: Block):
    """Its flags are the CLI's and its --set names the environment's settings."""
    import typer.main

    from vicogym.cli import app
    from vicogym.registry import config_fields

    group = typer.main.get_command(app)
    for words in _commands(block):
        command = group.commands[words[1]]
        command.make_context(words[1], list(words[2:]))  # raises on an unknown flag or a bad value
        if words[1] == "generate":
            env_id = words[2] if len(words) > 2 and not words[2].startswith("-") else "vicogym/Chart-v0"
            for i, word in enumerate(words):
                if word == "--set":
                    key = words[i + 1].split("=", 1)[0]
                    assert key in config_fields(env_id), f"{block.name}: {env_id} has no setting {key!r}"
