"""``vicogym craft report DIR...``: the main table of a craft experiment and its plots.

Every number is computed on per-item means over the repetitions (:mod:`vicogym.evidence.stats`):

- per task family and overall, each variant's test score with its 95% interval (media-cluster
  bootstrap: whole sources resampled, stratified by the runs' seeds when several runs are
  given), what it sent (pixels and tokens per episode), and the joint skill's paired
  difference to it with a permutation p-value that exchanges whole sources (10,000
  resamples);
- across families, the exact sign test of joint against each variant (one-sided) and Holm's
  correction of the per-family joint-against-Direct p-values;
- the terminal crossing: the interaction S(θ₁φ₁) - S(θ₁φ₀) - S(θ₀φ₁) + S(θ₀φ₀), per item,
  with its interval (the co-adaptation measure).

The plots (PNG, in ``DIR/report/`` with ``index.html``): the development score of each
mode's incumbent per round, the accepted co-edits by field, and ΔR against ΔC for every
evaluated candidate.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vicogym.errors import RunError
from vicogym.evidence import stats
from vicogym.evidence.craft import read_run

ORDER = ("direct", "initial", "text", "interface", "joint", "alternating", "staged", "theta1_phi0", "theta0_phi1")
LABELS = {"direct": "Direct", "initial": "Initial skill", "text": "Text-only (θ)", "interface": "Interface-only (φ, ψ)",
          "joint": "Joint", "alternating": "Alternating", "staged": "Staged", "theta1_phi0": "θ₁ with φ₀, ψ₀",
          "theta0_phi1": "θ₀ with φ₁, ψ₁"}
RESAMPLES = 10_000


def _frames(runs: Sequence[Mapping[str, Any]]) -> Any:
    import pandas as pd

    rows = []
    for k, run in enumerate(runs):
        for variant, data in run["test"]["variants"].items():
            for row in data["rows"]:
                rows.append({**row, "variant": variant, "stratum": f"run{k}", "item": f"{k}:{row['item']}",
                             "cluster": f"{k}:{row['source']}"})
    return pd.DataFrame(rows)


def _means(frame: Any, variant: str, value: str = "score") -> Any:
    chosen = frame[frame["variant"] == variant]
    return stats.item_means(chosen, value=value, item="item", cluster="cluster", stratum="stratum")


def table(runs: Sequence[Mapping[str, Any]], seed: int = 0) -> dict[str, Any]:
    """The main table's numbers (see the module doc)."""
    frame = _frames(runs)
    variants = [a for a in ORDER if a in set(frame["variant"])]
    families = sorted(set(frame["family"]))
    out: dict[str, Any] = {"families": families, "variants": variants, "cells": {}, "tests": {}}
    for family in families + ["all"]:
        part = frame if family == "all" else frame[frame["family"] == family]
        joint = _means(part, "joint") if "joint" in variants else None
        for variant in variants:
            means = _means(part, variant)
            ci = stats.cluster_bootstrap_ci(means["score"].to_numpy(), means["cluster"].tolist(),
                                            means["stratum"].tolist(), n_resamples=RESAMPLES, seed=seed)
            chosen = part[part["variant"] == variant]
            tokens = chosen["tokens"].dropna()
            cell = {"score": ci["estimate"], "low": ci["low"], "high": ci["high"], "items": len(means),
                    "pixels": float(chosen["pixels"].mean()),
                    "tokens": float(tokens.mean()) if len(tokens) else None}
            if joint is not None and variant != "joint":
                a = joint.set_index("item")["score"]
                b = means.set_index("item")["score"].reindex(a.index)
                clusters = joint.set_index("item")["cluster"].tolist()
                test = stats.paired_permutation_test(a.to_numpy(), b.to_numpy(), clusters, n_resamples=RESAMPLES,
                                                     seed=seed)
                cell.update({"joint_minus": test["statistic"], "p": test["pvalue"]})
            out["cells"][f"{family}/{variant}"] = cell
    if "joint" in variants:
        for variant in variants:
            if variant == "joint":
                continue
            diffs = [out["cells"][f"{f}/joint"]["score"] - out["cells"][f"{f}/{variant}"]["score"] for f in families]
            out["tests"][f"sign/joint>{variant}"] = stats.sign_test(diffs, "greater")
        if "direct" in variants:
            ps = [out["cells"][f"{f}/direct"]["p"] for f in families]
            out["tests"]["holm/joint-vs-direct"] = dict(zip(families, stats.holm(ps)))
    if {"joint", "initial", "theta1_phi0", "theta0_phi1"} <= set(variants):
        out["crossing"] = {}
        for family in families + ["all"]:
            part = frame if family == "all" else frame[frame["family"] == family]
            m = {v: _means(part, v).set_index("item") for v in ("joint", "initial", "theta1_phi0", "theta0_phi1")}
            inter = (m["joint"]["score"] - m["theta1_phi0"]["score"] - m["theta0_phi1"]["score"]
                     + m["initial"]["score"])
            ci = stats.cluster_bootstrap_ci(inter.to_numpy(), m["joint"]["cluster"].tolist(),
                                            m["joint"]["stratum"].tolist(), n_resamples=RESAMPLES, seed=seed)
            out["crossing"][family] = ci
    return out


def _plots(out: Path, runs: Sequence[Mapping[str, Any]]) -> list[str]:
    from vicogym.runs.plots import Plots, count_bars, counts_axis, nothing_to_show

    plots = Plots(out, 110)
    fig, ax = plots.figure((6.0, 3.6))
    drawn = False
    for k, run in enumerate(runs):
        for mode, ledger in run["ledgers"].items():
            rounds = ([{"round": -1, **ledger["start"]}] if "start" in ledger else []) + ledger.get("rounds", [])
            if rounds:
                ax.plot([r["round"] + 1 for r in rounds], [r["dev_score"] for r in rounds], marker="o",
                        label=f"{mode}" + (f" (run {k})" if len(runs) > 1 else ""))
                drawn = True
    if drawn:
        counts_axis(ax.xaxis)
        ax.set_xlabel("after round (0: the starting skill)")
        ax.set_ylabel("development score of the incumbent")
        ax.legend(fontsize=8)
    else:
        nothing_to_show(ax, "no rounds recorded")
    plots.save(fig, "score_per_round.png")
    counts: Counter = Counter()
    for run in runs:
        for ledger in run["ledgers"].values():
            for entry in ledger["candidates"]:
                if entry["accepted"] and entry["fields"]:
                    counts[" + ".join(entry["fields"])] += 1
    fig, ax = plots.figure((6.0, 3.6))
    count_bars(ax, dict(counts.most_common()), "accepted candidates", "#4c72b0", "no accepted candidates",
               horizontal=True)
    ax.set_title("accepted edits by field")
    plots.save(fig, "accepted_by_field.png")
    fig, ax = plots.figure((5.0, 4.0))
    points = [(e["dR"], e["dC"], e["accepted"], mode) for run in runs for mode, ledger in run["ledgers"].items()
              for e in ledger["candidates"] if e.get("dR") is not None]
    unevaluated = sum(e.get("dR") is None for run in runs for ledger in run["ledgers"].values()
                      for e in ledger["candidates"])
    if points:
        markers = dict(zip(sorted({p[3] for p in points}), "osD^v"))
        for accepted, colour, verdict in ((True, "#2ca02c", "accepted"), (False, "#d62728", "rolled back")):
            for mode, marker in markers.items():
                chosen = [p for p in points if p[2] == accepted and p[3] == mode]
                if chosen:
                    ax.scatter([p[0] for p in chosen], [p[1] for p in chosen], c=colour, marker=marker, s=22,
                               alpha=0.7, label=f"{mode}: {verdict} ({len(chosen)})")
        if unevaluated:
            ax.set_title(f"{unevaluated} more rejected before evaluation (replay, invalid)", fontsize=9)
        ax.axhline(0, color="#888", lw=0.8)
        ax.axvline(0, color="#888", lw=0.8)
        ax.set_xlabel("ΔR (paired change in task score)")
        ax.set_ylabel("ΔC (change in evidence support)")
        ax.legend(fontsize=8)
    else:
        nothing_to_show(ax, "no candidate was evaluated")
    plots.save(fig, "delta_r_delta_c.png")
    return plots.names


def _fmt(x: float) -> str:
    return f"{x:.3f}"


def rows_of(result: Mapping[str, Any], family: str = "all") -> list[list[str]]:
    """The main table's rows for one family: variant, score, 95% interval, pixels and tokens
    per episode, joint minus it and its p-value."""
    rows = []
    for variant in result["variants"]:
        c = result["cells"][f"{family}/{variant}"]
        delta = f"{c['joint_minus']:+.3f}" if "joint_minus" in c else ""
        p = f"{c['p']:.4f}" if "p" in c else ""
        tokens = "n/a" if c["tokens"] is None else f"{c['tokens']:.0f}"
        rows.append([LABELS.get(variant, variant), _fmt(c["score"]), f"[{_fmt(c['low'])}, {_fmt(c['high'])}]",
                     f"{c['pixels']:.0f}", tokens, delta, p])
    return rows


HEADER = ["variant", "score", "95% CI", "pixels/ep", "tokens/ep", "joint-variant", "p"]


def check_pooled(dirs: Sequence[str | Path]) -> list[dict[str, Any]]:
    """The runs of ``dirs``, refused unless they can be pooled: finished, each named once,
    and the same settings but their seeds (the seeds are the strata)."""
    if not dirs:
        raise RunError("name at least one craft run folder")
    if len({Path(d).resolve() for d in dirs}) < len(dirs):
        raise RunError("a run folder is named twice; pooling a run with itself counts its items twice")
    runs = [read_run(d) for d in dirs]
    for d, run in zip(dirs, runs):
        if run["test"] is None:
            raise RunError(f"{d} has no test evaluation yet (test.json); let its `vicogym craft` finish")
    first = runs[0]["identity"]
    seeds = [r["identity"]["seed"] for r in runs]
    if len(set(seeds)) < len(seeds):
        raise RunError(f"two runs share seed {sorted(s for s in seeds if seeds.count(s) > 1)[0]}; the runs a report "
                       "pools are seeds of one experiment")
    for d, run in zip(dirs[1:], runs[1:]):
        differing = sorted(k for k in set(first) | set(run["identity"]) if k != "seed"
                           and run["identity"].get(k) != first.get(k))
        if differing:
            raise RunError(f"{d} differs from {dirs[0]} in {', '.join(differing)}: a report pools runs that differ "
                           "in their seed only (compare executors with `vicogym craft transfer`)")
    return runs


def executor_kind(spec: str) -> str:
    """What reads in the runs of ``spec``, said beside every number they report: a
    stand-in or a real reader."""
    head = spec.split(",")[0].split(":")[0]
    if head == "simulated":
        return ("a stand-in, not a model: the simulated executor (it knows where the evidence lies and reads it "
                "with a curve fitted to Tesseract's legibility)")
    if head == "ocr":
        return ("Tesseract reads every view (a real reader, and a floor: a strong model reads smaller text); which "
                "views it asks for is the simulated policy, a stand-in")
    return "a model behind an OpenAI-compatible server"


def write_report(dirs: Sequence[str | Path], out: str | Path | None = None, seed: int = 0
                 ) -> tuple[dict[str, Any], Path]:
    """The table's numbers and the report page (``index.html``) written for ``dirs``."""
    runs = check_pooled(dirs)
    result = table(runs, seed)
    folder = Path(out) if out is not None else Path(dirs[0]) / ("report" if len(dirs) == 1 else "report-pooled")
    names = _plots(folder, runs)
    parts = ["<!doctype html><meta charset='utf-8'><title>vicogym craft report</title>",
             "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:1.5em}"
             "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child{text-align:left}</style>",
             f"<h1>Craft report</h1><p>{html.escape(', '.join(str(d) for d in dirs))}: executor "
             f"{html.escape(runs[0]['identity']['executor'])}, optimizer "
             f"{html.escape(runs[0]['identity']['optimizer'])}; seeds "
             f"{', '.join(str(r['identity']['seed']) for r in runs)} (the strata)</p>",
             f"<p>The executor: {html.escape(executor_kind(runs[0]['identity']['executor']))}.</p>"]
    for family in result["families"] + ["all"]:
        heads = "".join(f"<th>{html.escape(h)}</th>" for h in HEADER)
        parts.append(f"<h2>{html.escape(family)}</h2><table><tr>{heads}</tr>")
        for row in rows_of(result, family):
            parts.append("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>")
        parts.append("</table>")
    parts.append("<h2>Tests across families</h2><pre>" + html.escape(json.dumps(result["tests"], indent=1)) + "</pre>")
    if "crossing" in result:
        parts.append("<h2>Terminal crossing (interaction)</h2><pre>"
                     + html.escape(json.dumps(result["crossing"], indent=1)) + "</pre>")
    for name in names:
        parts.append(f"<h2>{html.escape(name)}</h2><img src='{html.escape(name)}' alt='{html.escape(name)}'>")
    (folder / "index.html").write_text("\n".join(parts), encoding="utf-8")
    result["executor"] = {"spec": runs[0]["identity"]["executor"],
                          "kind": executor_kind(runs[0]["identity"]["executor"])}
    (folder / "table.json").write_text(json.dumps(result, indent=1, sort_keys=True), encoding="utf-8")
    return result, folder / "index.html"


def transfer_rows(matrix: Mapping[str, Any]) -> list[list[str]]:
    """The transfer matrix as rows: the skill's source executor, then per target its score
    (and each target's Direct baseline in the last row)."""
    rows = [[source] + [_fmt(matrix["cells"][source][t]["score"]) for t in matrix["executors"]]
            for source in matrix["executors"]]
    rows.append(["Direct"] + [_fmt(matrix["direct"][t]["score"]) for t in matrix["executors"]])
    return rows
