"""The architecture stays visible: arms x layers, the kernel (``vicogym/*.py``) below them,
the rooms beside it (``vicogym/runs/``, ``instruct/``, ``evidence/``, ``trainers/``), and
the command line (``vicogym/cli.py``) on top, the one module that may import everything.
Each file imports only what its room may, module-level and deferred imports alike, in
every folder and sub-folder."""

import ast
from pathlib import Path

import pytest
from conftest import REPO

LAYERS = ("structures", "programs", "editors", "checks", "renderers", "sources", "envs")
#: arm layer -> the arm layers it may import (the layers table of the README)
LAYER_IMPORTS = {
    "structures": set(),
    "programs": {"structures"},
    "editors": {"structures", "programs"},
    "checks": {"structures", "programs"},
    "renderers": {"structures"},
    "sources": {"structures", "programs"},
    "envs": set(LAYERS),
}
SUBPACKAGES = ("runs", "instruct", "evidence", "trainers")
#: room -> the rooms it may import besides the kernel: the workflows' rooms use generation's
#: runs; the trainers run generation's episodes and the evidence method inside a trainer's loop
ROOM_IMPORTS = {"runs": set(), "instruct": {"runs"}, "evidence": {"runs"}, "trainers": {"runs", "evidence"}}
#: the instruction-following method reads its arm's constraint types, edits and facts
INSTRUCT_ARM = {"vicogym.programs.instruct", "vicogym.editors.instruct", "vicogym.sources.instruct"}
HEAVY = {"matplotlib", "cv2", "bpy", "torch", "torchvision", "segment_anything", "diffusers", "ray", "pandas",
         "tesserocr"}


def _imports(path: Path, top_level_only: bool = False):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


#: the package's front door (``vicogym/__init__.py``) may name these workflows, each by a
#: deferred import, besides what the kernel may: ``vicogym.make_dataset`` is generation's
FRONT_IMPORTS = {"vicogym.runs.datasets"}


def room(path: Path) -> str:
    """``kernel``, ``front`` (the package's ``__init__``), a sub-package's name, or an arm layer's name."""
    parts = path.relative_to(REPO).parts
    if parts[0] == "vicogym":
        if parts[1:] == ("cli.py",):
            return "cli"
        if parts[1:] == ("__init__.py",):
            return "front"
        return parts[1] if len(parts) > 2 and parts[1] in SUBPACKAGES else "kernel"
    return parts[0]


def target(module: str) -> str | None:
    """The room ``module`` lives in (``None`` outside vicogym)."""
    parts = module.split(".")
    if parts[0] != "vicogym":
        return None
    if parts[1:2] == ["cli"]:
        return "cli"
    if len(parts) > 1 and (parts[1] in LAYERS or parts[1] in SUBPACKAGES):
        return parts[1]
    return "kernel"


def allowed(source: str, module: str) -> bool:
    where = target(module)
    if source == "cli":
        return True  # the top of the graph
    if where == "cli":
        return False  # nothing imports the command line
    if source == "front":
        return module in FRONT_IMPORTS or allowed("kernel", module)
    if where in (None, "kernel", source):
        return True
    if source == "kernel":
        return False  # the kernel reaches arms through the registry, never a room or a layer
    if source in ROOM_IMPORTS:
        if source == "instruct" and any(module == m or module.startswith(m + ".") for m in INSTRUCT_ARM):
            return True
        return where in ROOM_IMPORTS[source]
    if where in SUBPACKAGES:  # an arm's environment may run on its method's machinery
        return source == "envs"
    return where in LAYER_IMPORTS[source]


FILES = sorted(p for folder in ("vicogym", *LAYERS) for p in (REPO / folder).rglob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(REPO)) for p in FILES])
def test_each_file_imports_only_what_its_room_may(path):
    source = room(path)
    for module in _imports(path):
        assert allowed(source, module), f"{path.relative_to(REPO)} ({source}) imports {module}"


def test_the_rules_refuse_what_the_architecture_forbids():
    kernel, runs = REPO / "vicogym" / "registry.py", REPO / "vicogym" / "runs" / "generate.py"
    assert not allowed(room(kernel), "vicogym.runs.generate") and not allowed(room(kernel), "vicogym.envs.chart")
    assert not allowed(room(runs), "vicogym.instruct.synthesis") and not allowed(room(runs), "vicogym.programs.chart")
    instruct = REPO / "vicogym" / "instruct" / "synthesis.py"
    assert allowed(room(instruct), "vicogym.programs.instruct.text") and not allowed(
        room(instruct), "vicogym.programs.chart"
    )
    assert not allowed("renderers", "vicogym.programs.chart") and allowed("checks", "vicogym.programs.chart")
    assert not allowed("editors", "vicogym.instruct.synthesis") and allowed("envs", "vicogym.instruct.synthesis")
    trainer = room(REPO / "vicogym" / "trainers" / "verl_agent.py")
    assert allowed(trainer, "vicogym.runs.generate") and allowed(trainer, "vicogym.evidence.protocol")
    assert not allowed(trainer, "vicogym.envs.chart") and not allowed(trainer, "vicogym.instruct.synthesis")
    assert not allowed(room(kernel), "vicogym.trainers.trl") and not allowed(room(runs), "vicogym.trainers.common")
    assert not allowed(room(REPO / "vicogym" / "evidence" / "runs.py"), "vicogym.trainers.common")
    cli = room(REPO / "vicogym" / "cli.py")
    assert cli == "cli" and allowed(cli, "vicogym.evidence.craft") and allowed(cli, "vicogym.trainers.openenv")
    front = room(REPO / "vicogym" / "__init__.py")
    assert allowed(front, "vicogym.runs.datasets") and allowed(front, "vicogym.registry")
    assert not allowed(front, "vicogym.runs.generate") and not allowed(front, "vicogym.envs.chart")
    assert not allowed(trainer, "vicogym.cli") and not allowed(room(REPO / "vicogym" / "registry.py"), "vicogym.cli")


@pytest.mark.parametrize("folder", ["vicogym", "structures", "programs", "editors", "checks"])
def test_core_and_pure_layers_import_no_heavy_dependency_at_module_level(folder):
    for path in sorted((REPO / folder).rglob("*.py")):
        heavy = {m.split(".")[0] for m in _imports(path, top_level_only=True)} & HEAVY
        assert not heavy, f"{path.relative_to(REPO)} imports {heavy} at module level"


def test_programs_and_editors_touch_no_pixels_at_all():
    for folder in ("programs", "editors", "structures"):
        for path in sorted((REPO / folder).rglob("*.py")):
            assert not {m.split(".")[0] for m in _imports(path)} & HEAVY, path


def test_the_command_line_is_the_top_of_the_graph():
    """The CLI reaches every workflow by a plain import the rules above can see (no import
    by a name in a string), and every room's workflow is among them."""
    cli = REPO / "vicogym" / "cli.py"
    rooms = {target(m) for m in _imports(cli)}
    assert {"runs", "instruct", "evidence", "trainers"} <= rooms
    assert "importlib" not in {m.split(".")[0] for m in _imports(cli)}


def _where_things_live() -> dict[str, str]:
    """The README's "Where things live" table: folder cell -> what it holds."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Where things live", 1)[1].split("\n## ", 1)[0]
    rows = [line.split(" | ", 1) for line in section.splitlines() if line.startswith("| `")]
    return {folder.strip("| "): holds for folder, holds in rows}


def test_the_readme_says_where_every_module_lives():
    """Every folder the README's table names exists, and every module of the kernel and of
    each room is named in its row: a module added, moved or renamed shows up here."""
    import re

    table = _where_things_live()
    named = {"`vicogym/`": "vicogym", **{f"`vicogym/{r}/`": f"vicogym/{r}" for r in SUBPACKAGES}}
    for cell in table:
        for path in re.findall(r"`([^`]+)`", cell):
            assert (REPO / path).exists(), f"README's table names {path}, which is not in the tree"
    for cell, folder in named.items():
        assert cell in table, f"README's table has no row for {cell}"
        words = set(re.findall(r"`(\w+)`", table[cell]))
        for module in sorted((REPO / folder).glob("*.py")):
            if module.stem not in ("__init__", "cli"):
                assert module.stem in words, f"README's row for {cell} does not name {module.stem}"
