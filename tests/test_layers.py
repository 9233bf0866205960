"""The architecture stays visible: each layer imports only what the layers table allows."""

import ast
from pathlib import Path

import pytest

from conftest import REPO

LAYERS = ("structures", "programs", "editors", "checks", "renderers", "sources", "envs")
ALLOWED = {
    "vicogym": set(),  # the core reaches arms only through the registry's entry points
    "structures": set(),
    "programs": {"structures"},
    "editors": {"structures", "programs"},
    "checks": {"structures", "programs"},
    "renderers": {"structures"},
    "sources": {"structures", "programs"},
    "envs": set(LAYERS),
}
HEAVY = {"matplotlib", "cv2", "bpy", "torch", "torchvision", "segment_anything", "diffusers", "ray", "pandas"}


def _imports(path: Path, top_level_only: bool = False):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


#: the instruction-following arm is not an edit arm: its synthesis command, its judge and
#: discovery tracks, its run folders and its verl reward are its own, and they read its
#: constraint registry and response edits. These core files may import those two modules
#: (and no other arm's).
INSTRUCT_MACHINERY = {"judge.py", "discovery.py", "synthesis.py", "synthesis_models.py", "instruct_runs.py",
                      "verl_reward.py"}
INSTRUCT_MODULES = {"vicogym.programs.instruct", "vicogym.editors.instruct", "vicogym.sources.instruct"}

FILES = [(folder, path) for folder in ALLOWED for path in sorted((REPO / folder).glob("*.py"))]


@pytest.mark.parametrize("folder, path", FILES, ids=[f"{f}/{p.name}" for f, p in FILES])
def test_layer_imports_follow_the_layers_table(folder, path):
    for module in _imports(path):
        parts = module.split(".")
        if folder == "vicogym" and path.name in INSTRUCT_MACHINERY and module in INSTRUCT_MODULES:
            continue
        if parts[0] == "vicogym" and len(parts) > 1 and parts[1] in LAYERS and parts[1] != folder:
            assert parts[1] in ALLOWED[folder], f"{folder}/{path.name} imports {module}"


@pytest.mark.parametrize("folder", ["vicogym", "structures", "programs", "editors", "checks"])
def test_core_and_pure_layers_import_no_heavy_dependency_at_module_level(folder):
    for path in sorted((REPO / folder).glob("*.py")):
        heavy = {m.split(".")[0] for m in _imports(path, top_level_only=True)} & HEAVY
        assert not heavy, f"{folder}/{path.name} imports {heavy} at module level"


def test_programs_and_editors_touch_no_pixels_at_all():
    for folder in ("programs", "editors", "structures"):
        for path in sorted((REPO / folder).glob("*.py")):
            assert not {m.split(".")[0] for m in _imports(path)} & HEAVY, path
