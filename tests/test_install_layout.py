"""Where the installed package is found: a script beside a clone named like the package
(``work/vicogym`` and ``work/make_all.py``) imports the installed package, not the clone's
folder as an empty namespace package; and the clone's own ``vicogym/``, imported where the
package is not installed, says how to install it."""

import base64
import csv
import hashlib
import importlib.util
import io
import os
import shlex
import subprocess
import sys
import tomllib
import zipfile

from conftest import REPO


def _backend():
    """The build backend (``build_backend/vicogym_build.py``), loaded from its file."""
    spec = importlib.util.spec_from_file_location("vicogym_build", REPO / "build_backend" / "vicogym_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


vicogym_build = _backend()

MAKE_ALL = """\
import gymnasium as gym

import vicogym

print("package", vicogym.__file__)
for env_id, _ in vicogym.list_environments():
    gym.make(env_id).close()
    print("made", env_id)
"""


def _run(args: list[str], cwd, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_a_script_beside_a_clone_named_like_the_package_makes_every_environment(tmp_path):
    (tmp_path / "vicogym").symlink_to(REPO, target_is_directory=True)
    script = tmp_path / "make_all.py"
    script.write_text(MAKE_ALL, encoding="utf-8")
    done = _run([sys.executable, str(script)], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    made = [line.split(" ", 1)[1] for line in done.stdout.splitlines() if line.startswith("made ")]
    assert made and "vicogym/Chart-v0" in made and "vicogym/CLEVR-v0" in made, done.stdout
    package = next(line.split(" ", 1)[1] for line in done.stdout.splitlines() if line.startswith("package "))
    assert package != "None" and os.path.realpath(package) == str(REPO / "vicogym" / "__init__.py")


def test_the_clones_package_without_an_install_names_the_install_command():
    # -S: no site-packages, so neither an install nor its import hook; the clone's folder is the working one
    done = _run([sys.executable, "-S", "-c", "import vicogym"], cwd=REPO, timeout=120)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: "), done.stderr
    assert f"{REPO / 'vicogym'}" in last and "vicogym.programs" in last, last
    assert f"pip install -e {shlex.quote(str(REPO))}" in last, last


def test_every_folder_of_the_package_is_in_the_distribution():
    # a wheel (pip install .) holds the packages pyproject.toml lists, and no others
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    found = set()
    for name, folder in config["package-dir"].items():
        for path in (REPO / folder).rglob("*.py"):
            if "__pycache__" not in path.parts:
                found.add(".".join([name, *path.parent.relative_to(REPO / folder).parts]))
    assert found - set(config["packages"]) == set(), "folders of .py files missing from [tool.setuptools] packages"


def _wheel(path, files: dict[str, bytes]) -> None:
    record = "".join(f"{name},{vicogym_build._record_hash(data)},{len(data)}\n" for name, data in files.items())
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
        wheel.writestr("demo-1.0.dist-info/RECORD", record + "demo-1.0.dist-info/RECORD,,\n")


def test_the_build_backend_adds_the_path_to_the_editable_wheels_pth_and_keeps_its_record_true(tmp_path):
    wheel = tmp_path / "demo-1.0-0.editable-py3-none-any.whl"
    pth = b"import __editable___demo_finder; __editable___demo_finder.install()\n"
    _wheel(wheel, {"__editable__.demo-1.0.pth": pth, "__editable___demo_finder.py": b"def install(): pass\n",
                   "demo-1.0.dist-info/METADATA": b"Name: demo\n"})
    vicogym_build.add_pth_line(wheel, "/some/clone/build/__editable__.demo-path")
    with zipfile.ZipFile(wheel) as done:
        assert done.read("__editable__.demo-1.0.pth") == pth + b"/some/clone/build/__editable__.demo-path\n"
        rows = list(csv.reader(io.StringIO(done.read("demo-1.0.dist-info/RECORD").decode())))
        assert len(rows) == 4 and rows[-1] == ["demo-1.0.dist-info/RECORD", "", ""]
        for name, digest, size in rows[:-1]:
            data = done.read(name)
            assert digest == "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert size == str(len(data))


def test_the_build_backend_links_the_package_into_a_folder_of_its_own(tmp_path):
    (tmp_path / "vicogym").mkdir()
    (tmp_path / "vicogym" / "__init__.py").write_text("", encoding="utf-8")
    for _ in range(2):  # a second install replaces the link
        folder = vicogym_build.link_package(tmp_path)
    assert folder == (tmp_path / "build" / "__editable__.vicogym-path").resolve()
    assert sorted(p.name for p in folder.iterdir()) == ["vicogym"] and (folder / "vicogym").is_symlink()
    assert (folder / "vicogym" / "__init__.py").resolve() == (tmp_path / "vicogym" / "__init__.py").resolve()
