"""vicogym: procedural, verifiable visual environments for RL post-training of VLMs.

Importing the package registers its environments with Gymnasium::

    import gymnasium, vicogym
    env = gymnasium.make("vicogym/Chart-v0", k=8)
"""

__version__ = "0.1.0"


def _require_layers() -> None:
    """In a clone the layer folders (``programs/`` ...) sit beside ``vicogym/``; only an
    install maps them into the package. Imported from a clone that is not installed, say so."""
    import importlib.util
    from pathlib import Path

    if importlib.util.find_spec("vicogym.programs") is not None:
        return
    from vicogym.install import clone_command, install_command, installed, is_clone

    here = Path(__file__).resolve().parent
    what = f"vicogym is imported from {here}, where its layers (vicogym.programs, vicogym.envs ...) are missing"
    if not is_clone(here.parent):
        raise ImportError(f"{what}; reinstall vicogym: {install_command()} --force-reinstall")
    distribution = installed()
    if distribution is not None:
        raise ImportError(f"{what}: it is a clone's package folder, found before the vicogym installed in "
                          f"{distribution.locate_file('')}; run from another folder, or install this clone "
                          f"instead: {clone_command(here.parent)}")
    raise ImportError(f"{what}: it is a clone's package folder, and a clone works once installed, which maps its "
                      f"layer folders into the package; install it with {clone_command(here.parent)}")


_require_layers()

from vicogym import spaces as _spaces  # noqa: F401  (text observations in vector envs)
from vicogym.registry import list_environments, make, register

register(
    "vicogym/Chart-v0",
    "vicogym.envs.chart:ChartEnv",
    description="chart questions (matplotlib) from tables; edits of values, rows, series and style",
)
register(
    "vicogym/CLEVR-v0",
    "vicogym.envs.clevr:ClevrEnv",
    description="CLEVR scenes (Blender) with functional programs; edits of objects, camera and lights",
)
register(
    "vicogym/Natural-v0",
    "vicogym.envs.natural:NaturalEnv",
    description="natural images with protected targets (GrabCut or Segment Anything); edits of the surroundings",
)
register(
    "vicogym/Geometry-v0",
    "vicogym.envs.geometry:GeometryEnv",
    description="plane-geometry diagrams (matplotlib, to scale) from constructions solved exactly; edits of givens, "
                "points, auxiliary lines, distractors, labels, where givens are shown and style",
)
register(
    "vicogym/Instruct-v0",
    "vicogym.envs.instruct:InstructEnv",
    description="instruction following with verifiable constraints (VISA); one response per episode, reward = "
                "constraint pass rate",
)
register(
    "vicogym/Evidence-v0",
    "vicogym.envs.evidence:EvidenceEnv",
    description="evidence reading (ViewCraft): an executor zooms, notes, views and composes units of forms, slide "
                "decks, charts and CLEVR scenes, then answers; reward = the task's score",
)


def make_dataset(env_id: str, size: int = 64, seed: int = 0, **settings):
    """``size`` label-valid samples of ``env_id`` in memory, entry ``i`` as row ``i`` of
    ``vicogym generate`` with these settings (see :func:`vicogym.runs.datasets.make_dataset`)."""
    from vicogym.runs.datasets import make_dataset as build

    return build(env_id, size, seed, **settings)


__all__ = ["__version__", "list_environments", "make", "make_dataset", "register"]
