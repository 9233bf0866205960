"""Command line: ``vicogym envs``, ``generate``, ``verify``, ``export``, ``eval``, ``evolve``,
``synthesize``, ``report``, ``serve``, ``evidence run``.

Every input gets an answer: bad flags, files and settings end with a one-line message
that says what to change (exit code 2), never a traceback. The help is plain text, so
that every default shows (``[vicogym-out]``, ``[random]``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vicogym.validation import brief, load_config_file, loads_json

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Verifiable visual environments for VLM RL.")
console = Console()
errors = Console(stderr=True, soft_wrap=True)
MAX_PROBLEMS_SHOWN = 50


def _fail(message: str, code: int = 2) -> typer.Exit:
    errors.print(f"[red]error:[/red] {escape(message)}", highlight=False)
    return typer.Exit(code)


@app.command()
def envs() -> None:
    """List the registered environments."""
    import vicogym

    table = Table("id", "description")
    for env_id, description in vicogym.list_environments():
        table.add_row(env_id, description)
    console.print(table)


def parse_setting(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` with a JSON value (``k=4``, ``templates=["lookup"]``); a value that is
    not JSON is taken as a string (``source=data/chartqa``)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ValueError(f"expected --set KEY=VALUE, got {text!r}")
    value, why = loads_json(raw)
    if why is None:
        return key, value
    if why.startswith("not JSON"):
        return key, raw
    raise ValueError(f"--set {key[:80]}: the value is {why}; give a flatter or shorter value")


def json_flag(flag: str, text: str, example: str = '{"name": "simulated", "skill": 3.0}',
              specs: str = "simulated or openai:MODEL@URL") -> Any:
    """The JSON value of ``flag`` (a JSON object given on the command line), or a message
    naming the flag."""
    value, why = loads_json(text)
    if why is not None:
        raise ValueError(f"{flag} {brief(text, 80)} is {why}; give a JSON object such as '{example}', or a spec such "
                         f"as {specs}")
    return value


def rewriter_flag(text: str | None) -> Any:
    """``--rewriter``: a spec, or a JSON object of a model rewriter's settings."""
    if text is None or not text.strip().startswith("{"):
        return text
    return json_flag("--rewriter", text, '{"name": "transformers", "model_dir": "DIR", "max_new_tokens": 64}',
                     "search:8, openai:MODEL@URL or transformers:DIR")


#: options several commands share (how a run runs does not change what it writes)
BACKEND = typer.Option(None, "--backend", help="local (worker processes) | ray (Ray actors on a local instance or "
                       "the cluster at --ray-address); the output does not depend on it [local]")
WORKERS = typer.Option(None, "--workers", help="worker processes (local) or Ray actors (ray); the output does not "
                       "depend on it [1]")
RAY_ADDRESS = typer.Option(None, "--ray-address", help="an existing Ray cluster ('auto', 'ray://HOST:10001'); "
                           "default: a local instance")
RAY_CPUS = typer.Option(None, "--ray-cpus", help="CPUs per Ray worker [1]")
RAY_GPUS = typer.Option(None, "--ray-gpus", help="GPUs per Ray worker, for a local actor model [0]")
THREADS = typer.Option(None, "--threads", help="native (BLAS, OpenMP) threads per worker [1]")
IN_FLIGHT = typer.Option(None, "--episodes-in-flight", help="episodes each worker runs side by side, so that an actor "
                         "server gets their requests at once [1]")
PROGRESS = typer.Option(True, "--progress/--no-progress", help="show a progress bar")
SETTINGS = typer.Option(None, "--set", help="setting KEY=VALUE (the value read as JSON, else as text); repeatable")
CONFIG = typer.Option(None, "--config", help="a TOML or JSON file of settings (the flags override it)")
ACTOR = "simulated, openai:MODEL@URL for an OpenAI-compatible server (key from $OPENAI_API_KEY), or a JSON object"
REWRITER = ("random | search | search:N | openai:MODEL@URL | transformers:DIR (a local model folder), or a JSON object "
            "with a model's settings ({\"name\": \"transformers\", \"model_dir\": DIR, \"max_new_tokens\": 64})")


def _runtime(values: dict[str, Any]) -> dict[str, Any]:
    """The runtime settings (``pipeline.RUNTIME``) among a command's arguments that were given."""
    from vicogym.runs import generate as generation
    return {key: values[key] for key in generation.RUNTIME if values.get(key) is not None}


@app.command()
def generate(
    env_id: str | None = typer.Argument(None, help="environment id (see `vicogym envs`); default vicogym/Chart-v0"),
    n: int | None = typer.Option(None, "--n", help="samples to generate [64]"),
    out: str | None = typer.Option(None, "--out", help="output folder (or fsspec URL), resumable [vicogym-out]"),
    seed: int | None = typer.Option(None, "--seed", help="run seed: same seed, same bytes [0]"),
    workers: int | None = WORKERS,
    keep: str | None = typer.Option(None, "--keep", help="final | all | sweet [final]"),
    episodes_per_shard: int | None = typer.Option(None, "--episodes-per-shard",
                                                     help="episodes per Parquet shard [16]"),
    max_episodes: int | None = typer.Option(None, "--max-episodes", help="episode budget [max(4n, 32)]"),
    k: int | None = typer.Option(None, "--k", help="actor rollouts per sample (same as --set k=K) [8]"),
    probe: str | None = typer.Option(None, "--probe", help="fixed: every probe draws K answers; sequential: "
                                        "batches of probe_batch (3) until the Beta posterior puts the pass rate in or "
                                        "out of the sweet zone with probe_confidence (0.8), at most K (--set "
                                        "probe=...) [fixed]"),
    actor: str | None = typer.Option(None, "--actor", help=ACTOR + " [simulated]"),
    rewriter: str | None = typer.Option(None, "--rewriter", help=REWRITER + " [random]"),
    max_turns: int | None = typer.Option(None, "--max-turns", help="edit turns per episode (--set max_turns=T) [3]"),
    source: str | None = typer.Option(None, "--source", help="seed source of the environment (--set source=S)"),
    tier2: str | None = typer.Option(None, "--tier2", help="drop | keep: real records whose answer their own "
                                        "table contradicts (--set tier2=...)"),
    settings: list[str] | None = SETTINGS,
    config_file: Path | None = CONFIG,
    backend: str | None = BACKEND,
    ray_address: str | None = RAY_ADDRESS,
    ray_cpus: float | None = RAY_CPUS,
    ray_gpus: float | None = RAY_GPUS,
    threads: int | None = THREADS,
    episodes_in_flight: int | None = IN_FLIGHT,
    progress: bool = PROGRESS,
) -> None:
    """Run rewriter episodes and stream accepted samples to Parquet shards (--set: an
    environment setting)."""
    arguments = dict(locals())
    from vicogym.errors import VicogymError
    from vicogym.runs import generate as workflow

    if env_id is not None and _is_agent_env(env_id):
        _generate_tasks(env_id, n, out, seed, episodes_per_shard, settings, config_file, progress)
        return
    try:
        data = load_config_file(config_file) if config_file is not None else {}
        flags = {"env_id": env_id, "n": n, "out": out, "seed": seed, "workers": workers, "keep": keep,
                 "rewriter": rewriter_flag(rewriter), "episodes_per_shard": episodes_per_shard,
                 "max_episodes": max_episodes}
        data.update({key: value for key, value in flags.items() if value is not None})
        data.update(_runtime(arguments))
        env_kwargs = data.get("env_kwargs") or {}
        if not isinstance(env_kwargs, dict):
            raise ValueError(f"expected env_kwargs as a table of environment settings, got {env_kwargs!r}")
        env_kwargs = dict(env_kwargs)
        if actor is not None and actor.strip().startswith("{"):
            actor = json_flag("--actor", actor)  # a JSON actor object, as --set actor=... takes it
        sugar = {"k": k, "max_turns": max_turns, "source": source, "tier2": tier2, "actor": actor, "probe": probe}
        env_kwargs.update({key: value for key, value in sugar.items() if value is not None})
        env_kwargs.update(parse_setting(text) for text in settings or [])
        data["env_kwargs"] = env_kwargs
        config = workflow.GenerateConfig.from_mapping(data)
        resumed: list[int] = []
        manifest = workflow.generate(config, progress=progress, on_resume=resumed.append)
    except (VicogymError, ValueError, TypeError, OSError) as exc:
        raise _fail(str(exc)) from None
    except KeyboardInterrupt as stop:
        raise _interrupted(stop) from None
    counts = manifest["counts"]
    _summary(manifest)
    before = resumed[0] if resumed else 0
    if before and before >= counts["samples"]:
        held = f"all {before} samples" if manifest["complete"] else f"{before} samples, all its episode budget makes"
        console.print(f"{config.out} already holds {held}; nothing to do")
    else:
        console.print(
            (f"resumed: {before} samples were on disk, wrote {counts['samples'] - before} more " if before else
             f"wrote {counts['samples']} samples ")
            + f"from {counts['episodes']} episodes to {config.out} ({counts['rejected_steps']} of "
            f"{counts['steps']} edits rejected: {json.dumps(manifest['rejections'])})"
        )
    if not manifest["complete"]:
        console.print(f"[yellow]only {counts['samples']} of {config.n} samples within the episode budget[/yellow]")
        raise typer.Exit(1)


def _interrupted(stop: KeyboardInterrupt) -> typer.Exit:
    """Ctrl-C during a run: what it keeps on disk, and that the same command resumes it (exit 130)."""
    from vicogym.errors import RunInterrupted

    if isinstance(stop, RunInterrupted):
        kept = f"{stop.out} keeps {stop.samples} of {stop.requested} samples"
    else:
        kept = "it had not started writing samples"
    errors.print(f"[yellow]stopped:[/yellow] {escape(kept)}; run the same command again to resume it", highlight=False)
    return typer.Exit(130)


def _is_agent_env(env_id: str) -> bool:
    from vicogym.errors import VicogymError
    from vicogym.registry import env_kind

    try:
        return env_kind(env_id) == "agent"
    except (VicogymError, KeyError, TypeError):
        return False  # the generate workflow names what is wrong with the id


def _settings(settings: list[str] | None, config_file: Path | None) -> dict[str, Any]:
    data = load_config_file(config_file) if config_file is not None else {}
    env_kwargs = dict(data.get("env_kwargs") or {})
    env_kwargs.update(parse_setting(text) for text in settings or [])
    return env_kwargs


def _generate_tasks(env_id: str, n: int | None, out: str | None, seed: int | None,
                    per_shard: int | None, settings: list[str] | None, config_file: Path | None,
                    progress: bool) -> None:
    """``vicogym generate vicogym/Evidence-v0``: the tasks themselves, as Parquet rows."""
    from vicogym.errors import VicogymError
    from vicogym.evidence import runs as evidence_runs

    runs = evidence_runs
    try:
        manifest = runs.generate_tasks(out or "vicogym-out", n=64 if n is None else n, seed=0 if seed is None else seed,
                                       env_kwargs=_settings(settings, config_file),
                                       episodes_per_shard=16 if per_shard is None else per_shard,
                                       progress=_bar(progress, n or 64))
    except (VicogymError, ValueError, TypeError, OSError, ImportError) as exc:
        raise _fail(str(exc)) from None
    console.print(f"wrote {manifest['counts']['rows']} {env_id} tasks to {out or 'vicogym-out'}")


def _bar(show: bool, total: int) -> Any:
    if not show:
        return None
    from tqdm import tqdm

    bars: list[Any] = []  # made at the first episode, so that a run refused at its start shows no bar

    def advance(done: int) -> None:
        if not bars:
            bars.append(tqdm(total=total, unit="episode"))
        bars[0].update(max(0, done - bars[0].n))
        if done >= total:
            bars[0].close()

    return advance


def _summary(manifest: dict) -> None:
    """The table that ends a run: counts, acceptance, sweet-zone hits, rejections, and who
    gave the pass rates (a stand-in is said so, with how to plug a model in)."""
    from rich.table import Table

    from vicogym.runs.verify import run_actor

    counts = manifest["counts"]
    actor = run_actor(manifest)
    table = Table(title=f"{manifest['env']['id']}: run summary", show_header=False)
    table.add_row("samples", f"{counts['samples']} of {counts['requested']}")
    table.add_row("episodes", str(counts["episodes"]))
    accepted = counts["valid_steps"] / counts["steps"] if counts["steps"] else 0.0
    table.add_row("edits accepted", f"{counts['valid_steps']} of {counts['steps']} ({accepted:.0%})")
    table.add_row("pass rates from", escape(actor.short()))
    table.add_row("sweet-zone hit rate", f"{manifest.get('sweet_zone_hit_rate', 0.0):.0%} of kept samples")
    for code, n in manifest["rejections"].items():
        table.add_row(f"rejected: {code}", str(n))
    console.print(table)
    console.print(("[yellow]note:[/yellow] " if actor.stand_in else "") + escape(actor.line()), highlight=False)
    note = (manifest.get("source") or {}).get("note")
    if note:
        console.print(f"[yellow]note:[/yellow] {escape(note)}", highlight=False)


def run_kinds() -> tuple[Any, ...]:
    """The kinds of run folder ``vicogym verify`` and ``vicogym report`` take, each with
    what marks its folder, its verifier and its report (or why it has none), in the order
    they are recognised (:class:`vicogym.runs.kinds.RunKind`)."""
    from vicogym.evidence import runs as evidence_runs
    from vicogym.instruct import run_folder
    from vicogym.runs import report_page
    from vicogym.runs import verify as generation
    from vicogym.runs.kinds import RunKind

    def evidence(name: str, command: str) -> RunKind:
        return RunKind(name, command, marks=(), records=(name,),
                       verify=lambda folder, o: evidence_runs.verify_evidence(folder, images=o.images),
                       report="report pages are written for generation runs, evolve rounds, synthesis runs and "
                       "craft runs; `vicogym verify {folder}` replays this one")

    return (
        evidence("evidence-traces", "vicogym evidence run"),
        evidence("evidence-tasks", "vicogym generate vicogym/Evidence-v0"),
        RunKind("synthesis", "vicogym synthesize", marks=("memory.sqlite",),
                verify=lambda folder, o: run_folder.verify_synthesis(folder, images=o.images),
                report=run_folder.write_report_page),
        RunKind("craft", "vicogym craft", marks=("craft.json",),
                verify="check it by running its `vicogym craft` command again (it rewrites the same ledger, skill "
                "and test bytes); verify checks generation, synthesis and evidence runs",
                report=_craft_page),
        RunKind("generation", "vicogym generate", marks=("manifest.json", "run.json", "part-*.parquet"), urls=True,
                verify=lambda folder, o: generation.verify(folder, images=o.images, source=o.source,
                                                           allow_unreplayed=o.allow_unreplayed),
                report=report_page.write_report_page),
        RunKind("evolve", "vicogym evolve", marks=("round-*/manifest.json",),
                verify="a folder of generation runs, one a round: verify each, `vicogym verify {folder}/round-000` "
                "and so on",
                report=report_page.write_report_page),
    )


def verify_folder(folder: str | Path, images: bool = True, source: str | None = None,
                  allow_unreplayed: bool = False) -> Any:
    """Check the run in ``folder`` (any kind :func:`run_kinds` names) with its kind's
    verifier: a :class:`vicogym.runs.kinds.Findings`."""
    from vicogym.runs import kinds

    return kinds.verify_folder(folder, run_kinds(), kinds.VerifyOptions(images, source, allow_unreplayed))


def report_folder(folder: str | Path, out: str | Path | None = None, limit: int = 200) -> Path:
    """Write the report of the run in ``folder`` (any kind :func:`run_kinds` names) with its
    kind's report: the page's path."""
    from vicogym.runs import kinds

    return kinds.report_folder(folder, run_kinds(), out, limit)


@app.command()
def verify(
    out: str = typer.Argument(..., help="a run folder (or filesystem URL): generation, synthesis or evidence"),
    images: bool = typer.Option(True, "--images/--no-images", help="decode, re-render and compare every image"),
    source: str | None = typer.Option(None, "--source", help="the run's source data, to replay its episodes from"),
    allow_unreplayed: bool = typer.Option(False, "--allow-unreplayed",
                                          help="accept rows whose episodes cannot be replayed here (their source is "
                                          "not on this machine): the other checks alone"),
) -> None:
    """Check a run against its manifest, replay every episode and re-derive every label."""
    from vicogym.errors import VicogymError

    try:
        findings = verify_folder(out, images=images, source=source, allow_unreplayed=allow_unreplayed)
    except (VicogymError, ValueError, OSError) as exc:
        raise _fail(str(exc)) from None
    for note in findings.notes:
        errors.print(f"[yellow]note:[/yellow] {escape(note)}", highlight=False)
    for where, reason in findings.problems[:MAX_PROBLEMS_SHOWN]:
        errors.print(f"[red]PROBLEM[/red] {escape(where)}: {escape(reason)}", highlight=False)
    if len(findings.problems) > MAX_PROBLEMS_SHOWN:
        errors.print(f"... and {len(findings.problems) - MAX_PROBLEMS_SHOWN} more", highlight=False)
    console.print(escape(findings.verdict(out)))
    if findings.problems:
        raise typer.Exit(1)


@app.command()
def export(
    run: str = typer.Argument(..., help="a folder (or filesystem URL) written by `vicogym generate`, or a "
                              "`vicogym synthesize` folder (SFT data: instruction, image, verified response)"),
    out: Path = typer.Option(..., "--out", help="folder for the exported files"),
    format: str = typer.Option("llamafactory", "--format", help="llamafactory: the rewriter's edits as multimodal "
                               "ShareGPT with a dataset_info.json entry"),
    pairs: bool = typer.Option(False, "--pairs/--no-pairs",
                               help="also preference pairs (ranking): each sweet-zone edit against a rejected or "
                               "off-zone edit from the same state"),
) -> None:
    """Export a run's edit transitions as training data for the rewriter."""
    from vicogym.errors import VicogymError
    from vicogym.instruct import run_folder
    from vicogym.runs import llamafactory

    llamafactory, instruct = llamafactory, run_folder
    if format not in llamafactory.FORMATS:
        raise _fail(f"expected --format in {list(llamafactory.FORMATS)}, got {format!r}")
    if instruct.is_instruct_run(run):
        try:
            counts = instruct.export_instruct(run, out)
        except (VicogymError, ValueError, OSError) as exc:
            raise _fail(str(exc)) from None
        console.print(f"wrote {counts['records']} SFT records (instruction, image, verified response) to {out}")
        _warn_stand_in(counts, out)
        return
    try:
        counts = llamafactory.export_llamafactory(run, out, pairs=pairs)
    except (VicogymError, ValueError, OSError) as exc:
        raise _fail(str(exc)) from None
    console.print(f"wrote {counts['records']} records from {counts['transitions']} edits to {out} "
                  f"({counts['dropped_off_zone']} edits off the sweet zone left out)"
                  + (f" and {counts['pairs']} preference pairs" if pairs else ""))
    _warn_stand_in(counts, out)


def _warn_stand_in(counts: dict, out: Path) -> None:
    """An export whose data a stand-in gave (text, pass rates) says so on the terminal, as
    its ``dataset_info.json`` does."""
    stand_in = counts.get("stand_in")
    if stand_in:
        errors.print(f"[yellow]warning:[/yellow] {escape(stand_in['note'])}; recorded as stand_in in "
                     f"{escape(str(out / 'dataset_info.json'))}", highlight=False)


@app.command()
def evolve(
    env_id: str | None = typer.Argument(None, help="environment id; default vicogym/Chart-v0"),
    rounds: int = typer.Option(2, "--rounds", help="co-evolution rounds"),
    n: int = typer.Option(64, "--n", help="samples per round"),
    out: str = typer.Option("vicogym-evolve", "--out", help="output folder, resumable"),
    seed: int = typer.Option(0, "--seed", help="round r generates with seed + r"),
    workers: int = typer.Option(1, "--workers",
                                help="worker processes (local) or Ray actors (ray); the output does not depend on it"),
    actor: str = typer.Option("simulated", "--actor", help="the first round's actor: " + ACTOR),
    rewriter: str = typer.Option("search", "--rewriter", help=REWRITER),
    train_actor: str | None = typer.Option(None, "--train-actor", help="trl-grpo (TRL's GRPO on the round's rows, "
                                              "from --actor transformers:DIR; flags for python -m "
                                              "vicogym.trainers.grpo_actor may follow) or a shell command run after "
                                              "each round; placeholders {round} {round_dir} {verl_files} "
                                              "{rewriter_data} {dataset_info} {next_actor_file} {next_rewriter_file} "
                                              "{actor} {rewriter} {python}"),
    train_rewriter: str | None = typer.Option(None, "--train-rewriter", help="trl-rwr (reward-weighted regression "
                                                 "on the round's edits, from --rewriter transformers:DIR; flags for "
                                                 "python -m vicogym.trainers.rwr_rewriter may follow) or a shell "
                                                 "command (the same placeholders)"),
    strong_actor: str | None = typer.Option(None, "--strong-actor", help="an actor whose pass rates before and after "
                                            "editing each round measures, or none [the simulated actor at skill 2.2, "
                                            "a stand-in]"),
    weak_actor: str | None = typer.Option(None, "--weak-actor", help="the same for a weak actor, or none [the "
                                          "simulated actor at skill 1.0, a stand-in]"),
    heldout: str = typer.Option("generated", "--heldout", help="held-out set each round's trained actor is scored "
                                "on: generated (made once under OUT/heldout/), a generation run folder, or none"),
    heldout_n: int | None = typer.Option(None, "--heldout-n", help="samples of the generated held-out set [--n]"),
    heldout_k: int = typer.Option(1, "--heldout-k", help="answers per held-out row [1]"),
    episodes_per_shard: int = typer.Option(16, "--episodes-per-shard", help="episodes per Parquet shard"),
    settings: list[str] | None = SETTINGS,
    backend: str | None = BACKEND,
    ray_address: str | None = RAY_ADDRESS,
    ray_cpus: float | None = RAY_CPUS,
    ray_gpus: float | None = RAY_GPUS,
    threads: int | None = THREADS,
    episodes_in_flight: int | None = IN_FLIGHT,
    progress: bool = PROGRESS,
) -> None:
    """Run rewriter-actor rounds: generate, export both trainers' data, train, switch models
    (--set: an environment setting)."""
    arguments = dict(locals())
    from dataclasses import replace

    from rich.table import Table

    from vicogym.errors import VicogymError
    from vicogym.runs import evolve as workflow


    def show(r: int, stats: dict) -> None:
        table = Table(title=f"round {r}", show_header=False)
        manifest = Path(out) / f"round-{r:03d}" / "manifest.json"
        if manifest.is_file():
            from vicogym.runs.verify import run_actor

            table.add_row("pass rates from", escape(run_actor(json.loads(manifest.read_text())).short()))
        table.add_row("sweet-zone hit rate", f"{stats['sweet_zone_hit_rate']:.0%}")
        table.add_row("pass rate before -> after", f"{stats['pass_rate_before']:.2f} -> {stats['pass_rate_after']:.2f}")
        table.add_row("editing intensity", f"{stats['editing_intensity']:.2f}")
        probed = [name for name in ("strong", "weak") if stats.get(name)]
        for name in probed:
            table.add_row(f"{name}: before -> after",
                          f"{stats[name]['pass_rate_before']:.2f} -> {stats[name]['pass_rate_after']:.2f}")
        if probed:
            table.caption = escape("; ".join(f"{name} actor: {stats[name]['actor']}" for name in probed))
        table.add_row("rejections", json.dumps(stats["rejections"]))
        if "rewriter_instruction_chars" in stats:  # a round exported before the round table kept fewer numbers
            table.add_row("rewriter edit instruction", f"{stats['rewriter_instruction_chars']:.0f} characters, "
                          f"{stats['rewriter_instruction_tokens']:.1f} tokens on average")
            table.add_row("actor answers (as kept)", f"{stats['actor_answer_chars']:.1f} characters, "
                          f"{stats['actor_answer_words']:.1f} words on average")
        console.print(table)

    def actor_flag(flag: str, text: str) -> Any:
        if text.strip().lower() == "none":
            return None
        return json_flag(flag, text) if text.strip().startswith("{") else text

    try:
        spec = json_flag("--actor", actor) if actor.strip().startswith("{") else actor
        config = workflow.EvolveConfig(env_id=env_id or "vicogym/Chart-v0", rounds=rounds, n=n, out=out, seed=seed,
                              workers=workers, episodes_per_shard=episodes_per_shard,
                              env_kwargs=dict(parse_setting(text) for text in settings or []), actor=spec,
                              rewriter=rewriter_flag(rewriter), train_actor=train_actor, train_rewriter=train_rewriter,
                              runtime=_runtime(arguments))
        config = replace(config, heldout=None if heldout.strip().lower() == "none" else heldout, heldout_n=heldout_n,
                         heldout_k=heldout_k, **{name: actor_flag(f"--{name.replace('_', '-')}", text) for name, text
                                                 in (("strong_actor", strong_actor), ("weak_actor", weak_actor))
                                                 if text is not None})
        state = workflow.evolve(config, progress=progress, on_round=show)
    except (VicogymError, ValueError, TypeError, OSError) as exc:
        raise _fail(str(exc)) from None
    worked = state.get("rounds_worked_on", [])
    console.print(workflow.round_table(state))
    if not worked:
        console.print(f"all {rounds} rounds of {out} were done already: nothing ran (more rounds: --rounds "
                      f"{rounds + 1}; `vicogym report {out}` to look at them)")
        return
    console.print(f"{state['finished_rounds']} rounds in {out} (rounds {', '.join(map(str, worked))} worked on now; "
                  f"state in {out}/evolve.json; `vicogym report {out}` to look at them)")


@app.command()
def synthesize(
    n: int | None = typer.Option(None, "--n",
                                    help="accepted samples wanted; whole rounds run, so a few more may come [64]"),
    out: str | None = typer.Option(None, "--out", help="run folder with memory.sqlite, resumable and extendable "
                                      "[runs/instruct]"),
    seed: int | None = typer.Option(None, "--seed", help="run seed: same seed, same samples [0]"),
    images: list[str] | None = typer.Option(None, "--images", help="image source: an environment id (its "
                                               "structures ground the constraints) or a folder of images; repeatable "
                                               "[vicogym/Chart-v0 and vicogym/Natural-v0]"),
    per_round: int | None = typer.Option(None, "--per-round", help="images per round [16]"),
    probes: int | None = typer.Option(None, "--probes", help="target-model responses per sample (K) [4]"),
    candidates: int | None = typer.Option(None, "--candidates", help="candidate instructions per image [4]"),
    discover: float | None = typer.Option(None, "--discover", help="share of images on which the proposer may add "
                                             "a constraint type [0]"),
    writer: str | None = typer.Option(None, "--writer", help="synthesis model: simulated | openai:MODEL@URL"),
    target: str | None = typer.Option(None, "--target", help="probed model: simulated | openai:MODEL@URL"),
    judge: str | None = typer.Option(None, "--judge", help="judge of judge-track constraints: simulated | "
                                        "openai:MODEL@URL"),
    composer: str | None = typer.Option(None, "--composer", help="template | openai:MODEL@URL"),
    embedder: str | None = typer.Option(None, "--embedder", help="hashing | a local Hugging Face model folder"),
    perceiver: str | None = typer.Option(None, "--perceiver",
                                            help="for image folders: simulated | openai:MODEL@URL"),
    proposer: str | None = typer.Option(None, "--proposer", help="new constraint types: simulated | "
                                           "openai:MODEL@URL"),
    concurrency: int | None = typer.Option(None, "--concurrency", help="samples executed side by side (model "
                                              "requests in flight); the output does not depend on it [1]"),
    backend: str | None = BACKEND,
    workers: int | None = WORKERS,
    ray_address: str | None = RAY_ADDRESS,
    ray_cpus: float | None = RAY_CPUS,
    settings: list[str] | None = SETTINGS,
    config_file: Path | None = CONFIG,
) -> None:
    """Synthesize instruction-following samples with verifiable constraints (VISA loop;
    --set: a synthesis setting)."""
    from vicogym.errors import VicogymError
    from vicogym.instruct import synthesis

    workflow = synthesis

    try:
        data = load_config_file(config_file) if config_file is not None else {}
        data.update(parse_setting(text) for text in settings or [])
        flags = {"n": n, "out": out, "seed": seed, "images": images or None, "per_round": per_round, "probes": probes,
                 "candidates": candidates, "discover": discover, "writer": writer, "target": target, "judge": judge,
                 "composer": composer, "embedder": embedder, "perceiver": perceiver, "proposer": proposer,
                 "concurrency": concurrency, "backend": backend, "workers": workers, "ray_address": ray_address,
                 "ray_cpus": ray_cpus}
        data.update({key: value for key, value in flags.items() if value is not None})
        config = workflow.SynthesizeConfig.from_mapping(data)
        manifest = workflow.synthesize(config, log=lambda line: console.print(line, highlight=False))
    except (VicogymError, ValueError, TypeError, OSError) as exc:
        raise _fail(str(exc)) from None
    console.print(f"{manifest['samples']} samples in {config.out} after {len(manifest['rounds'])} rounds "
                  f"(registry {manifest['registry']} types); `vicogym report {config.out}` plots the statistics")
    from vicogym.instruct.models import stand_ins

    stand_in = stand_ins(manifest["identity"])
    if stand_in:
        console.print(f"[yellow]note:[/yellow] {escape(stand_in['note'])}", highlight=False)


@app.command("report")
def report_command(
    folder: str = typer.Argument(..., help="a run folder (or filesystem URL), or a folder of round-* runs"),
    out: Path | None = typer.Option(None, "--out", help="where to write the report [FOLDER/report]"),
    limit: int = typer.Option(200, "--limit", min=1, help="samples shown on the page"),
) -> None:
    """Write a static HTML page and plots to look at a run's samples."""
    from vicogym.errors import VicogymError

    try:
        page = report_folder(folder, out, limit)
    except (VicogymError, ValueError, OSError) as exc:
        raise _fail(str(exc)) from None
    console.print(f"wrote {page}")


@app.command("eval")
def eval_command(
    run: str = typer.Argument(..., help="a run folder written by `vicogym generate` (or its filesystem URL)"),
    actor: str = typer.Option(..., "--actor", help=ACTOR + "; its extractor reads the answers"),
    k: int = typer.Option(1, "--k", min=1, help="answers per row; with K > 1 also pass@K [1]"),
    out: str | None = typer.Option(None, "--out", help="the summary's JSON file, the rows' results beside it "
                                   "(.rows.jsonl) [RUN/eval.json]"),
    seed: int = typer.Option(0, "--seed", min=0, help="seed of the actor's sampling [0]"),
    of: str = typer.Option("sample", "--of", help="what each row shows: sample (its image) or seed (the sample it "
                           "was edited from, rendered again) [sample]"),
    progress: bool = PROGRESS,
) -> None:
    """Score a model on every row of a generation run with the row's own scorer: accuracy
    per environment, question family and difficulty (resumable: a rerun asks only the rows
    not yet scored)."""
    from vicogym.errors import VicogymError
    from vicogym.runs import evaluate as evaluation
    from vicogym.runs import kinds

    try:
        kind = kinds.recognise(run, run_kinds())
        if kind.name != "generation":
            raise ValueError(f"{run} is {kind.a()} run (`{kind.command}`); `vicogym eval` scores the rows of a "
                             "generation run: name a folder `vicogym generate` wrote")
        spec = json_flag("--actor", actor) if actor.strip().startswith("{") else actor
        summary = evaluation.evaluate(evaluation.EvalConfig(run, spec, k=k, out=out, seed=seed, of=of),
                                       progress=progress)
    except (VicogymError, ValueError, TypeError, OSError) as exc:
        raise _fail(str(exc)) from None
    except KeyboardInterrupt:
        errors.print("[yellow]stopped:[/yellow] the rows scored so far are kept; run the same command again to go "
                     "on", highlight=False)
        raise typer.Exit(130) from None
    console.print(evaluation.summary_table(summary))
    console.print(f"wrote {escape(summary['out'])} ({summary['rows_scored']} rows; each row's result in "
                  f"{escape(summary['rows_file'])} beside it)", highlight=False, soft_wrap=True)


@app.command()
def serve(
    env_id: str = typer.Argument(..., help="environment id (see `vicogym envs`)"),
    host: str = typer.Option("127.0.0.1", "--host", help="address to listen on (0.0.0.0: every interface)"),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="port to listen on"),
    env_kwargs: str | None = typer.Option(None, "--env-kwargs", help="environment settings as a JSON object, "
                                             "e.g. '{\"k\": 4}' [none]"),
    max_sessions: int = typer.Option(64, "--max-sessions", min=1, help="environments held at once: WebSocket "
                                     "sessions, HTTP calls and warm ones together"),
    max_request_bytes: int = typer.Option(1 << 20, "--max-request-bytes", min=1024,
                                          help="largest request body or WebSocket message, in bytes"),
    session_ttl: float = typer.Option(600.0, "--session-ttl", help="seconds a session may sit idle before it is "
                                      "closed (0: never)"),
) -> None:
    """Serve an environment over OpenEnv (WebSocket sessions at /ws; /reset, /step, /state,
    /schema, /health over HTTP); see docs/trainers-openenv.md."""
    from vicogym.errors import VicogymError
    from vicogym.trainers.common import settings_from

    try:
        if not math.isfinite(session_ttl) or session_ttl < 0:
            raise ValueError(f"--session-ttl: expected seconds >= 0 (0: sessions never expire), got {session_ttl}")
        from vicogym.trainers import openenv as module  # MissingExtra without openenv, fastapi, uvicorn

        settings = settings_from(env_kwargs, "--env-kwargs")
        application = module.make_app(env_id, settings, max_sessions=max_sessions,
                                      max_request_bytes=max_request_bytes, session_ttl_s=session_ttl or None)
    except (VicogymError, ValueError, TypeError, ImportError) as exc:
        raise _fail(str(exc)) from None
    console.print(f"serving {env_id} on http://{host}:{port} (WebSocket sessions at ws://{host}:{port}/ws)")
    module.run(application, host, port)


evidence_app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                           help="Evidence reading (vicogym/Evidence-v0): play episodes with an executor.")
app.add_typer(evidence_app, name="evidence")


@evidence_app.command("run")
def evidence_run(
    tasks: str = typer.Argument(..., help="task families (forms, slides, multichart, clevr_detail, clevr_sequence, "
                                "all; comma-separated) or data (funsd:FOLDER, jsonl:FILE)"),
    executor: str = typer.Option("simulated", "--executor", help="simulated | simulated:largest | simulated:oracle | "
                                 "direct | ocr | ocr:largest | ocr:oracle | direct:ocr | direct:openai:MODEL@URL | "
                                 "openai:MODEL@URL [simulated]"),
    skill: str | None = typer.Option(None, "--skill", help="a skill folder (reader.md, answer_contract.md, "
                                        "view_contract.md, protocol.json, interface.json) or a built-in skill: "
                                        "initial, direct [none]"),
    out: str = typer.Option("vicogym-evidence", "--out", help="run folder, resumable [vicogym-evidence]"),
    n: int = typer.Option(32, "--n", help="episodes [32]"),
    seed: int = typer.Option(0, "--seed", help="run seed: same seed, same traces [0]"),
    episodes_per_shard: int = typer.Option(16, "--episodes-per-shard", help="episodes per Parquet shard [16]"),
    settings: list[str] | None = SETTINGS,
    config_file: Path | None = CONFIG,
    progress: bool = PROGRESS,
) -> None:
    """Play episodes and write their traces (every action, view, reply, score and the
    evidence support); `vicogym verify RUN` replays them."""
    from vicogym.errors import VicogymError
    from vicogym.evidence import runs as evidence_runs

    runs = evidence_runs
    try:
        specs = [t.strip() for t in tasks.split(",") if t.strip()]
        manifest = runs.run_traces(specs if len(specs) != 1 else specs[0], executor, out, n=n, seed=seed, skill=skill,
                                   env_kwargs=_settings(settings, config_file), episodes_per_shard=episodes_per_shard,
                                   progress=_bar(progress, n))
    except (VicogymError, ValueError, TypeError, OSError, ImportError) as exc:
        raise _fail(str(exc)) from None
    table = Table("family", "episodes", "score", "evidence support", "failures", title=f"{executor}: {out}")
    for family, s in sorted(manifest["summary"].items()):
        table.add_row(family, str(s["episodes"]), f"{s['score']:.3f}", f"{s['support']:.3f}",
                      json.dumps(s["failures"], sort_keys=True))
    console.print(table)
    from vicogym.evidence.report import executor_kind

    console.print(f"{escape(executor)}: {escape(executor_kind(executor))}", highlight=False)


CRAFT_ACTIONS = ("report", "transfer", "grammar")


@app.command(context_settings={"allow_interspersed_args": True})
def craft(
    ctx: typer.Context,
    args: list[str] | None = typer.Argument(None, help="TASKS (families or data, comma-separated) [forms,slides]; "
                                               "or `report DIR...`, `transfer DIR...`, `grammar`"),
    executor: str = typer.Option("simulated", "--executor", help="the frozen executor: simulated[:POLICY][,acuity=X]"
                                 " | ocr[:POLICY] (Tesseract reads) | openai:MODEL@URL [simulated]"),
    optimizer: str = typer.Option("guided", "--optimizer", help="guided | random | openai:MODEL@URL [guided]"),
    modes: str = typer.Option("text,interface,joint", "--modes", help="search modes, comma-separated: text, "
                              "interface, joint, alternating, staged [text,interface,joint]"),
    rounds: int = typer.Option(4, "--rounds", help="rounds per search [4]"),
    submissions: int = typer.Option(4, "--submissions", help="submissions per round [4]"),
    dev: int = typer.Option(6, "--dev", help="development items per task spec [6]"),
    test: int = typer.Option(8, "--test", help="test items per task spec [8]"),
    repeats: int = typer.Option(2, "--repeats", help="episodes per item and skill [2]"),
    seed: int = typer.Option(0, "--seed", help="the run's seed: splits, proposals, episodes [0]"),
    start: str = typer.Option("initial", "--start", help="the skill the searches start from: a folder or "
                              "`initial` [initial]"),
    out: str = typer.Option("vicogym-craft", "--out", help="run folder (resumable); for report: the page's folder "
                            "[vicogym-craft; report: DIR/report]"),
    settings: list[str] | None = SETTINGS,
    config_file: Path | None = CONFIG,
    progress: bool = PROGRESS,
) -> None:
    """Evolve skills for a frozen executor (ViewCraft's loop: proposals, the replay
    filter, the paired gate, interface projection) and evaluate them on held-out items;
    `craft report DIR...` prints the main table and writes the plots; `craft transfer
    DIR...` evaluates each run's skill on each run's executor; `craft grammar` prints the
    interface grammar."""
    from vicogym.errors import VicogymError
    from vicogym.evidence import craft as crafting
    from vicogym.evidence import interface

    args = list(args or [])
    # what the command line set (typer carries its own click: its sources are compared by name)
    named = {p.name for p in ctx.command.params if getattr(ctx.get_parameter_source(p.name), "name", "") != "DEFAULT"}
    given = [p.opts[0] for p in ctx.command.params if p.name in named - {"args", "out", "progress"}]
    out_given = "out" in named
    try:
        if args and args[0] in CRAFT_ACTIONS and given:
            raise ValueError(f"{given[0]} sets up a craft run; `vicogym craft {args[0]}` takes "
                             f"{'--out' if args[0] == 'report' else 'no setting'}")
        if args and args[0] in ("transfer", "grammar") and out_given:
            where = "it writes transfer.json into the first run" if args[0] == "transfer" else "it prints"
            raise ValueError(f"`vicogym craft {args[0]}` takes no --out ({where})")
        if args and args[0] == "grammar":
            console.print_json(json.dumps(interface.SCHEMA))
            return
        if args and args[0] in ("report", "transfer"):
            if len(args) < 2:
                raise ValueError(f"`vicogym craft {args[0]}` needs run folders: vicogym craft {args[0]} DIR...")
            if args[0] == "report":
                _craft_report(args[1:], out if out_given else None)
            else:
                _craft_transfer(args[1:])
            return
        if len(args) > 1:
            raise ValueError(f"expected one TASKS argument (comma-separated), got {args}; or report DIR..., "
                             "transfer DIR..., grammar")
        module = crafting
        tasks = [t.strip() for t in args[0].split(",") if t.strip()] if args else list(module.DEFAULT_TASKS)
        config = module.CraftConfig(tasks=tasks, executor=executor, optimizer=optimizer,
                                    modes=[m.strip() for m in modes.split(",") if m.strip()], rounds=rounds,
                                    submissions=submissions, dev=dev, test=test, repeats=repeats, seed=seed,
                                    start=start, env_settings=_settings(settings, config_file))
        say = (lambda text: errors.print(escape(text), highlight=False)) if progress else None
        result = module.craft(out, config, progress=say)
    except (VicogymError, ValueError, TypeError, OSError, ImportError) as exc:
        raise _fail(str(exc)) from None
    import numpy as np

    table = Table("variant", "test score", "pixels/episode", title=f"craft: {out}")
    for name, data in result["variants"].items():
        rows = data["rows"]
        table.add_row(name, f"{np.mean([r['score'] for r in rows]):.3f}", f"{np.mean([r['pixels'] for r in rows]):.0f}")
    console.print(table)
    console.print(f"ledgers and skills in {out}/<mode>/; `vicogym craft report {out}` for the statistics")


def _craft_report(dirs: list[str], out: str | None) -> None:
    from vicogym.evidence import report as craft_report
    report = craft_report
    result, page = report.write_report(dirs, out)
    console.print(f"executor {result['executor']['spec']}: {result['executor']['kind']}")
    for family in result["families"] + ["all"]:
        table = Table(*report.HEADER, title=family)
        for row in report.rows_of(result, family):
            table.add_row(*row)
        console.print(table)
    for name, test in result["tests"].items():
        console.print(f"{name}: {json.dumps(test, sort_keys=True)}")
    if "crossing" in result:
        c = result["crossing"]["all"]
        console.print(f"terminal crossing (interaction, all families): {c['estimate']:+.3f} "
                      f"[{c['low']:+.3f}, {c['high']:+.3f}]")
    console.print(f"wrote {page}")


def _craft_page(folder: str | Path, out: Path | None, limit: int) -> Path:
    """``vicogym report`` of one craft run: its page (every item counts; ``limit`` is for samples)."""
    from vicogym.evidence import report as craft_report

    return craft_report.write_report([folder], out)[1]


def _craft_transfer(dirs: list[str]) -> None:
    from vicogym.evidence import craft as crafting
    from vicogym.evidence import report as craft_report
    module, report = crafting, craft_report
    matrix = module.transfer(dirs)
    table = Table("skill evolved with \\ evaluated on", *matrix["executors"], title="transfer (test score)")
    for row in report.transfer_rows(matrix):
        table.add_row(*row)
    console.print(table)
    for spec in matrix["executors"]:
        console.print(f"{spec}: {report.executor_kind(spec)}")
    console.print(f"wrote {Path(dirs[0]) / 'transfer.json'}")


if __name__ == "__main__":
    app()
