"""The report: plots and a static page, opened in a real headless browser (Debian's
Chromium) that must load every image and plot."""

import os
import re
import shutil
import subprocess

import pytest
from typer.testing import CliRunner

from vicogym.cli import app
from vicogym.runs.generate import GenerateConfig, generate


def _chromium():
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        message = "the report's browser test needs Chromium (apt-get install chromium; .ci/run installs it)"
        if os.environ.get("VICOGYM_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="module")
def rounds(tmp_path_factory):
    """Two rounds of a chart run, as `vicogym evolve` lays them out."""
    folder = tmp_path_factory.mktemp("report")
    for r in range(2):
        generate(GenerateConfig("vicogym/Chart-v0", n=4, seed=r, out=str(folder / f"round-{r:03d}"),
                                episodes_per_shard=4, env_kwargs={"k": 4}), progress=False)
    return folder


def test_the_page_loads_every_image_and_plot_in_a_real_browser(rounds, tmp_path):
    browser = _chromium()
    result = CliRunner().invoke(app, ["report", str(rounds)])
    assert result.exit_code == 0, result.output
    page = rounds / "report" / "index.html"
    for plot in ("pass_rates.png", "rounds.png", "rejections.png"):
        assert (rounds / "report" / plot).stat().st_size > 5000
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--window-size=1200,1600"]
    dom = subprocess.run([browser, *flags, "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    ok = int(re.search(r'data-images-ok="(\d+)"', dom).group(1))
    broken = int(re.search(r'data-images-broken="(\d+)"', dom).group(1))
    assert broken == 0 and ok == 3 + 8 * 2  # three plots; each of 8 samples before and after
    assert "8 shown" in dom and "round-001" in dom
    shot = tmp_path / "page.png"
    subprocess.run([browser, *flags, f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120)
    assert shot.stat().st_size > 20_000  # a page with pictures, not a blank one


def test_report_errors_are_named(tmp_path):
    result = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert result.exit_code != 0 and "holds no run" in result.output


def test_the_page_shows_each_question_familys_answers():
    import json

    from vicogym.runs.report_page import answer_table

    rows = [{"label": json.dumps({"kind": "program", "family": "comparison"}), "label_rule": "program", "answer": a}
            for a in ("yes", "no", "no")] + [{"label": "{}", "label_rule": "cell", "answer": "7"}]
    table = answer_table(rows)
    assert "<td>comparison</td><td>3</td><td>no 2 (67%), yes 1 (33%)</td>" in table
    assert "<td>cell</td><td>1</td><td>7 1 (100%)</td>" in table


def test_the_page_header_names_the_actor_of_each_rounds_pass_rates(rounds, tmp_path):
    """Each actor that gave pass rates on the page is named at its top: the simulated one as
    a stand-in with how to plug a model in, a model by its spec, with the rounds it answered."""
    import json

    folder = tmp_path / "rounds"
    shutil.copytree(rounds, folder, ignore=shutil.ignore_patterns("report"))
    path = folder / "round-001" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["env"]["env_config"]["actor"] = "openai:qwen2.5-vl@http://localhost:8000/v1"
    path.write_text(json.dumps(manifest))
    result = CliRunner().invoke(app, ["report", str(folder), "--limit", "1"])
    assert result.exit_code == 0, result.output
    page = (folder / "report" / "index.html").read_text()
    header = page.split('<p class="actor', 1)[1].split("<div", 1)[0]
    assert (' stand-in">vicogym/Chart-v0 (round-000): pass rates from the simulated actor (a stand-in, not a model); '
            "plug in a real model with --actor openai:MODEL@URL") in header
    assert ('<p class="actor">vicogym/Chart-v0 (round-001): pass rates from '
            "openai:qwen2.5-vl@http://localhost:8000/v1</p>") in header


def _plotted(monkeypatch):
    """The figures the report saves, by name: each axes' lines (points per line) and bars."""
    from matplotlib.patches import Rectangle

    from vicogym.runs.plots import Plots

    seen, save = {}, Plots.save

    def saving(self, fig, name):
        seen[name] = [([len(line.get_xdata()) for line in ax.get_lines()],
                       sum(isinstance(p, Rectangle) for p in ax.patches)) for ax in fig.axes]
        save(self, fig, name)

    monkeypatch.setattr(Plots, "save", saving)
    return seen


def test_no_plot_draws_a_line_through_one_point(rounds, tmp_path, monkeypatch):
    """A run of one round shows its per-round numbers as bars (a line over one round is a lone
    dot); two rounds get a line per series, and no plot of either has a one-point line."""
    from vicogym.runs.report_page import write_report_page

    seen = _plotted(monkeypatch)
    write_report_page(rounds / "round-000", out=tmp_path / "one")
    one = dict(seen)
    seen.clear()
    write_report_page(rounds, out=tmp_path / "two")
    for plotted in (one, seen):
        assert {"pass_rates.png", "rounds.png", "rejections.png"} <= set(plotted)
        assert all(n > 1 for axes in plotted.values() for lines, _ in axes for n in lines), plotted
    assert one["rounds.png"] == [([], 2)]  # the hit rate and the editing intensity, as bars
    assert seen["rounds.png"] == [([2, 2], 0)]
