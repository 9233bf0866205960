"""Command line: ``vicogym envs``, ``vicogym generate``, ``vicogym verify``."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Verifiable visual environments for VLM RL.")
console = Console()
errors = Console(stderr=True, soft_wrap=True)


@app.command()
def envs() -> None:
    """List the registered environments."""
    import vicogym

    table = Table("id", "description")
    for env_id, description in vicogym.list_environments():
        table.add_row(env_id, description)
    console.print(table)


@app.command()
def generate(
    env_id: str = typer.Argument("vicogym/Chart-v0", help="environment id (see `vicogym envs`)"),
    n: int = typer.Option(64, "--n", help="samples to generate"),
    out: Path = typer.Option(Path("vicogym-out"), "--out", help="output folder (resumable)"),
    k: int = typer.Option(8, "--k", help="actor rollouts per sample"),
    seed: int = typer.Option(0, "--seed", help="run seed: same seed, same bytes"),
    workers: int = typer.Option(1, "--workers", help="worker processes (output does not depend on it)"),
    keep: str = typer.Option("final", "--keep", help="final | all | sweet"),
    source: str = typer.Option("procedural", "--source", help="'procedural' or a ChartQA-format folder"),
    max_turns: int = typer.Option(3, "--max-turns", help="edit turns per episode"),
    episodes_per_shard: int = typer.Option(16, "--episodes-per-shard"),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
) -> None:
    """Run rewriter episodes and stream accepted samples to Parquet shards."""
    from vicogym.errors import UnknownEnvironment
    from vicogym.pipeline import GenerateConfig
    from vicogym.pipeline import generate as run

    try:
        config = GenerateConfig(env_id=env_id, n=n, out=str(out), k=k, seed=seed, workers=workers, keep=keep,
                                source=source, max_turns=max_turns, episodes_per_shard=episodes_per_shard)
        manifest = run(config, progress=progress)
    except (ValueError, UnknownEnvironment, FileNotFoundError) as exc:
        errors.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2)
    counts = manifest["counts"]
    console.print(f"wrote {counts['samples']} samples from {counts['episodes']} episodes to {out} "
                  f"({counts['rejected_steps']} of {counts['steps']} edits rejected: {json.dumps(manifest['rejections'])})")
    if not manifest["complete"]:
        console.print(f"[yellow]only {counts['samples']} of {n} samples within the episode budget[/yellow]")
        raise typer.Exit(1)


@app.command()
def verify(out: Path = typer.Argument(..., help="a folder written by `vicogym generate`")) -> None:
    """Re-derive every stored label from the stored structure and label rule."""
    from vicogym.pipeline import verify as run

    try:
        n, bad = run(out)
    except FileNotFoundError as exc:
        errors.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2)
    for row_id, reason in bad:
        errors.print(f"[red]MISMATCH[/red] {escape(row_id)}: {escape(reason)}", highlight=False)
    if bad:
        console.print(f"{len(bad)} of {n} rows failed verification")
        raise typer.Exit(1)
    console.print(f"all {n} rows verified")


if __name__ == "__main__":
    app()
