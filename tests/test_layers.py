"""The architecture stays visible: arms x layers at the top, the kernel (``vicogym/*.py``)
below them, and the kernel's sub-packages (``vicogym/runs/``, ``vicogym/instruct/``)
beside it. Each file imports only what its room may, module-level and deferred imports
alike, in every folder and sub-folder."""

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
SUBPACKAGES = ("runs", "instruct", "evidence")
#: the trainer adapters beside the kernel (``vicogym.verl_agent``, ``vicogym.trl``): they run
#: generation's episodes inside a trainer's loop, so they may use the generation workflow
TRAINER_ADAPTERS = ("verl_agent.py", "trl.py")
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


def room(path: Path) -> str:
    """``kernel``, a sub-package's name, or an arm layer's name."""
    parts = path.relative_to(REPO).parts
    if parts[0] == "vicogym":
        if len(parts) == 2 and parts[1] in TRAINER_ADAPTERS:
            return "adapters"
        return parts[1] if len(parts) > 2 and parts[1] in SUBPACKAGES else "kernel"
    return parts[0]


def target(module: str) -> str | None:
    """The room ``module`` lives in (``None`` outside vicogym)."""
    parts = module.split(".")
    if parts[0] != "vicogym":
        return None
    if len(parts) > 1 and (parts[1] in LAYERS or parts[1] in SUBPACKAGES):
        return parts[1]
    return "kernel"


def allowed(source: str, module: str) -> bool:
    where = target(module)
    if where in (None, "kernel", source):
        return True
    if source == "kernel":
        return False  # the kernel reaches arms through the registry, workflows by name
    if source == "runs":
        return False
    if source == "adapters":
        return where == "runs"
    if source == "instruct":
        return where == "runs" or any(module == m or module.startswith(m + ".") for m in INSTRUCT_ARM)
    if source == "evidence":
        return where == "runs"
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
    kernel, runs = REPO / "vicogym" / "cli.py", REPO / "vicogym" / "runs" / "generate.py"
    assert not allowed(room(kernel), "vicogym.runs.generate") and not allowed(room(kernel), "vicogym.envs.chart")
    assert not allowed(room(runs), "vicogym.instruct.synthesis") and not allowed(room(runs), "vicogym.programs.chart")
    instruct = REPO / "vicogym" / "instruct" / "synthesis.py"
    assert allowed(room(instruct), "vicogym.programs.instruct.text") and not allowed(
        room(instruct), "vicogym.programs.chart"
    )
    assert not allowed("renderers", "vicogym.programs.chart") and allowed("checks", "vicogym.programs.chart")
    assert not allowed("editors", "vicogym.instruct.synthesis") and allowed("envs", "vicogym.instruct.synthesis")
    adapter = room(REPO / "vicogym" / "verl_agent.py")
    assert allowed(adapter, "vicogym.runs.generate") and not allowed(adapter, "vicogym.envs.chart")
    assert not allowed(adapter, "vicogym.evidence.runs") and room(REPO / "vicogym" / "serve.py") == "kernel"


@pytest.mark.parametrize("folder", ["vicogym", "structures", "programs", "editors", "checks"])
def test_core_and_pure_layers_import_no_heavy_dependency_at_module_level(folder):
    for path in sorted((REPO / folder).rglob("*.py")):
        heavy = {m.split(".")[0] for m in _imports(path, top_level_only=True)} & HEAVY
        assert not heavy, f"{path.relative_to(REPO)} imports {heavy} at module level"


def test_programs_and_editors_touch_no_pixels_at_all():
    for folder in ("programs", "editors", "structures"):
        for path in sorted((REPO / folder).rglob("*.py")):
            assert not {m.split(".")[0] for m in _imports(path)} & HEAVY, path
