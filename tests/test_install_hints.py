"""Every install hint of the package comes from one helper, :func:`vicogym.install.install_command`,
and is right where this vicogym is: ``pip install -e 'CLONE[extra]'`` for an editable
install of a clone (this checkout), ``pip install 'vicogym[extra]'`` for an installed
distribution; ``python -m vicogym.trainers.verl_agent`` without verl fails loudly."""

import ast
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from vicogym import install, ocr
from vicogym.errors import MissingExtra
from vicogym.registry import register, unregister

#: folders whose .py files ship in the package
PACKAGE_FOLDERS = ("vicogym", "programs", "editors", "renderers", "envs", "sources", "structures", "checks", "assets")
#: a name of a file or folder: no separator, no NUL
SEGMENTS = st.text(st.characters(blacklist_characters="/\0", blacklist_categories=("Cs",)), min_size=1,
                   max_size=12).filter(lambda name: name not in (".", ".."))
EXTRAS = st.sampled_from(["trainers", "clevr", "natural", "ray", "ocr", "all", "test"])


def _distribution(folder: Path, direct_url: dict | None, record: bool = True) -> Path:
    """A vicogym distribution's metadata in ``folder``, as an installer writes it."""
    info = folder / "vicogym-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vicogym\nVersion: 0.1.0\n", encoding="utf-8")
    if record:
        (info / "RECORD").write_text("vicogym/__init__.py,,\n", encoding="utf-8")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url), encoding="utf-8")
    return folder


def test_an_editable_install_of_this_clone_names_the_clone():
    # the venv the tests run in holds this checkout as an editable install
    assert install.source_dir() == REPO
    assert install.install_command("trainers") == f"pip install -e {shlex.quote(f'{REPO}[trainers]')}"
    assert install.install_command() == f"pip install -e {shlex.quote(str(REPO))}"


@settings(max_examples=60, deadline=None)
@given(parts=st.lists(SEGMENTS, min_size=1, max_size=4), extra=EXTRAS)
def test_an_editable_install_anywhere_names_its_folder_in_a_command_a_shell_reads_back(tmp_path_factory, parts,
                                                                                       extra):
    source = Path("/", *parts)
    folder = _distribution(tmp_path_factory.mktemp("site"), {"url": source.as_uri(), "dir_info": {"editable": True}})
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(folder))
        command = install.install_command(extra)
    assert shlex.split(command) == ["pip", "install", "-e", f"{source}[{extra}]"]


@pytest.mark.parametrize("direct_url", [
    None,  # from an index: no direct_url.json
    {"url": "file:///home/someone/vicogym", "dir_info": {}},  # pip install /home/someone/vicogym
    {"url": "https://example.org/vicogym-0.1.0-py3-none-any.whl", "archive_info": {}},
    {"url": "https://github.com/someone/vicogym", "vcs_info": {"vcs": "git", "commit_id": "0" * 40}},
])
def test_an_installed_distribution_that_is_not_editable_gets_the_plain_command(tmp_path, monkeypatch, direct_url):
    monkeypatch.syspath_prepend(str(_distribution(tmp_path, direct_url)))
    assert install.install_command("ocr") == "pip install 'vicogym[ocr]'"
    assert install.install_command() == "pip install vicogym"
    # every hint site follows: an arm's missing extra, the reader's, the server's
    register("vicogym/ToyExtra-v0", "helpers.toy_arm:NeedsExtraEnv")
    try:
        with pytest.raises(MissingExtra, match=r"installs: pip install 'vicogym\[toyextra\]' \(or \[all\]"):
            gym.make("vicogym/ToyExtra-v0")
    finally:
        unregister("vicogym/ToyExtra-v0")
    monkeypatch.setitem(sys.modules, "tesserocr", None)
    assert "install it with pip install 'vicogym[ocr]' (the tesserocr binding)" in ocr.unavailable()


def test_a_builds_metadata_in_the_working_folder_is_not_the_install(tmp_path, monkeypatch):
    # vicogym.egg-info in a clone is found first when the clone is the working folder: it records no install
    info = tmp_path / "vicogym.egg-info"
    info.mkdir()
    (info / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: vicogym\nVersion: 0.1.0\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert install.install_command("ray") == f"pip install -e {shlex.quote(f'{REPO}[ray]')}"


def test_without_an_install_the_folder_the_package_sits_in_decides(tmp_path, monkeypatch):
    monkeypatch.setattr(install.importlib.metadata, "distributions", lambda **_: iter(()))
    assert install.install_command("natural") == f"pip install -e {shlex.quote(f'{REPO}[natural]')}"
    # files that are not a clone's (a copy of the package, unpacked somewhere)
    monkeypatch.setattr(install, "__file__", str(tmp_path / "site-packages" / "vicogym" / "install.py"))
    assert install.install_command("natural") == "pip install 'vicogym[natural]'"


def test_the_servers_hint_from_a_clone_is_the_editable_command(monkeypatch):
    # every openenv module another test of this process imported is hidden too: an import of
    # openenv.core.* already in sys.modules would succeed, and serve would start a server
    for name in [n for n in sys.modules if n == "openenv" or n.startswith("openenv.")] or ["openenv"]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "vicogym.trainers.openenv", raising=False)
    import vicogym.trainers

    # `from vicogym.trainers import openenv` takes the package's attribute before sys.modules
    monkeypatch.delattr(vicogym.trainers, "openenv", raising=False)
    from vicogym.cli import app

    result = CliRunner().invoke(app, ["serve", "vicogym/Chart-v0"])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert f"install them with pip install -e {shlex.quote(f'{REPO}[trainers]')}" in " ".join(result.output.split())


def test_the_readers_hint_from_a_clone_is_the_editable_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "tesserocr", None)
    assert f"install it with pip install -e {shlex.quote(f'{REPO}[ocr]')} (the tesserocr binding)" in ocr.unavailable()


def _string_constants(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def test_no_install_command_is_written_out_anywhere_but_the_helper():
    found = []
    for folder in PACKAGE_FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            if path == REPO / "vicogym" / "install.py":
                continue
            found += [f"{path.relative_to(REPO)}:{line}" for line, text in _string_constants(path)
                      if "pip install" in text]
    assert not found, f"install hints written out instead of vicogym.install.install_command: {found}"


VERL_BLOCKED = "import runpy, sys; sys.modules['verl'] = None; runpy.run_module({module!r}, run_name='__main__')"


def test_the_verl_overrides_without_verl_fail_loudly_with_the_install_line():
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", VERL_BLOCKED.format(module="vicogym.trainers.verl_agent")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and done.stdout == ""  # inside $(...) nothing would stand for the overrides
    assert "Traceback" not in done.stderr, done.stderr
    verl = f"pip install -e {shlex.quote(f'{REPO}[trainers]')} && pip install --no-deps verl==0.9.1"
    assert done.stderr.strip() == (f"error: vicogym.trainers.verl_agent needs verl (No module named "
                                   f"'verl.experimental'; 'verl' is not a package); install it with {verl}")


def test_the_verl_adapter_imported_without_verl_names_the_install_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "verl", None)
    monkeypatch.delitem(sys.modules, "vicogym.trainers.verl_agent", raising=False)
    with pytest.raises(MissingExtra, match=r"needs verl .*install it with pip install -e .*&& pip install --no-deps"):
        import vicogym.trainers.verl_agent  # noqa: F401
