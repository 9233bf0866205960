"""The build backend: setuptools' own (``setuptools.build_meta``), with one addition to an
editable install (``pip install -e .``).

setuptools installs a clone whose layer folders are mapped into the package (``programs/``
as ``vicogym.programs``, ...) through an import hook that Python asks only after its own
search of ``sys.path``. That search takes a folder named ``vicogym`` without an
``__init__.py`` on an earlier entry for a namespace package and never asks the hook, so a
script beside the clone (``work/vicogym`` and ``work/make_all.py``) imported the clone's
root as an empty namespace package. Python prefers a *regular* package on any entry of
``sys.path`` to namespace portions on earlier ones, so the editable install here also puts
one on the path: ``build/__editable__.vicogym-path/vicogym``, a link to the clone's
``vicogym/``, named by a line added to the install's ``.pth`` file. The hook still finds
the layers (``vicogym.programs`` ...), and files added to the clone later are found
without reinstalling; moving the clone or deleting ``build/`` needs ``pip install -e .``
again.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import zipfile
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  (every other hook is setuptools' own)

#: the folder put on ``sys.path``, relative to the project: it holds ``vicogym``, a link to the package
PATH_DIR = Path("build", "__editable__.vicogym-path")
PACKAGE = "vicogym"


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    name = _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
    if _mode(config_settings) != "strict":  # a strict install's link tree is a regular package already
        path_dir = link_package(Path.cwd())
        add_pth_line(Path(wheel_directory, name), str(path_dir))
    return name


def _mode(config_settings) -> str:
    settings = config_settings or {}
    return str(settings.get("editable_mode") or settings.get("editable-mode") or "lenient").lower()


def link_package(project: Path) -> Path:
    """Make ``PROJECT/PATH_DIR/vicogym`` a link to ``PROJECT/vicogym``; return the folder."""
    folder = (project / PATH_DIR).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / PACKAGE
    if link.is_symlink() or link.is_file():
        link.unlink()
    os.symlink(os.path.relpath(project.resolve() / PACKAGE, folder), link, target_is_directory=True)
    return folder


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


def add_pth_line(wheel: Path, line: str) -> None:
    """Append ``line`` to the ``.pth`` file at the top of ``wheel`` and rewrite its RECORD."""
    with zipfile.ZipFile(wheel) as source:
        entries = [(info, source.read(info)) for info in source.infolist()]
    pth = [info.filename for info, _ in entries if "/" not in info.filename and info.filename.endswith(".pth")]
    record = [info.filename for info, _ in entries if info.filename.endswith(".dist-info/RECORD")]
    if len(pth) != 1 or len(record) != 1:
        raise RuntimeError(f"{wheel.name}: expected one .pth file and one RECORD, found {pth} and {record}")
    changed = {}
    for info, data in entries:
        if info.filename == pth[0]:
            changed[info.filename] = data.rstrip(b"\n") + b"\n" + line.encode("utf-8") + b"\n"
    rows = []
    for info, data in entries:
        if info.filename == record[0]:
            for row in csv.reader(io.StringIO(data.decode("utf-8"))):
                if row and row[0] in changed:
                    row = [row[0], _record_hash(changed[row[0]]), str(len(changed[row[0]]))]
                rows.append(row)
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    changed[record[0]] = text.getvalue().encode("utf-8")
    partial = wheel.with_suffix(".partial")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as target:
        for info, data in entries:
            target.writestr(info, changed.get(info.filename, data))
    partial.replace(wheel)
