"""The plots' shared pieces: a folder of PNG figures (:class:`Plots`), whole-number count
axes, bars of counts, and empty plots that say so. Matplotlib is imported when a folder of
plots is first made (reports need it; nothing else here does)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np


class Plots:
    """PNG figures written into ``out`` at ``dpi``; :attr:`names` lists them in order."""

    def __init__(self, out: Path, dpi: int) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        self.plt, self.out, self.dpi = plt, out, dpi
        self.names: list[str] = []
        out.mkdir(parents=True, exist_ok=True)

    def figure(self, figsize: tuple[float, float], **kwargs: Any) -> tuple[Any, Any]:
        """A new figure and its axes (``kwargs`` go to ``plt.subplots``)."""
        return self.plt.subplots(figsize=figsize, **kwargs)

    def save(self, fig: Any, name: str) -> None:
        """Lay ``fig`` out, write it as ``out/name`` and close it."""
        fig.tight_layout()
        fig.savefig(self.out / name, dpi=self.dpi)
        self.plt.close(fig)
        self.names.append(name)


def counts_axis(axis: Any) -> None:
    """Ticks at whole numbers only, on an axis that counts things."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


def nothing_to_show(ax: Any, text: str) -> None:
    """An empty plot says so, without axes that mean nothing."""
    ax.set_axis_off()
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=11, color="#555555")


def count_bars(ax: Any, counts: Mapping[str, int], label: str, color: str, empty: str = "no samples",
               horizontal: bool = False) -> None:
    """Bars of counts, in whole numbers; ``empty`` where there are none. Upright: how many
    samples have each whole-number value (``counts`` keyed by the value as text, ``label``
    the value's name). Horizontal: one bar per named category, the first on top (``label``
    what is counted)."""
    if not counts:
        nothing_to_show(ax, empty)
    elif horizontal:
        names = list(counts)[::-1]
        ax.barh(names, [counts[name] for name in names], color=color)
        ax.set_xlabel(label)
        counts_axis(ax.xaxis)
    else:
        ax.bar([int(k) for k in counts], list(counts.values()), color=color)
        ax.set(xlabel=label, ylabel="samples")
        counts_axis(ax.xaxis)
        counts_axis(ax.yaxis)


def per_round(ax: Any, rounds: list[str], series: Mapping[str, list[float]], top: float | None = 1.0) -> None:
    """Each named series' value per round, on a 0-``top`` scale (``None``: from 0 to what
    the values need): lines over the rounds where there are two or more; for one round, a
    bar per series with its value printed (a line through one point would be a lone dot,
    showing no trend)."""
    colors = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728")
    if len(rounds) > 1:
        x = np.arange(len(rounds))
        for (name, values), marker in zip(series.items(), "os^v"):
            ax.plot(x, values, marker=marker, label=name)
        ax.set_xticks(x, labels=rounds)
        ax.legend()
    else:
        names = list(series)
        bars = ax.bar(np.arange(len(names)), [series[n][0] for n in names], color=colors[:len(names)])
        ax.bar_label(bars, fmt="%.2f")
        ax.set_xticks(np.arange(len(names)), labels=names)
        ax.set_xlabel(f"{rounds[0] if rounds else 'no round'}: one round, so no trend to draw")
    if top is None:
        ax.set_ylim(bottom=0)
    else:
        ax.set_ylim(0, top)


def rate_bins(k: int) -> np.ndarray:
    """Histogram edges for pass rates of ``k`` probes (multiples of 1/k): one bin per
    possible rate, centred on it, so that no bin is empty by construction."""
    return (np.arange(k + 2) - 0.5) / k
