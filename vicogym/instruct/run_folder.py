"""What a ``vicogym synthesize`` run folder gives back: its samples, the statistics the
VISA paper reports, their plots and report page, SFT data, and a check of every row.

The samples are the rows of the shards the memory has committed (a shard left by a
killed round is not data). verl reads the shards directly (they carry ``data_source``,
``prompt``, ``images``, ``ability``, ``reward_model`` and ``extra_info``; the reward is
:func:`vicogym.scoring.score_row`, the constraint pass rate).
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from vicogym.errors import RunError, UnknownConstraintType
from vicogym.programs.instruct import CATEGORIES
from vicogym.runs.kinds import Findings, plot_images, report_out, save_image, shard_problem, write_page

SFT_FILE = "instruct_sft.json"


def is_instruct_run(folder: str | Path) -> bool:
    from vicogym.instruct.synthesis import MEMORY_FILE

    return (Path(folder) / MEMORY_FILE).is_file()


def _memory(folder: Path) -> Any:
    from vicogym.instruct.memory import Memory
    from vicogym.instruct.synthesis import MEMORY_FILE

    if not (folder / MEMORY_FILE).is_file():
        raise RunError(
            f"{folder} is not a vicogym synthesize run (no {MEMORY_FILE}); run `vicogym synthesize --out {folder}` "
            f"first"
        )
    return Memory(folder / MEMORY_FILE)


def iter_samples(folder: str | Path, columns: list[str] | None = None) -> Iterator[dict[str, Any]]:
    """The committed rows of a synthesis run (``columns`` of them, or all), in round order."""
    import pyarrow.parquet as pq

    folder = Path(folder)
    memory = _memory(folder)
    try:
        rounds = memory.rounds()
    finally:
        memory.close()
    for entry in rounds:
        if entry["shard"]:
            path = folder / entry["shard"]
            if not path.is_file():
                raise RunError(f"{path} is missing but the memory committed it; run the same synthesize command on a "
                               f"new --out, or restore the file")
            yield from pq.read_table(path, columns=columns).to_pylist()


# -- the run's discovered types (written by synthesis), loaded only on request ---------------
def _types_file(path: Path) -> Path:
    from vicogym.instruct.synthesis import TYPES_FILE

    if path.is_dir():
        path = path / TYPES_FILE
        if not path.is_file():
            raise RunError(
                f"{path.parent} holds no {TYPES_FILE}: it is no synthesis run that discovered types, or one "
                f"written before the file existed (run the same `vicogym synthesize` on it once to write it)"
            )
    elif not path.is_file():
        raise RunError(f"{path} is neither a synthesis run folder nor its {TYPES_FILE}")
    return path


def load_types(path: str | Path, judge: Any = "simulated") -> dict[str, str]:
    """Admit, in this process, the discovered types a run stored (``path``: the run folder
    or its ``types.json``): every record's code must have the SHA-256 stored beside it
    (and the file the one the run's manifest lists, where it lists one); each verifier
    then passes admission again in the sandbox. Returns the types' hashes by id. This is
    the only way model-written code from a run reaches a verifier: never from a row."""
    from vicogym.instruct.discovery import Proposal, Rejected, admit, contract_sha256
    from vicogym.instruct.judge import make_judge
    from vicogym.instruct.synthesis import TYPES_FORMAT
    from vicogym.programs.instruct import REGISTRY
    from vicogym.runs.shards import file_sha256

    file = _types_file(Path(path))
    manifest = file.parent / "manifest.json"
    if manifest.is_file():
        listed = (json.loads(manifest.read_text(encoding="utf-8")).get("types") or {}).get("sha256")
        if listed is not None and listed != file_sha256(file):
            raise RunError(f"{file} is not the file the run's manifest lists (its SHA-256 differs); restore it or "
                           f"run the same `vicogym synthesize` again")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise RunError(f"{file} is not JSON ({exc}); restore it from the run") from None
    if not isinstance(data, dict) or data.get("format") != TYPES_FORMAT or not isinstance(data.get("types"), list):
        raise RunError(f"{file} is not a vicogym types file of format {TYPES_FORMAT}")
    hashes: dict[str, str] = {}
    judge = make_judge(judge)
    for i, entry in enumerate(data["types"]):
        try:
            proposal = Proposal.from_json(entry["proposal"])
        except (KeyError, TypeError, Rejected) as exc:
            raise RunError(f"{file}: type {i} is no stored proposal ({exc})") from None
        if entry.get("id") != proposal.id or entry.get("sha256") != proposal.sha256:
            raise RunError(f"{file}: type {i} ({proposal.id!r}) does not have the SHA-256 stored beside it; the file "
                           f"was changed after the run wrote it")
        known = contract_sha256(REGISTRY[proposal.id]) if proposal.id in REGISTRY else None
        if known != proposal.sha256:
            try:
                admit(proposal, judge=judge)
            except Rejected as exc:
                raise RunError(f"{file}: the stored type {proposal.id!r} does not pass admission here: {exc}") from None
        hashes[proposal.id] = proposal.sha256
    return hashes


_LOADED: dict[str, dict[str, str]] = {}


def load_types_once(path: str | Path, judge: Any = "simulated") -> dict[str, str]:
    """:func:`load_types`, once per process and path (again if the registry no longer
    holds the types: a test, or a caller, may have cleared it)."""
    import os

    from vicogym.instruct.discovery import contract_sha256
    from vicogym.programs.instruct import REGISTRY

    key = os.path.realpath(str(path))
    held = _LOADED.get(key)
    if held is None or any(t not in REGISTRY or contract_sha256(REGISTRY[t]) != h for t, h in held.items()):
        _LOADED[key] = load_types(key, judge=judge)
    return _LOADED[key]


def score_row(response: str, ground_truth: str, judge: Any = None, types: Any = None) -> float:
    """The constraint pass rate of ``response`` under a stored row's ground truth. The
    discovered types it names must be loaded (``types``: their run, loaded once per
    process); judge-track constraints count only with a ``judge``."""
    from vicogym.instruct.judge import judge_once, verify_sample
    from vicogym.programs.instruct import REGISTRY, pass_rate

    truth = json.loads(ground_truth)
    if types is not None:
        load_types_once(types, judge_once(judge or "simulated"))
    check_row_types(truth.get("constraints") if isinstance(truth, dict) else None,
                    truth.get("types") if isinstance(truth, dict) else None)
    constraints = [c for c in truth["constraints"] if judge is not None or REGISTRY[c["id"]].track != "judge"]
    return pass_rate(verify_sample(response, constraints, None if judge is None else judge_once(judge)))


def row_types_problem(constraints: Sequence[Mapping[str, Any]], listed: Any) -> str | None:
    """Why a row's constraints cannot be verified with the registry this process holds:
    a type that is no seed type must be listed by the row with its SHA-256, and the
    registry must hold a discovered type of that id with that hash. ``None`` when they can."""
    from vicogym.instruct.discovery import contract_sha256
    from vicogym.programs.instruct import REGISTRY

    hashes = {}
    for item in listed if isinstance(listed, list) else []:
        if isinstance(item, Mapping) and isinstance(item.get("id"), str) and isinstance(item.get("sha256"), str):
            hashes[item["id"]] = item["sha256"]
    for i, spec in enumerate(constraints if isinstance(constraints, list) else [None]):
        type_id = spec.get("id") if isinstance(spec, Mapping) else None
        if not isinstance(type_id, str):
            return f"constraint {i} of the row is no {{'id': str, 'params': {{...}}}} object: {json.dumps(spec)[:80]}"
        contract = REGISTRY.get(type_id)
        if contract is not None and contract.origin == "seed":
            continue
        if type_id not in hashes:
            return (f"the row names constraint type {type_id!r}, which is no seed type, without its code's SHA-256 "
                    f"(rows name discovered types by id and hash; synthesize the run again with this vicogym)")
        loaded = None if contract is None else contract_sha256(contract)
        if loaded != hashes[type_id]:
            return (f"the row names discovered type {type_id!r} with SHA-256 {hashes[type_id][:12]}..., which no "
                    f"loaded registry holds{'' if loaded is None else f' (the loaded one is {loaded[:12]}...)'}; load "
                    f"the run's types explicitly (reward_kwargs types=RUN_FOLDER, Instruct-v0 types=RUN_FOLDER, or "
                    f"vicogym.instruct.run_folder.load_types(RUN_FOLDER))")
    return None


def check_row_types(constraints: Sequence[Mapping[str, Any]], listed: Any) -> None:
    """:func:`row_types_problem` as :class:`~vicogym.errors.UnknownConstraintType`."""
    problem = row_types_problem(constraints, listed)
    if problem:
        raise UnknownConstraintType(problem)


def statistics(folder: str | Path) -> dict[str, Any]:
    """The VISA statistics of a run: constraints per sample, category co-occurrence
    P(j | i), mean pairwise cosine distance of instruction embeddings, failure rates by
    category (target-model probes), registry growth per round, recovery attempts per
    accepted sample and the difficulty distribution."""
    folder = Path(folder)
    memory = _memory(folder)
    try:
        samples, rounds, embeddings = memory.samples(), memory.rounds(), memory.embeddings()
    finally:
        memory.close()
    counts = [len(s["constraints"]) for s in samples]
    per_category = Counter(c for s in samples for c in s["categories"])
    pairs = Counter()
    for s in samples:
        for a, b in combinations(sorted(s["categories"]), 2):
            pairs[(a, b)] += 1
            pairs[(b, a)] += 1
    cooccurrence = {a: {b: pairs[(a, b)] / per_category[a] for b in CATEGORIES if b != a and per_category[b]}
                    for a in CATEGORIES if per_category[a]}
    failed, trials = Counter(), Counter()
    for row in iter_samples(folder, columns=["constraints", "profile"]):  # not the images
        constraints = {c["id"]: c["category"] for c in json.loads(row["constraints"])}
        for entry in json.loads(row["profile"]):
            category = constraints.get(entry["id"], "unknown")
            trials[category] += 1
            failed[category] += entry["failed"]
    distance = None
    if len(embeddings) > 1:
        similarity = embeddings @ embeddings.T
        upper = similarity[np.triu_indices(len(embeddings), k=1)]
        distance = float(np.mean(1.0 - upper))
    growth, total = [], None
    for r in rounds:
        total = r["stats"].get("registry", total)
        growth.append({"round": r["round"], "registry": total, "discovered": r["stats"].get("discovered_types", 0)})
    attempts = Counter(s["attempts"] for s in samples)
    levels = Counter(s["level"] for s in samples)
    return {
        "samples": len(samples),
        "constraints_per_sample": {"mean": float(np.mean(counts)) if counts else 0.0,
                                   "median": float(np.median(counts)) if counts else 0.0,
                                   "std": float(np.std(counts)) if counts else 0.0,
                                   "histogram": {str(k): v for k, v in sorted(Counter(counts).items())}},
        "categories": dict(sorted(per_category.items())),
        "cooccurrence": cooccurrence,
        "mean_pairwise_cosine_distance": distance,
        "failure_rate_by_category": {c: failed[c] / trials[c] for c in sorted(trials)},
        "registry_growth": growth,
        "recovery_attempts": {str(k): v for k, v in sorted(attempts.items())},
        "difficulty": {"levels": {lvl: levels.get(lvl, 0) for lvl in ("easy", "medium", "hard")},
                       "values": [s["difficulty"] for s in samples]},
        "rejected": dict(sum((Counter(r["stats"].get("rejected", {})) for r in rounds), Counter())),
    }


def plot_statistics(stats: dict[str, Any], out: Path) -> list[str]:
    """One PNG per statistic in ``out``; their names."""
    from vicogym.runs.plots import Plots, count_bars, counts_axis, nothing_to_show

    plots = Plots(out, dpi=80)
    fig, ax = plots.figure((5, 3.4))
    count_bars(ax, stats["constraints_per_sample"]["histogram"], "constraints", "#4c72b0")
    ax.set_title(f"constraints per sample (mean {stats['constraints_per_sample']['mean']:.2f})")
    plots.save(fig, "constraints_per_sample.png")

    cats = [c for c in CATEGORIES if c in stats["cooccurrence"]]
    if cats:
        matrix = np.ma.masked_invalid(np.array([[stats["cooccurrence"][a].get(b, np.nan) if a != b else np.nan
                                                 for b in cats] for a in cats]) * 100)
        fig, ax = plots.figure((6.4, 5.4))
        # the diagonal (a category with itself) and pairs never seen: grey, not 0%
        cmap = plots.plt.get_cmap("Blues").with_extremes(bad="#d9d9d9")
        image = ax.imshow(matrix, vmin=0, vmax=100, cmap=cmap)
        for i in range(len(cats)):
            ax.text(i, i, "-", ha="center", va="center", fontsize=8, color="#555555")
        ax.set_xticks(range(len(cats)), cats, rotation=60, ha="right", fontsize=8)
        ax.set_yticks(range(len(cats)), cats, fontsize=8)
        ax.set_title("category co-occurrence P(column | row), %\n(grey: the category itself)",
                     fontsize=10)
        fig.colorbar(image, ax=ax)
        plots.save(fig, "cooccurrence.png")

    rates = stats["failure_rate_by_category"]
    if rates:
        fig, ax = plots.figure((5.6, 3.4))
        ax.barh(list(rates), [100 * v for v in rates.values()], color="#dd8452")
        ax.set(title="target-model failure rate by category", xlabel="% of constraint instances failed")
        plots.save(fig, "failure_by_category.png")

    growth = stats["registry_growth"]
    if growth:
        fig, ax = plots.figure((5, 3.4))
        ax.plot([g["round"] for g in growth], [g["registry"] for g in growth], marker="o")
        ax.set(title="registry size per round", xlabel="round", ylabel="constraint types")
        counts_axis(ax.xaxis)
        counts_axis(ax.yaxis)
        plots.save(fig, "registry_growth.png")

    fig, ax = plots.figure((5, 3.4))
    count_bars(ax, stats["recovery_attempts"], "attempts", "#55a868")
    ax.set_title("recovery attempts per accepted sample")
    plots.save(fig, "recovery_attempts.png")

    levels = stats["difficulty"]["levels"]
    fig, (left, right) = plots.figure((7.5, 3.2), ncols=2)
    left.bar(list(levels), list(levels.values()), color=["#55a868", "#ccb974", "#c44e52"])
    left.set(title="difficulty levels", ylabel="samples")
    counts_axis(left.yaxis)
    if stats["difficulty"]["values"]:
        right.hist(stats["difficulty"]["values"], bins=10, range=(0, 1), color="#8172b2")
        right.set(xlabel="difficulty")
        counts_axis(right.yaxis)
    else:
        nothing_to_show(right, "no samples")
    right.set_title("failed-constraint share")
    plots.save(fig, "difficulty.png")
    return plots.names


STYLE = """
body{font-family:sans-serif;margin:1em} .plots img{max-width:48%;margin:4px} .sample{display:flex;gap:1em;
border-top:1px solid #ccc;padding:.6em 0} .sample img{max-width:360px} pre{white-space:pre-wrap;max-width:70em}
.ok{color:#2a7} .no{color:#c33} .stand-in{padding:.4em .6em;background:#fff3cd}
"""


def run_stand_ins(folder: Path) -> dict[str, str] | None:
    """The stand-ins behind a synthesis run's data, from the settings its memory records
    (:func:`vicogym.instruct.models.stand_ins`)."""
    from vicogym.instruct.models import stand_ins

    memory = _memory(folder)
    try:
        return stand_ins(memory.meta("identity") or {})
    finally:
        memory.close()


def stand_in_line(folder: Path) -> str:
    """The report page's line on the stand-ins behind the run's data (empty where models
    did it all)."""
    stand_in = run_stand_ins(folder)
    return f'<p class="stand-in">{html.escape(stand_in["note"])}</p>' if stand_in else ""


def write_report_page(folder: str | Path, out: str | Path | None = None, limit: int = 200) -> Path:
    """The report page of a synthesis run: the statistics' plots and the first ``limit``
    samples with their instruction, reference response and verdicts."""
    folder = Path(folder)
    stats = statistics(folder)  # a wrong folder fails before anything is written
    out = report_out(folder, out)
    plots = plot_statistics(stats, out)
    (out / "statistics.json").write_text(json.dumps(stats, indent=1, sort_keys=True), encoding="utf-8")
    cards = []
    for k, row in enumerate(iter_samples(folder)):
        if k >= limit:
            break
        image = save_image(out, f"images/{row['id']}.png", bytes(row["images"][0]["bytes"]), row["id"])
        verdicts = "".join(
            f'<li class="{"ok" if v["pass"] else "no"}">{html.escape(v["id"])}: {html.escape(str(v["expected"]))}'
            f' &mdash; {html.escape(str(v["actual"]))}</li>' for v in json.loads(row["verdicts"]))
        cards.append(
            f'<div class="sample">{image}<div>'
            f"<b>{html.escape(row['id'])}</b> &middot; {html.escape(row['level'])} (difficulty "
            f"{row['difficulty']:.2f}, {row['attempts']} recovery attempts)<pre>{html.escape(row['instruction'])}"
            f"</pre><details><summary>reference response</summary><pre>{html.escape(row['response'])}</pre>"
            f"</details><ul>{verdicts}</ul></div></div>"
        )
    distance = stats["mean_pairwise_cosine_distance"]
    summary = (f"{stats['samples']} samples; {stats['constraints_per_sample']['mean']:.2f} constraints per sample; "
               f"mean pairwise cosine distance {'n/a' if distance is None else f'{distance:.3f}'}; levels "
               f"{stats['difficulty']['levels']}")
    shown = {k: v for k, v in stats.items() if k not in ("difficulty", "cooccurrence")}
    body = (f'{stand_in_line(folder)}<p>{html.escape(summary)}</p>\n<div class="plots">{plot_images(plots)}</div>'
            f"<pre>{html.escape(json.dumps(shown, indent=1))}</pre>" + "\n".join(cards))
    return write_page(out, f"vicogym synthesis report: {folder.name}", STYLE, body)


def export_instruct(run: str | Path, out: str | Path, name: str = "vicogym_instruct") -> dict[str, Any]:
    """SFT data for LlamaFactory (multimodal ShareGPT): the instruction with its image and
    the verified reference response, plus the ``dataset_info.json`` entry. Where simulated
    stand-ins wrote the responses (or set the pass rates or verdicts), the entry's
    ``stand_in`` says so (:func:`vicogym.instruct.models.stand_ins`), and so do the counts."""
    from vicogym.runs.llamafactory import write_dataset_info
    from vicogym.runs.trainer_columns import IMAGE_TOKEN

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise RunError(f"--out {out} is a file; name a folder for the SFT data")
    if out.is_dir() and any(out.iterdir()) and not (out / SFT_FILE).is_file():
        raise RunError(f"--out {out} is not empty and holds no {SFT_FILE}; use a new or empty folder")
    (out / "images").mkdir(parents=True, exist_ok=True)
    records = []
    for row in iter_samples(run):
        file = f"images/{row['id']}.png"
        (out / file).write_bytes(bytes(row["images"][0]["bytes"]))
        records.append({"messages": [{"role": "user", "content": IMAGE_TOKEN + row["instruction"]},
                                     {"role": "assistant", "content": row["response"]}], "images": [file]})
    if not records:
        raise RunError(f"{run} holds no samples yet; let `vicogym synthesize` finish a round")
    stand_in = run_stand_ins(Path(run))
    (out / SFT_FILE).write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")
    write_dataset_info(out, {name: SFT_FILE}, stand_in=stand_in)
    return {"records": len(records), **({"stand_in": stand_in} if stand_in else {})}


def verify_instruct(folder: str | Path, images: bool = True) -> tuple[int, list[tuple[str, str]]]:
    """:func:`verify_synthesis`'s rows read and problems found (where, why)."""
    findings = verify_synthesis(folder, images)
    return findings.rows, findings.problems


def verify_synthesis(folder: str | Path, images: bool = True) -> Findings:
    """Every committed row re-checked: the shard is the one the memory committed, the
    reference response passes every code-verified constraint, each grounded constraint's
    parameters follow from the stored facts, the facts (and, with ``images``, the pixels)
    follow from the stored structure, and the verl columns agree with the row."""
    from vicogym.instruct.synthesis import TYPES_FILE

    folder = Path(folder)
    memory = _memory(folder)
    try:
        rounds, stored = memory.rounds(), memory.discovered()
        settings = (memory.meta("identity") or {}).get("image_settings") or {}
    finally:
        memory.close()
    findings = Findings()
    if (folder / TYPES_FILE).is_file() or stored:  # the run's own types, from its file (never from its rows)
        try:
            load_types(folder)
        except RunError as exc:
            findings.add(TYPES_FILE, str(exc))
    for entry in rounds:
        shard = folder / entry["shard"] if entry["shard"] else None
        if shard is not None and shard.is_file():  # a missing one stops the rows' walk below, named
            changed = shard_problem(shard, entry["sha256"], "the one the memory committed")
            if changed:
                findings.add(entry["shard"], changed)
    arms: dict[str, Any] = {}
    try:
        for row in iter_samples(folder):
            findings.rows += 1
            for why in _row_problems(row, arms, images, settings):
                findings.add(row["id"], why)
    finally:
        for arm in arms.values():
            arm.close()
    return findings


def _row_problems(row: dict[str, Any], arms: dict[str, Any], images: bool, settings: dict[str, Any]) -> list[str]:
    from vicogym.instruct.judge import verify_sample
    from vicogym.programs.instruct import REGISTRY

    constraints = json.loads(row["constraints"])
    facts = json.loads(row["facts"])
    problem = row_types_problem(constraints, json.loads(row["discovered"]))
    if problem:
        return [problem]
    problems = []
    code = [c for c in constraints if REGISTRY[c["id"]].track == "code"]
    for verdict in verify_sample(row["response"], code):
        if not verdict["pass"]:
            problems.append(f"the reference response fails {verdict['id']}: expected {verdict['expected']}, got "
                            f"{verdict['actual']}")
    for c in constraints:
        contract = REGISTRY[c["id"]]
        if contract.check_ground is not None:
            why = contract.check_ground(facts, c["params"])
            if why:
                problems.append(f"{c['id']} does not follow from the image's facts: {why}")
    truth = json.loads(row["reward_model"]["ground_truth"])
    if truth.get("constraints") != constraints or truth.get("types") != json.loads(row["discovered"]):
        problems.append("reward_model.ground_truth differs from the constraints and their types")
    if row["extra_info"]["answer"] != row["response"] or row["extra_info"]["question"] != row["instruction"]:
        problems.append("extra_info differs from the row's instruction and response")
    return problems + _check_source(row, facts, arms, images, settings)


def _check_source(row: dict[str, Any], facts: dict[str, Any], arms: dict[str, Any], images: bool,
                  settings: dict[str, Any]) -> list[str]:
    """The stored facts (and pixels) against the stored structure, rendered again with the
    run's image settings."""
    from vicogym.arm import payload_dict
    from vicogym.images import decode_png, same_image
    from vicogym.instruct.synthesis import picture_facts
    from vicogym.registry import make_arm

    source = json.loads(row["image_source"])
    env_id = source.get("env_id")
    if env_id is None:
        return []
    if env_id not in arms:
        arms[env_id] = make_arm(env_id, dict(settings.get(env_id) or {}))
    arm = arms[env_id]
    try:
        structure = arm.decode(source["structure"], payload_dict(row.get("payloads")))
        render = arm.render_seeded(structure)
    except Exception as exc:  # a renderer this machine lacks, or a damaged structure
        return [f"its structure cannot be rendered again here ({type(exc).__name__}: {exc})"]
    again = picture_facts(arm, structure, render)
    problems = []
    if json.loads(json.dumps(again)) != facts:
        problems.append("its stored facts differ from the facts of its structure")
    if images and not same_image(render.image, decode_png(bytes(row["images"][0]["bytes"])), arm.pixel_tolerance):
        problems.append("its image differs from its structure rendered again")
    return problems
