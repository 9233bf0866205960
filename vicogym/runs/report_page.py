"""A report to look at a run (``vicogym report DIR``): a static HTML page to browse the
samples, with filters, and PNG plots made with matplotlib.

``DIR`` is a generation run, or a folder of rounds (``round-000/``, ``round-001/`` ...,
each a run, as ``vicogym evolve`` writes them). The page shows each sample's image, the
image it was edited from, its question, answer, label rule, pass rate before and after
and its edit trace; it filters by text, label rule, round and sweet zone. The plots:
pass-rate histograms before and after editing, sweet-zone hit rate and editing intensity
``|p_before - p|`` per round, and rejection reasons by code; a table gives each question
family's answers and their shares. An evolve folder's round table (``evolve.json``) adds
the strong and weak actors' pass rates before and after editing, the held-out accuracy of
each round's trained actor and the lengths of the rewriter's edit instructions and the
actor's answers, per round. Everything is written into
``DIR/report/`` (or ``--out``); the page needs no server.
"""

from __future__ import annotations

import html
import json
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from vicogym.errors import RunError
from vicogym.rewards import sweet_share
from vicogym.runs.kinds import options, plot_images, report_out, save_image, write_page
from vicogym.runs.plots import Plots, count_bars, counts_axis, nothing_to_show, per_round, rate_bins


def rounds_of(folder: Path) -> list[tuple[str, Path]]:
    """The runs of ``folder``: itself, or its ``round-*`` subfolders, in order."""
    if (folder / "manifest.json").is_file():
        return [("run", folder)]
    rounds = sorted(p for p in folder.glob("round-*") if (p / "manifest.json").is_file())
    if not rounds:
        raise RunError(f"{folder} holds no run (no manifest.json) and no round-* folders of runs")
    return [(p.name, p) for p in rounds]


def _who(manifests: dict[str, dict]) -> str:
    """The actor the plots name: the one that gave every pass rate shown, or "the actors"."""
    from vicogym.runs.verify import run_actor

    actors = {run_actor(m) for m in manifests.values()}
    if len(actors) != 1:
        return "the actors"
    actor = actors.pop()
    name = actor.name if len(actor.name) <= 48 else actor.name[:45] + "..."
    return name + (" (a stand-in)" if actor.stand_in else "")


def _plots(out: Path, data: list[dict[str, Any]], manifests: dict[str, dict], zone: tuple[float, float]) -> list[str]:
    plots = Plots(out, dpi=100)
    k = max((int((m.get("env", {}).get("env_config") or {}).get("k", 8)) for m in manifests.values()), default=8)
    fig, ax = plots.figure((6, 3.5))
    if data:
        ax.hist([[d["pass_rate_before"] for d in data], [d["pass_rate"] for d in data]], bins=rate_bins(k),
                label=["before editing", "after editing"], color=["#999999", "#1f77b4"])
        ax.axvspan(*zone, color="#2ca02c", alpha=0.12, label="sweet zone")
        ax.set_xlim(-0.5 / k, 1 + 0.5 / k)
        ax.set_xlabel(f"pass rate of {_who(manifests)} ({k} answers per sample)")
        ax.set_ylabel("samples")
        counts_axis(ax.yaxis)
        ax.legend()
    else:
        nothing_to_show(ax, "no samples")
    ax.set_title("Pass rates before and after editing")
    plots.save(fig, "pass_rates.png")

    rounds = list(manifests)
    hit = [sweet_share((d["pass_rate"] for d in data if d["round"] == r), zone) for r in rounds]
    intensity = [np.mean([abs(d["pass_rate_before"] - d["pass_rate"]) for d in data if d["round"] == r] or [0.0])
                 for r in rounds]
    fig, ax = plots.figure((6, 3.5))
    per_round(ax, rounds, {"sweet-zone hit rate": hit, "editing intensity |p_before - p|": intensity})
    ax.set_title("Per round")
    plots.save(fig, "rounds.png")

    rejections: dict[str, int] = {}
    for manifest in manifests.values():
        for code, n in manifest.get("rejections", {}).items():
            rejections[code] = rejections.get(code, 0) + n
    fig, ax = plots.figure((6, 3.5))
    most_first = {code: rejections[code] for code in sorted(rejections, key=rejections.get, reverse=True)}
    count_bars(ax, most_first, "rejected edits", "#d62728", empty="no edit was rejected", horizontal=True)
    ax.set_title("Rejection reasons")
    plots.save(fig, "rejections.png")
    return plots.names


def _round_table_plots(out: Path, folder: Path, rounds: list[str]) -> list[str]:
    """The round table of an evolve folder (its ``evolve.json``) as plots: the strong and
    the weak actor's pass rates before and after editing (the paper's Table 17), the
    held-out accuracy of each round's actor after training (Fig. 3b), and the lengths of the
    rewriter's edit instructions and the actor's answers and responses (Table 18). Who
    answered is named, stand-ins so; a folder without a round table gets none."""
    from vicogym.runs.evolve import STATE_FILE

    path = folder / STATE_FILE
    if not path.is_file():
        return []
    state = json.loads(path.read_text(encoding="utf-8"))
    stats = {f"round-{e['round']:03d}": e.get("stats") or {} for e in state.get("rounds", [])}
    rounds = [r for r in rounds if stats.get(r)]
    if not rounds:
        return []

    def series(*keys: str) -> list[float]:
        values = []
        for r in rounds:
            value: Any = stats[r]
            for key in keys:
                value = value.get(key) if isinstance(value, dict) else None
            values.append(float(value) if isinstance(value, (int, float)) else float("nan"))
        return values

    def who(key: str) -> str:
        names = sorted({stats[r][key]["actor"] for r in rounds if stats[r].get(key)})
        return ", ".join(names) if names else "not measured"

    def measured(key: str) -> bool:
        return any(stats[r].get(key) for r in rounds)

    def titled(head: str, named: list[str], height: float) -> tuple[Any, Any]:
        """A figure whose title is ``head`` over who answered (``named``), wrapped to the
        figure's width, the figure taller by the title's lines (model paths run long)."""
        lines = [head] + [line for text in named for line in textwrap.wrap(text, 100, break_on_hyphens=False)]
        fig, ax = plots.figure((6, height + 0.15 * len(lines)))
        ax.set_title("\n".join(lines), fontsize=7 if len(lines) > 3 else 8)
        return fig, ax

    plots = Plots(out, dpi=100)
    probed = [name for name in ("strong", "weak") if measured(name)]
    if probed:
        fig, ax = titled("Strong and weak actors: pass rate before and after editing",
                         [f"{name}: {who(name)}" for name in probed], 3.6)
        per_round(ax, rounds, {f"{name} {side}": series(name, f"pass_rate_{side}") for name in probed
                               for side in ("before", "after")})
        plots.save(fig, "round_actors.png")
    if measured("heldout"):
        base = (state.get("heldout") or {}).get("base")
        fig, ax = titled("Held-out accuracy of each round's actor after training",
                         [f"after training: {who('heldout')}"]
                         + ([f"base, before any training: {base['actor']}"] if base else []), 3.3)
        accuracy = series("heldout", "accuracy")
        if base:
            per_round(ax, ["base", *rounds], {"held-out accuracy": [base["accuracy"], *accuracy]})
        else:
            per_round(ax, rounds, {"held-out accuracy": accuracy})
        plots.save(fig, "round_heldout.png")
    fig, ax = plots.figure((6, 3.5))
    per_round(ax, rounds, {"rewriter edit instruction": series("rewriter_instruction_chars"),
                           "actor answers (as kept)": series("actor_answer_chars"),
                           "held-out responses": series("heldout", "response_chars")}, top=None)
    ax.set_ylabel("characters (mean)")
    ax.set_title("Lengths: the rewriter's edit instructions, the actor's answers")
    plots.save(fig, "round_lengths.png")
    return plots.names


STYLE = """
body { font-family: sans-serif; margin: 1.5em; background: #fafafa; }
.plots img { max-width: 32%; margin-right: 1%; border: 1px solid #ddd; background: white; }
.filters { margin: 1em 0; padding: .6em; background: #eef; }
.sample { display: flex; gap: 1em; background: white; border: 1px solid #ddd; margin: .6em 0; padding: .6em; }
.sample img { max-height: 260px; max-width: 340px; border: 1px solid #ccc; }
.meta { font-size: 90%; } .sweet { color: #2a7; font-weight: bold; }
.actor { padding: .4em .6em; background: #eef6ee; } .actor.stand-in { background: #fff3cd; }
.answers td, .answers th { text-align: left; padding: .1em .6em; font-size: 90%; }
pre { white-space: pre-wrap; font-size: 80%; max-width: 60em; }
"""

BODY = """{actors}
<p>{summary}</p>
<div class="plots">{plots}</div>
{answers}
<div class="filters">
 text <input id="text" placeholder="question, answer, id">
 label rule <select id="rule"><option value="">any</option>{rules}</select>
 round <select id="round"><option value="">any</option>{round_options}</select>
 <label><input type="checkbox" id="sweet"> sweet zone only</label> &middot;
 <span id="shown"></span>
</div>
<div id="samples">{samples}</div>
<script>
function apply() {{
  const text = document.getElementById("text").value.toLowerCase();
  const rule = document.getElementById("rule").value, round = document.getElementById("round").value;
  const sweet = document.getElementById("sweet").checked;
  let shown = 0;
  for (const s of document.querySelectorAll(".sample")) {{
    const ok = (!text || s.dataset.text.includes(text)) && (!rule || s.dataset.rule === rule)
      && (!round || s.dataset.round === round) && (!sweet || s.dataset.sweet === "1");
    s.style.display = ok ? "" : "none";
    shown += ok;
  }}
  document.getElementById("shown").textContent = shown + " shown";
}}
for (const id of ["text", "rule", "round", "sweet"]) document.getElementById(id).addEventListener("input", apply);
window.addEventListener("load", () => {{
  const images = [...document.images];
  document.body.dataset.imagesOk = images.filter(i => i.complete && i.naturalWidth > 0).length;
  document.body.dataset.imagesBroken = images.filter(i => !(i.complete && i.naturalWidth > 0)).length;
  apply();
}});
</script>"""


def answer_table(rows: list[dict[str, Any]], most: int = 12) -> str:
    """Each question family's answers, most frequent first (at most ``most`` shown) with their
    share: a family is the label's ``family`` where it names one, else its label rule."""
    counts: dict[str, Counter] = {}
    for row in rows:
        try:
            label = json.loads(row["label"])
        except (TypeError, ValueError):
            label = None
        family = label.get("family") if isinstance(label, dict) else None
        counts.setdefault(str(family or row["label_rule"]), Counter())[row["answer"]] += 1
    lines = []
    for family in sorted(counts):
        total = sum(counts[family].values())
        shown = ", ".join(f"{html.escape(a)} {n} ({n / total:.0%})" for a, n in counts[family].most_common(most))
        more = len(counts[family]) - most
        lines.append(f"<tr><td>{html.escape(family)}</td><td>{total}</td><td>{shown}"
                     f"{f' and {more} more' if more > 0 else ''}</td></tr>")
    return ('<table class="answers"><tr><th>question family</th><th>samples</th><th>answers</th></tr>'
            + "".join(lines) + "</table>")


def actor_lines(manifests: dict[str, dict]) -> str:
    """Who gave the pass rates on the page, one line per actor (with the environments and,
    in a folder of rounds, the rounds it answered in): a stand-in is said to be one, with
    how to plug a model in."""
    from vicogym.runs.verify import run_actor

    groups: dict[Any, list[str]] = {}
    envs: dict[Any, set[str]] = {}
    for name, manifest in manifests.items():
        actor = run_actor(manifest)
        groups.setdefault(actor, []).append(name)
        envs.setdefault(actor, set()).add(str(manifest["env"]["id"]))
    lines = []
    for actor, names in groups.items():
        where = ", ".join(sorted(envs[actor])) + ("" if names == ["run"] else f" ({', '.join(names)})")
        lines.append(f'<p class="actor{" stand-in" if actor.stand_in else ""}">{html.escape(where)}: '
                     f"{html.escape(actor.line())}</p>")
    return "\n".join(lines)


def write_report_page(folder: str | Path, out: str | Path | None = None, limit: int = 200) -> Path:
    """Write the report of the run(s) in ``folder`` (or at a filesystem URL, read from a
    local copy; ``out`` is then required); the page's path."""
    from vicogym.runs.shards import is_url, local_run

    if is_url(folder) and out is None:
        raise RunError(f"{folder} is a URL: give --out, a local folder for the report")
    with local_run(folder) as local:
        return _report(local, out, limit)


def _report(folder: Path, out: str | Path | None, limit: int) -> Path:
    from vicogym.arm import payload_dict
    from vicogym.images import encode_png, row_png
    from vicogym.runs.verify import iter_rows, read_manifest, run_arm

    runs = rounds_of(folder)  # a wrong folder fails before anything is written
    out = report_out(folder, out)
    data: list[dict[str, Any]] = []
    manifests: dict[str, dict] = {}
    arms: dict[str, Any] = {}
    zone = (0.35, 0.65)
    for name, run in runs:
        manifest = read_manifest(run)
        manifests[name] = manifest
        env_id = manifest["env"]["id"]
        if env_id not in arms:
            arms[env_id] = run_arm(run, manifest)
        zone = tuple(arms[env_id].config.sweet_zone)
        for row in iter_rows(run):
            data.append({"round": name, "row": row, "pass_rate": float(row["pass_rate"]),
                         "pass_rate_before": float(row["pass_rate_before"])})
    plots = _plots(out, data, manifests, zone) + _round_table_plots(out, folder, list(manifests))
    cards = []
    for k, d in enumerate(data[:limit]):
        row = d["row"]
        after = save_image(out, f"images/{k:05d}-after.png", row_png(row), "edited image")
        before_html = ""
        arm = arms[row["env_id"]]
        try:
            seed = arm.decode(row["seed_structure"], payload_dict(row.get("seed_payloads")))
            before = save_image(out, f"images/{k:05d}-before.png", encode_png(arm.render_seeded(seed).image),
                                "seed image")
            before_html = f"<div><div>before</div>{before}</div>"
        except Exception as exc:  # a renderer this machine lacks: the page says so
            before_html = f"<div><em>seed image not rendered here ({html.escape(type(exc).__name__)})</em></div>"
        sweet = zone[0] <= d["pass_rate"] <= zone[1]
        trace = "\n".join(
            f"turn {t['turn']}: {json.dumps(t['edit'], sort_keys=True)} -> answer {t['answer']}, pass rate "
            f"{t['pass_rate']:.2f}"
            for t in json.loads(row["edit_trace"])
        )
        searchable = html.escape(f"{row['id']} {row['question']} {row['answer']}".lower(), quote=True)
        cards.append(
            f'<div class="sample" data-text="{searchable}" data-rule="{html.escape(row["label_rule"])}" '
            f'data-round="{html.escape(d["round"])}" data-sweet="{int(sweet)}">{before_html}'
            f'<div><div>after</div>{after}</div>'
            f'<div class="meta"><b>{html.escape(row["question"])}</b><br>answer: <b>{html.escape(row["answer"])}</b>'
            f' &middot; label rule: {html.escape(row["label_rule"])} &middot; {html.escape(d["round"])}<br>'
            f'pass rate {d["pass_rate_before"]:.2f} &rarr; <span class="{"sweet" if sweet else ""}">'
            f'{d["pass_rate"]:.2f}</span><br><small>{html.escape(row["id"])}</small>'
            f'<pre>{html.escape(trace)}</pre></div></div>')
    rules = sorted({d["row"]["label_rule"] for d in data})
    hit = sweet_share((d["pass_rate"] for d in data), zone)
    summary = (f"{len(data)} samples in {len(manifests)} round(s); sweet zone {zone[0]}-{zone[1]} hit by {hit:.0%}"
               + (f"; the first {limit} shown" if len(data) > limit else ""))
    body = BODY.format(actors=actor_lines(manifests), summary=html.escape(summary), plots=plot_images(plots),
                       answers=answer_table([d["row"] for d in data]), rules=options(rules),
                       round_options=options(manifests), samples="\n".join(cards))
    page = write_page(out, f"vicogym report: {folder.name}", STYLE, body)
    for arm in arms.values():
        arm.close()
    return page


__all__ = ["actor_lines", "answer_table", "rounds_of", "write_report_page"]
