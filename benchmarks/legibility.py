"""The legibility curves: how well Tesseract reads the text the package prints, per font
and cap height, and the fitted legible size of each font (``assets/legibility.json``).

Each font is drawn the way the package draws it:

- ``forms``: the four form fonts and their bold faces (``sources/evidence/forms.py``
  ``FONTS`` and ``BOLD``), each string laid out as a form text in unit pixels at a value
  size the family uses (6.5-9 px cap height) and drawn by the forms region renderer
  (``renderers/evidence/forms.py``) at the scale that gives the cap height: PIL at a
  fractional size anchored at the baseline, supersampled below one view pixel per unit
  pixel, exactly as a view of a page is drawn;
- ``slides``: a slide's bullet and title fonts (DejaVu Sans at 26 unit px, its bold
  face at 40), drawn as ``renderers/evidence/charts.py`` draws a slide's text: PIL at the
  whole size nearest the scaled one, supersampled below one view pixel per unit pixel;
- ``charts``: DejaVu Sans through matplotlib's Agg rasteriser, a figure's ``fig.text`` at
  the dpi that gives the cap height, as the chart renderer draws data labels, ticks and
  legends (Chart-v0's images);
- ``chart_views``: the same text as the evidence arm shows it: drawn by matplotlib at a
  slide chart's full detail (14.5-20 px cap height) and area-averaged down to the view
  (``renderers/evidence/charts.py`` cuts its views from that render). Smoothed by the
  averaging, it reads better than text rasterised small: this is the curve of the
  evidence arm's chart text (``LEGIBLE_TEXT_PX``).

The strings are what the package prints: form values from the forms family's own value
generators (names, companies, dates, phones, money, ids, addresses, check-box options)
and its labels; chart numbers (data labels, tick labels), category and series names from
``assets/chart_topics.json``; slide titles and bullet lines. Each string is cropped at its
text box (the renderer's own box: a form text's measured box, a slide line's box,
matplotlib's window extent) and read with ``vicogym.ocr.reader().text(crop, mode="line")``.
A word is read right when it appears, exactly, in the longest common subsequence of the
truth's and the reading's words (a dash is a dash and a quote a quote, whatever their
code point); character accuracy is 1 - edits / characters (the Levenshtein distance of the
whole string against the longer of truth and reading, summed over strings).

Per font, a logistic curve of word accuracy against cap height is fitted by maximum
likelihood (``vicogym.legibility.fit``); its ``c50`` is the font's legible size, the cap
height at which Tesseract reads a word right half of the time. The table prints it
against the 7 px the package assumed before this measurement.

    python benchmarks/legibility.py [--words 150] [--jobs 2] [--seed 0] [--write]

Without ``--write`` it prints the measurement and compares it with the stored file; with
it, it writes ``assets/legibility.json``. Tesseract is a floor: a strong model reads
smaller text.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import time
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
ASSET = REPO / "assets" / "legibility.json"
#: the cap height the package assumed legible before this measurement
ASSUMED_PX = 7.0
#: cap heights measured (view pixels): every half pixel from 2 to 14, and quarter pixels
#: where the curves turn (2-7 px)
CAPS = tuple(sorted({round(float(c), 2) for c in (*np.arange(2.0, 14.001, 0.5), *np.arange(2.25, 7.0, 0.5))}))
FORMS_FONTS = ("DejaVuSans.ttf", "DejaVuSerif.ttf", "DejaVuSansMono.ttf", "STIXGeneral.ttf", "DejaVuSans-Bold.ttf",
               "DejaVuSerif-Bold.ttf", "DejaVuSansMono-Bold.ttf", "STIXGeneralBol.ttf")
SLIDES_FONTS = ("DejaVuSans.ttf", "DejaVuSans-Bold.ttf")
CURVES = (*(("forms", f) for f in FORMS_FONTS), *(("slides", f) for f in SLIDES_FONTS),
          ("charts", "DejaVuSans.ttf"), ("chart_views", "DejaVuSans.ttf"))
#: above this cap height every curve is flat: half the words are drawn there
FLAT_ABOVE = 8.0
#: the chart renderer's data labels are set at 0.8-0.9 of a spec's 9-11 pt: the size the
#: matplotlib figure uses (its dpi then sets the pixels)
CHART_PT = 8.0
#: the cap heights (px) of chart text in a slide chart's full-detail render (100 dpi x
#: max_scale 2: 7.2-9.9 pt labels at 200 dpi), which the evidence arm's views area-average down
VIEW_SOURCE_CAPS = (14.5, 20.0)
#: what a reader types for characters that print alike
SAME = str.maketrans({"\u2212": "-", "\u2013": "-", "\u2014": "-", "\u2010": "-", "\u2011": "-", "\u2018": "'",
                      "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " "})


# -- strings ------------------------------------------------------------------------------------
def _style(rng: np.random.Generator) -> dict[str, Any]:
    from vicogym.sources.evidence.forms import DATE_STYLES, PHONE_STYLES
    from vicogym.validation import pick

    return {"date": pick(rng, DATE_STYLES), "phone": pick(rng, PHONE_STYLES), "dollar": bool(rng.random() < 0.7)}


def form_string(rng: np.random.Generator) -> str:
    """A text a form page prints as a label or a value, in about the mix a page has."""
    from vicogym.sources.evidence import forms as F
    from vicogym.validation import pick

    u = rng.random()
    if u < 0.55:
        _, kind = pick(rng, F.LINE_FIELDS)
        return F._value(kind, rng, _style(rng))
    if u < 0.65:
        return pick(rng, F._address(rng))
    if u < 0.72:
        return pick(rng, pick(rng, F.CHOICES)[1])
    if u < 0.78:
        return ("$" if rng.random() < 0.7 else "") + f"{math.exp(rng.uniform(math.log(8), math.log(2500))):,.2f}"
    label = pick(rng, (*(f[0] for f in F.LINE_FIELDS), *(c[0] for c in F.CHOICES), *F.ADDRESS_LABELS, *F.CHARGES))
    return label + ":" if rng.random() < 0.8 else label


def _minus(text: str) -> str:
    return text.replace("-", "\u2212") if text.startswith("-") else text  # matplotlib's minus sign


def chart_string(rng: np.random.Generator) -> str:
    """A text a chart prints: a data label, a tick label, a category or a series name."""
    from vicogym.answers import format_number
    from vicogym.sources.chart import topics
    from vicogym.validation import pick

    data = topics()
    topic = pick(rng, data["topics"])
    u = rng.random()
    if u < 0.4:
        low, high, decimals = float(topic["low"]), float(topic["high"]), int(topic["decimals"])
        value = round(float(rng.uniform(low, high)), decimals)
        return _minus(format_number(value) + ("%" if topic["unit"] == "%" else ""))
    if u < 0.6:
        from matplotlib.ticker import MaxNLocator

        ticks = MaxNLocator(nbins="auto").tick_values(min(0.0, float(topic["low"])), float(topic["high"]))
        return _minus(format_number(float(pick(rng, list(ticks)))))
    if u < 0.85:
        return pick(rng, data["categories"][topic["index"]])
    return pick(rng, [*topic["series"], *topic["multi"]])


def slide_string(rng: np.random.Generator) -> str:
    """A line a slide prints: its title or a bullet line."""
    from vicogym.sources.chart import topics
    from vicogym.sources.evidence.slides import NOTES, SOURCES
    from vicogym.validation import pick

    topic = pick(rng, topics()["topics"])
    u = rng.random()
    if u < 0.35:
        return topic["title"].format(index=topic["index_name"].lower())
    if u < 0.55:
        return f"Source: {pick(rng, SOURCES)}"
    if u < 0.7:
        return f"Values: {topic['y_label']}"
    if u < 0.85:
        return pick(rng, NOTES)
    return chart_string(rng)


STRINGS = {"forms": form_string, "slides": slide_string, "charts": chart_string, "chart_views": chart_string}


# -- drawing ------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _forms_renderer() -> Any:
    from vicogym.renderers.evidence.forms import RegionRenderer

    return RegionRenderer()


def draw_forms(text: str, font: str, cap: float, rng: np.random.Generator) -> np.ndarray:
    """``text`` laid out as a form text at a size the family uses, drawn by the forms
    region renderer at the scale that shows it at ``cap`` view pixels, cut at its box."""
    from vicogym.sources.evidence import forms as F
    from vicogym.structures.evidence import Unit
    from vicogym.validation import pick

    px = F.px_for_cap(font, float(rng.uniform(6.5, 9.0)), 6.5, 9.0)
    x, y = 20.0 + float(rng.random()), 20.0 + F.line_extent(font, px)[0] + float(rng.random())
    box = F.text_box(font, px, text, x, y)
    spec = {"texts": [{"id": 0, "text": text, "font": font, "px": px, "x": x, "y": y,
                       "w": F.measure(font, px, text)[0], "box": box, "color": list(pick(rng, F.INK))}]}
    unit = Unit("form", math.ceil(box[2]) + 20, math.ceil(box[3]) + 20, spec)
    scale = cap / (px * F.cap_ratio(font))
    # whole view pixels at exactly this scale: the crop reaches a fraction of a pixel past the box
    w, h = math.ceil((box[2] - box[0]) * scale), math.ceil((box[3] - box[1]) * scale)
    crop = (box[0], box[1], box[0] + w / scale, box[1] + h / scale)
    return _forms_renderer().draw(unit, crop, (w, h))


def _cap_ratio(font: str) -> float:
    from vicogym.sources.evidence.forms import cap_ratio

    return cap_ratio(font)


#: a slide's unit font size (px) by font: the bullets' and the title's
SLIDE_PX = {"DejaVuSans.ttf": 26, "DejaVuSans-Bold.ttf": 40}


def draw_slides(text: str, font: str, cap: float, rng: np.random.Generator) -> np.ndarray:
    """``text`` as a slide line (a bullet in DejaVu Sans, a title in its bold face) shown at
    ``cap`` view pixels, drawn as the slide renderer draws it: PIL at the whole size
    nearest the scaled one, anchored at its top-left, and under one view pixel per unit
    pixel drawn that many times larger (at most 32) and area-averaged down; cut at the
    line's box (its advance by 1.2 times its size)."""
    from PIL import Image, ImageDraw

    from vicogym.renderers.evidence import font as face_of
    from vicogym.renderers.evidence import resize
    from vicogym.renderers.evidence.charts import TEXT

    px = SLIDE_PX[font]
    scale = cap / (px * _cap_ratio(font))
    k = 1 if scale >= 1.0 else min(32, math.ceil(1.0 / scale - 1e-9))
    x, y = 40.0 + float(rng.random()), 40.0 + float(rng.random())
    box = (x, y, x + face_of(font, px).getlength(text), y + px * 1.2)
    w, h = math.ceil((box[2] - box[0]) * scale), math.ceil((box[3] - box[1]) * scale)
    s = scale * k
    picture = Image.new("RGB", (w * k, h * k), (255, 255, 255))
    face = face_of(font, max(1, round(px * s)))
    ImageDraw.Draw(picture).text(((x - box[0]) * s, (y - box[1]) * s), text, font=face, fill=TEXT, anchor="la")
    return resize(np.asarray(picture), (w, h))


class _ChartCanvas:
    """One matplotlib figure per cap height, its one text artist set to each string."""

    def __init__(self, cap: float):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure


        self.dpi = cap / (CHART_PT / 72.0 * _cap_ratio("DejaVuSans.ttf"))
        em = CHART_PT / 72.0 * self.dpi
        self.size = (int(40 * em) + 40, int(3 * em) + 20)
        self.figure = Figure(figsize=(self.size[0] / self.dpi, self.size[1] / self.dpi), dpi=self.dpi)
        self.canvas = FigureCanvasAgg(self.figure)
        self.text = self.figure.text(0.0, 0.0, "", fontsize=CHART_PT)

    def draw(self, text: str, rng: np.random.Generator) -> np.ndarray:
        w, h = self.size
        self.text.set_text(text)
        self.text.set_position(((10 + rng.random()) / w, (h / 2 + rng.random()) / h))
        self.canvas.draw()
        pixels = np.asarray(self.canvas.buffer_rgba())[..., :3]
        extent = self.text.get_window_extent(renderer=self.canvas.get_renderer())
        # the renderer's text box (display pixels, origin bottom-left) to whole image rows and columns
        x0, x1 = math.floor(extent.x0) - 1, math.ceil(extent.x1) + 1
        y0, y1 = math.floor(h - extent.y1) - 1, math.ceil(h - extent.y0) + 1
        return pixels[max(0, y0):y1, max(0, x0):x1].copy()


@lru_cache(maxsize=32)
def _chart_canvas(cap: float) -> _ChartCanvas:
    return _ChartCanvas(cap)


def draw_charts(text: str, font: str, cap: float, rng: np.random.Generator) -> np.ndarray:
    """``text`` drawn by matplotlib (Agg) at the dpi that gives it ``cap`` pixels, cut at
    its window extent."""
    if font != "DejaVuSans.ttf":
        raise ValueError(f"charts draw DejaVuSans.ttf (matplotlib's default), not {font!r}")
    return _chart_canvas(cap).draw(text, rng)


def draw_chart_views(text: str, font: str, cap: float, rng: np.random.Generator) -> np.ndarray:
    """``text`` as the evidence arm shows chart text: drawn by matplotlib at a slide
    chart's full detail (:data:`VIEW_SOURCE_CAPS`), cut at its window extent and
    area-averaged down to ``cap`` pixels (``renderers/evidence/charts.py`` cuts every view
    of a chart from that render or from area-averaged copies of it)."""
    from vicogym.renderers.evidence import resize

    source = float(pick_cap(rng))
    big = draw_charts(text, font, source, rng)
    scale = cap / source
    return resize(big, (max(1, round(big.shape[1] * scale)), max(1, round(big.shape[0] * scale))))


def pick_cap(rng: np.random.Generator) -> float:
    """A full-detail cap height, to the quarter pixel (so a few figures serve every string)."""
    lo, hi = VIEW_SOURCE_CAPS
    return round(float(rng.uniform(lo, hi)) * 4) / 4


DRAW = {"forms": draw_forms, "slides": draw_slides, "charts": draw_charts, "chart_views": draw_chart_views}


# -- reading ------------------------------------------------------------------------------------
def same(text: str) -> str:
    """``text`` as a reader types it: NFKC, one kind of dash and quote, spaces collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).translate(SAME).split())


def words_right(truth: Sequence[str], read: Sequence[str]) -> int:
    """How many of ``truth``'s words ``read`` has, in order (their longest common subsequence)."""
    table = [[0] * (len(read) + 1) for _ in range(len(truth) + 1)]
    for i, a in enumerate(truth, 1):
        for j, b in enumerate(read, 1):
            table[i][j] = table[i - 1][j - 1] + 1 if a == b else max(table[i - 1][j], table[i][j - 1])
    return table[-1][-1]


def measure(drawn: str, font: str, cap: float, words: int, seed: Sequence[int], reader: Any = None,
            examples: int = 0) -> dict[str, Any]:
    """Draw fresh strings of ``font`` the way ``drawn`` names at cap height ``cap`` until
    they hold ``words`` words, read each, and count: strings, words, right, chars, edits
    (and ``examples`` pairs of truth and reading)."""
    from vicogym import ocr
    from vicogym.answers import levenshtein

    reader = reader or ocr.reader()
    rng = np.random.default_rng(np.random.SeedSequence(list(seed)))
    make, draw = STRINGS[drawn], DRAW[drawn]
    out = {"cap": cap, "strings": 0, "words": 0, "right": 0, "chars": 0, "edits": 0, "examples": []}
    while out["words"] < words:
        printed = make(rng)
        truth = same(printed)
        read = same(reader.text(draw(printed, font, cap, rng), mode="line"))
        t_words = truth.split()
        out["strings"] += 1
        out["words"] += len(t_words)
        out["right"] += words_right(t_words, read.split())
        out["chars"] += max(len(truth), len(read))
        out["edits"] += levenshtein(truth, read)
        if len(out["examples"]) < examples:
            out["examples"].append([truth, read])
    return out


def _job(args: tuple[str, str, float, int, tuple[int, ...]]) -> tuple[str, str, dict[str, Any]]:
    drawn, font, cap, words, seed = args
    return drawn, font, measure(drawn, font, cap, words, seed, examples=2)


def run(words: int, jobs: int, seed: int, curves: Sequence[tuple[str, str]] = CURVES) -> list[dict[str, Any]]:
    """Measure every curve; return the records ``assets/legibility.json`` stores."""
    from vicogym.legibility import fit

    tasks = []
    for n, (drawn, font) in enumerate(curves):
        for m, cap in enumerate(CAPS):
            tasks.append((drawn, font, float(cap), words if cap <= FLAT_ABOVE else words // 2, (seed, n, m)))
    if jobs > 1:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            results = pool.map(_job, tasks, chunksize=4)
    else:
        results = [_job(t) for t in tasks]
    records = []
    for drawn, font in curves:
        sizes = [r for d, f, r in results if (d, f) == (drawn, font)]
        k, c50 = fit([s["cap"] for s in sizes], [s["words"] for s in sizes], [s["right"] for s in sizes])
        records.append({"font": font, "drawn": drawn, "k": k, "c50": c50,
                        "sizes": [{key: s[key] for key in ("cap", "strings", "words", "right", "chars", "edits")}
                                  | {"word_accuracy": round(s["right"] / s["words"], 4),
                                     "char_accuracy": round(1 - s["edits"] / s["chars"], 4)} for s in sizes],
                        "examples": {f"{s['cap']:g}": s["examples"] for s in sizes}})
    return records


def report(records: Sequence[dict[str, Any]], stored: dict[str, Any] | None) -> None:
    from vicogym.legibility import logistic

    old = {(c["font"], c["drawn"]): c for c in (stored or {}).get("curves", [])}
    print(f"{'curve':34s} {'c50':>6s} {'k':>6s}  {'7 px / c50':>10s}  {'stored c50':>10s}")
    for r in records:
        was = old.get((r["font"], r["drawn"]))
        print(f"{r['drawn'] + ': ' + r['font']:34s} {r['c50']:6.2f} {r['k']:6.2f}  {ASSUMED_PX / r['c50']:10.2f}  "
              f"{was['c50'] if was else float('nan'):10.2f}")
    for r in records:
        print(f"\n{r['drawn']}: {r['font']}  (fitted: p(c) = 1 / (1 + exp(-{r['k']:.3f} (c - {r['c50']:.3f}))); "
              f"legible at {r['c50']:.2f} px against the {ASSUMED_PX:g} px assumed)")
        print(f"  {'cap':>5s} {'words':>6s} {'word acc':>8s} {'fitted':>7s} {'char acc':>8s}   example")
        for s in r["sizes"]:
            ex = r["examples"].get(f"{s['cap']:g}") or [["", ""]]
            fitted = logistic(r["k"] * (s["cap"] - r["c50"]))
            print(f"  {s['cap']:5.2f} {s['words']:6d} {s['word_accuracy']:8.3f} {fitted:7.3f} {s['char_accuracy']:8.3f}"
                  f"   {ex[0][0]!r} -> {ex[0][1]!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=150,
                        help=f"words drawn per font and cap height (whole strings; half above {FLAT_ABOVE:g} px)")
    parser.add_argument("--jobs", type=int, default=2, help="processes reading at once")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", action="store_true", help=f"write {ASSET.relative_to(REPO)}")
    args = parser.parse_args()
    if args.words < 10 or args.jobs < 1:
        parser.error(f"expected --words >= 10 and --jobs >= 1, got {args.words} and {args.jobs}")
    # one thread per reading process: Tesseract's OpenMP threads would fight the pool for cores
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from vicogym import ocr

    ocr.require()
    start = time.perf_counter()
    records = run(args.words, args.jobs, args.seed)
    seconds = time.perf_counter() - start
    stored = json.loads(ASSET.read_text(encoding="utf-8")) if ASSET.exists() else None
    report(records, stored)
    lines = sum(s["strings"] for r in records for s in r["sizes"])
    print(f"\n{lines} strings drawn and read in {seconds:.0f} s with {args.jobs} processes "
          f"({seconds / lines * args.jobs * 1000:.1f} ms a string per process)")
    if args.write:
        import matplotlib
        import PIL

        data = {
            "about": "Tesseract's word and character accuracy on the text the package prints, per font, way of "
                     "drawing and cap height (view pixels), and the logistic curve of word accuracy fitted to it "
                     "by maximum likelihood: c50 is the legible size. Tesseract is a floor: a strong model reads "
                     "smaller text.",
            "provenance": {"script": "benchmarks/legibility.py", "command": f"python benchmarks/legibility.py "
                           f"--words {args.words} --seed {args.seed} --write", "tesseract": ocr.version(),
                           "reader": {"mode": "line", "border": ocr.BORDER, "upscale": ocr.UPSCALE, "lang": ocr.LANG},
                           "pillow": PIL.__version__, "matplotlib": matplotlib.__version__,
                           "date": datetime.date.today().isoformat(), "seconds": round(seconds),
                           "assumed_before_px": ASSUMED_PX},
            "curves": records,
        }
        ASSET.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {ASSET.relative_to(REPO)}")


if __name__ == "__main__":
    main()
