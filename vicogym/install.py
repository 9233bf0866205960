"""The pip command that installs vicogym, or one of its extras, where this vicogym is: every
install hint of the package comes from :func:`install_command`.

An editable install of a clone (``pip install -e .``) is told from an installed
distribution by the distribution's own record of where it came from (PEP 610's
``direct_url.json``, read through :mod:`importlib.metadata`): a clone's extras go in with
``pip install -e 'CLONE[extra]'``, a distribution's with ``pip install 'vicogym[extra]'``.
Without an installed distribution (a clone on ``sys.path`` that is not installed), the
package's own folder decides.
"""

from __future__ import annotations

import importlib.metadata
import json
import shlex
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

DISTRIBUTION = "vicogym"
#: verl goes in without its dependencies (its pins clash with Blender's), beside the trainers extra
VERL = "verl==0.9.1"


def is_clone(folder: Path) -> bool:
    """Whether ``folder`` is a clone of vicogym: its project file beside the package folder."""
    project = folder / "pyproject.toml"
    if not (project.is_file() and (folder / "vicogym" / "__init__.py").is_file()):
        return False
    try:
        return 'name = "vicogym"' in project.read_text(encoding="utf-8")
    except OSError:
        return False


def editable_source(distribution: importlib.metadata.Distribution) -> Path | None:
    """The folder an editable install of ``distribution`` points at (its PEP 610
    ``direct_url.json`` with ``dir_info.editable``); ``None`` for any other install."""
    text = distribution.read_text("direct_url.json")
    if not text:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("dir_info"), dict):
        return None
    url = urlsplit(str(record.get("url", "")))
    if not record["dir_info"].get("editable") or url.scheme != "file":
        return None
    return Path(url2pathname(url.path))


def installed() -> importlib.metadata.Distribution | None:
    """vicogym's installed distribution: the first on ``sys.path`` an installer recorded
    (its ``RECORD``); not a build's metadata, such as ``vicogym.egg-info`` in a clone,
    which is found first when the clone is the working folder."""
    for distribution in importlib.metadata.distributions(name=DISTRIBUTION):
        if distribution.read_text("RECORD") is not None:
            return distribution
    return None


def source_dir() -> Path | None:
    """The clone vicogym is installed from in editable mode; the clone this package sits in
    when it is not installed at all; ``None`` for an installed distribution."""
    distribution = installed()
    if distribution is None:
        root = Path(__file__).resolve().parents[1]  # this file is vicogym/install.py
        return root if is_clone(root) else None
    return editable_source(distribution)


def clone_command(clone: Path, extra: str | None = None) -> str:
    """``pip install -e 'CLONE[extra]'``, quoted for a shell."""
    return "pip install -e " + shlex.quote(f"{clone}[{extra}]" if extra else str(clone))


def install_command(extra: str | None = None) -> str:
    """The pip command that installs vicogym's ``extra`` (vicogym itself without one) where
    this vicogym is: ``pip install -e 'CLONE[extra]'`` for an editable install of a clone,
    ``pip install 'vicogym[extra]'`` for an installed distribution."""
    clone = source_dir()
    if clone is not None:
        return clone_command(clone, extra)
    return "pip install " + shlex.quote(f"{DISTRIBUTION}[{extra}]" if extra else DISTRIBUTION)


def verl_install_command() -> str:
    """What installs verl for vicogym's adapter: the trainers extra, then verl without its
    dependencies."""
    return f"{install_command('trainers')} && pip install --no-deps {shlex.quote(VERL)}"
