"""How the ``ocr`` executor answers: from what Tesseract reads in the views it was sent
(:mod:`vicogym.ocr`), by one documented procedure per kind of question. Nothing here
looks at a task's answer or evidence boxes: only the question, the views' pixels and
their geometry (which unit a tile shows, at what scale: what an executor is told of
every image).

**A form's field** ("What is the value of the field 'Label'?", any question that names
a label in quotes). In each view of the page, most detailed first (the largest scale),
the reader looks for the label: a run of words on one line (or ending on the next line,
a label wrapped in a cell) whose text is within :data:`LABEL_MATCH` of it (the edit
similarity, case and a trailing colon left out: a misread letter or two is still the
label). The value is then

- *beside* it: the first run of words to its right on the same baseline (runs split
  where a gap is wider than :data:`RUN_GAP` line heights), when that run is not itself
  a label (it ends with a colon) and starts closer than a value written *below* would;
- else *below* it: the line starting under the label (within :data:`BELOW_X` line
  heights of its left end, at most :data:`BELOW_Y` line heights down), with the lines
  that follow it as closely as the lines of one address (:data:`LINE_PITCH`);
- for a check-box group (the label followed by several options), the option whose box,
  the square just left of its first word, holds the most ink.

The value is the words read, joined by single spaces (an address's lines too).

**One slide's chart** ("In the slide titled 'T', what is the S value for R?", "... what
is the highest (lowest) S value shown?", "... which W has the highest (lowest) S
value?"). The reader finds the slide by its title in a sheet's labels ("Unit i: T",
read with the same similarity), then reads the views of that slide, most detailed first:
the category labels it finds, and for each the numbers printed beside it in the chart's
direction (above a column's label for columns and lines, right of a bar's label for
bars, nearest for a pie's): with several series, the one printed on a mark of the colour
of S's swatch in the legend.
The answer is the number read beside R, the highest (lowest) of the numbers read, or the
category beside it.

A question of another kind, a slide it cannot find, a label it cannot read: no answer
(the empty string), with the reason in :attr:`Reading.failure`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vicogym.answers import levenshtein, normalize_text, parse_number
from vicogym.ocr import Word, lines

#: how alike a run of read words must be to a label to be taken for it (1 - the
#: normalised edit distance): a misread character in a ten-letter label still matches
LABEL_MATCH = 0.8
#: a gap wider than this many line heights ends a run of words
RUN_GAP = 2.5
#: where a value written below its label may start: this many line heights left or right
#: of the label's left end (an address indents its lines), and at most this many line
#: heights below it (a cell's value sits at its foot, under a small label)
BELOW_X, BELOW_Y = 2.5, 4.5
#: the widest gap, in line heights, between the lines of one value (an address's lines
#: stand closer than a form's rows)
LINE_PITCH = 1.6
#: two mark colours are one when their channels differ by less than this in all (the
#: palettes' colours differ by far more; anti-aliasing and area-averaging by less)
SAME_COLOUR = 60

_QUOTED = re.compile(r"'([^']+)'")
_SLIDE = re.compile(r"^In the slide titled '(?P<title>.+?)', (?:what is the (?P<series>.+?) value for (?P<row>.+?)\?"
                    r"|what is the (?P<extreme>highest|lowest) (?P<series2>.+?) value shown\?"
                    r"|which .+? has the (?P<arg>highest|lowest) (?P<series3>.+?) value\?)", re.S)


@dataclass
class Seen:
    """One view as it was read: its record (tiles with unit, crop, scale, place), its
    pixels and the words Tesseract found in them (boxes in view pixels)."""

    view: Mapping[str, Any]
    pixels: np.ndarray
    words: list[Word]

    def detail(self, unit: int) -> float:
        return max((t["scale"] for t in self.view["tiles"] if t["unit"] == unit), default=0.0)

    def tile_words(self, unit: int) -> list[Word]:
        """The words inside the tiles of ``unit``."""
        out = []
        for t in self.view["tiles"]:
            if t["unit"] != unit:
                continue
            w = round((t["crop"][2] - t["crop"][0]) * t["scale"])
            h = round((t["crop"][3] - t["crop"][1]) * t["scale"])
            x0, y0 = t["at"]
            out += [word for word in self.words if x0 - 1 <= (word.box[0] + word.box[2]) / 2 <= x0 + w + 1
                    and y0 - 1 <= (word.box[1] + word.box[3]) / 2 <= y0 + h + 1]
        return out


@dataclass
class Reading:
    """The answer read, and why there is none when there is none."""

    answer: str = ""
    failure: str | None = None


def similarity(a: str, b: str) -> float:
    """1 - the edit distance of ``a`` and ``b`` (case left out) over the longer one's length."""
    a, b = a.lower(), b.lower()
    if not a or not b:
        return float(a == b)
    return 1.0 - levenshtein(a, b) / max(len(a), len(b))


_NUMBER = re.compile(r"^[-\u2212]?\$?\d[\d,]*(?:\.\d+)?%?$")


def is_number(text: str) -> bool:
    """Whether ``text`` is printed as a number (a data label, a tick): digits with
    thousands commas, a decimal point, a sign, a dollar or a percent sign, nothing else
    (a category such as "Q2 '22" is not)."""
    return bool(_NUMBER.match(text.strip()))


def _key(text: str) -> str:
    return normalize_text(text).rstrip(":").strip()


def _height(words: Sequence[Word]) -> float:
    return float(np.median([w.box[3] - w.box[1] for w in words])) if words else 1.0


def _span(words: Sequence[Word]) -> tuple[float, float, float, float]:
    return (min(w.box[0] for w in words), min(w.box[1] for w in words), max(w.box[2] for w in words),
            max(w.box[3] for w in words))


def find_phrase(words: Sequence[Word], phrase: str, wrap: bool = False) -> tuple[list[Word], float] | None:
    """The run of ``words`` (on one line, or one line and the start of the next when
    ``wrap``) that reads most like ``phrase``, and how alike, if at least
    :data:`LABEL_MATCH`."""
    want = _key(phrase)
    n = max(1, len(want.split()))
    rows = lines(words)
    best: tuple[list[Word], float] | None = None
    for r, row in enumerate(rows):
        tails = [[]] + ([rows[r + 1][:k] for k in range(1, n + 1)] if wrap and r + 1 < len(rows) else [])
        for start in range(len(row)):
            for stop in range(start + 1, min(len(row), start + n + 2) + 1):
                for tail in tails:
                    run = row[start:stop] + tail
                    score = similarity(_key(" ".join(w.text for w in run)), want)
                    if best is None or score > best[1]:
                        best = (run, score)
    return best if best is not None and best[1] >= LABEL_MATCH else None


def _same_baseline(a: Word, b: Word, height: float) -> bool:
    return abs((a.box[1] + a.box[3]) / 2 - (b.box[1] + b.box[3]) / 2) < 0.5 * height


def _runs(words: Sequence[Word], height: float) -> list[list[Word]]:
    """``words`` of one line, left to right, split where a gap is wider than :data:`RUN_GAP` heights."""
    out: list[list[Word]] = []
    for word in sorted(words, key=lambda w: w.box[0]):
        if out and word.box[0] - out[-1][-1].box[2] <= RUN_GAP * height:
            out[-1].append(word)
        else:
            out.append([word])
    return out


# -- a form's field -------------------------------------------------------------------------
def read_field(question: str, seen: Sequence[Seen], unit: int = 0) -> Reading:
    """The value of the field the question names, read from the views of ``unit`` (see
    the module notes)."""
    quoted = _QUOTED.findall(question)
    if not quoted:
        return Reading(failure="unsupported")
    label = quoted[0]
    views = sorted((s for s in seen if s.detail(unit) > 0), key=lambda s: -s.detail(unit))
    if not views:
        return Reading(failure="missed_unit")
    for s in views:
        words = s.tile_words(unit)
        found = find_phrase(words, label, wrap=True)
        if found is None:
            continue
        value = _value_of(found[0], [w for w in words if w not in found[0]], s.pixels)
        if value:
            return Reading(value)
    # the label and its value read in different views (a table's row: its name and its
    # amount far apart): every view's words put back where they lie on the unit
    words = unit_words(views, unit)
    found = find_phrase(words, label, wrap=True)
    if found is not None:
        value = _value_of(found[0], [w for w in words if w not in found[0]], None)
        if value:
            return Reading(value)
    return Reading(failure="unreadable")


def unit_words(views: Sequence[Seen], unit: int) -> list[Word]:
    """The words read in ``views`` (most detailed first) of ``unit``, their boxes in the
    unit's pixels; a word a more detailed view read too (their boxes overlap) is taken
    from that view only."""
    out: list[Word] = []
    for s in views:
        for t in (t for t in s.view["tiles"] if t["unit"] == unit):
            x0, y0 = t["at"]
            sx = round((t["crop"][2] - t["crop"][0]) * t["scale"]) / (t["crop"][2] - t["crop"][0])
            sy = round((t["crop"][3] - t["crop"][1]) * t["scale"]) / (t["crop"][3] - t["crop"][1])
            for w in s.tile_words(unit):
                box = (t["crop"][0] + (w.box[0] - x0) / sx, t["crop"][1] + (w.box[1] - y0) / sy,
                       t["crop"][0] + (w.box[2] - x0) / sx, t["crop"][1] + (w.box[3] - y0) / sy)
                if not any(_overlaps(box, o.box) for o in out):
                    out.append(Word(w.text, box, w.conf, (len(out), 0, 0)))
    return _relined(out)


def _overlaps(a: Sequence[float], b: Sequence[float]) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def _relined(words: Sequence[Word]) -> list[Word]:
    """``words`` given line numbers by their baselines (words from several views share no
    line numbering of Tesseract's)."""
    out, line, last = [], -1, None
    for w in sorted(words, key=lambda w: ((w.box[1] + w.box[3]) / 2, w.box[0])):
        centre = (w.box[1] + w.box[3]) / 2
        if last is None or centre - last > 0.5 * (w.box[3] - w.box[1]):
            line += 1
            last = centre
        out.append(Word(w.text, w.box, w.conf, (0, 0, line)))
    return out


def _value_of(label: Sequence[Word], others: Sequence[Word], pixels: np.ndarray | None) -> str:
    h = _height(label)
    x0, y0, x1, y1 = _span(label)
    last = max(label, key=lambda w: (w.box[3], w.box[2]))
    squares = check_boxes(pixels, last, h) if pixels is not None else []
    if len(squares) >= 2:
        return _checked(squares, others, pixels)
    beside = [w for w in others if w.box[0] >= last.box[2] - 1 and _same_baseline(w, last, h)]
    runs = _runs(beside, h)
    below = _below(x0, y1, others, h)
    first = runs[0] if runs and not runs[0][-1].text.endswith(":") else None
    if first is not None and (not below or first[0].box[0] - last.box[2] <= below[0][0].box[1] - y1 + 2 * h):
        rest = _below(first[0].box[0], first[0].box[3], others, h, pitch_only=True)
        return " ".join(w.text for w in first + [w for line in rest for w in line])
    return " ".join(w.text for line in below for w in line)


def _below(x: float, bottom: float, others: Sequence[Word], h: float, pitch_only: bool = False) -> list[list[Word]]:
    """The lines under a point (a label's or a value's left end): the first within
    :data:`BELOW_Y` heights (or one line pitch, with ``pitch_only``), then each next one
    within :data:`LINE_PITCH` heights of it, all starting within :data:`BELOW_X` heights
    of ``x``."""
    out: list[list[Word]] = []
    for line in lines(sorted(others, key=lambda w: (w.box[1], w.box[0]))):
        start = min(line, key=lambda w: w.box[0])
        if abs(start.box[0] - x) > BELOW_X * h or start.box[1] < bottom - 0.3 * h:
            continue
        run = _runs(line, h)[0] if start in _runs(line, h)[0] else [start]
        if run[-1].text.endswith(":"):
            break
        reach = LINE_PITCH * h if (out or pitch_only) else BELOW_Y * h
        top = out[-1][0].box[3] if out else bottom
        if start.box[1] - top > reach:
            break
        out.append(run)
    return out


def check_boxes(pixels: np.ndarray, label: Word, h: float) -> list[tuple[int, int, int, int]]:
    """The check boxes drawn on ``label``'s line to its right: the dark outlines there as
    tall as about a line (0.7-2 heights), about square, inked along all four sides."""
    import cv2

    top, bottom = max(0, int(label.box[1] - 0.6 * h)), min(pixels.shape[0], int(label.box[3] + 0.6 * h))
    left = int(label.box[2])
    band = pixels[top:bottom, left:]
    if band.size == 0:
        return []
    gray = band.mean(axis=2).astype(np.uint8) if band.ndim == 3 else band.astype(np.uint8)
    ink = (gray < 160).astype(np.uint8)
    n, _, stats, _ = cv2.connectedComponentsWithStats(ink)
    out = []
    for x, y, w, hh, _ in stats[1:n]:
        if not (0.7 * h <= hh <= 2.0 * h and 0.75 <= w / max(hh, 1) <= 1.33):
            continue
        cell = ink[y:y + hh, x:x + w]
        sides = (cell[0].mean(), cell[-1].mean(), cell[:, 0].mean(), cell[:, -1].mean())
        if min(sides) > 0.7:
            out.append((left + int(x), top + int(y), left + int(x + w), top + int(y + hh)))
    return sorted(out)


def _checked(squares: Sequence[tuple[int, int, int, int]], others: Sequence[Word], pixels: np.ndarray) -> str:
    """The option beside the check box with the most ink inside it: the words between
    that box and the next (or the line's end), the boxes' own misread glyphs left out."""
    def inside(box: tuple[int, int, int, int]) -> float:
        x0, y0, x1, y1 = box
        inner = pixels[y0 + (y1 - y0) // 4:y1 - (y1 - y0) // 4, x0 + (x1 - x0) // 4:x1 - (x1 - x0) // 4]
        return float(255.0 - inner.mean()) if inner.size else 0.0

    k = int(np.argmax([inside(b) for b in squares]))
    x0, y0, x1, y1 = squares[k]
    stop = squares[k + 1][0] if k + 1 < len(squares) else float("inf")
    words = [w for w in others if w.box[0] >= x1 - 1 and w.box[2] <= stop + 1
             and abs((w.box[1] + w.box[3]) / 2 - (y0 + y1) / 2) < (y1 - y0)]
    return " ".join(w.text for w in sorted(words, key=lambda w: w.box[0]))


# -- one slide's chart ----------------------------------------------------------------------------
def read_slide(question: str, seen: Sequence[Seen]) -> Reading:
    """The answer to a one-slide question, read from the slide's views (see the module notes)."""
    match = _SLIDE.match(question.strip())
    if match is None:
        return Reading(failure="unsupported")
    unit = find_unit(match["title"], seen)
    if unit is None:
        return Reading(failure="missed_unit")
    series = match["series"] or match["series2"] or match["series3"]
    views = sorted((s for s in seen if s.detail(unit) > 0 and len(s.view["tiles"]) == 1),
                   key=lambda s: -s.detail(unit))
    for s in views:
        if match["extreme"]:
            values = data_labels(s.tile_words(unit), series, s.pixels)
            if values:
                pick = (max if match["extreme"] == "highest" else min)(values, key=parse_number)
                return Reading(pick)
            continue
        pairs = chart_values(s.tile_words(unit), series, s.pixels)
        if not pairs:
            continue
        if match["row"]:
            hit = [v for label, v in pairs if similarity(_key(label), _key(match["row"])) >= LABEL_MATCH]
            if hit:
                return Reading(hit[0])
            continue
        best = (max if match["arg"] == "highest" else min)(pairs, key=lambda p: parse_number(p[1]))
        return Reading(best[0])
    return Reading(failure="unreadable")


def find_unit(title: str, seen: Sequence[Seen]) -> int | None:
    """The unit a sheet's label ("Unit i: title") names ``title`` in, read from the views."""
    best: tuple[float, int] | None = None
    for s in seen:
        if len(s.view["tiles"]) < 2:
            continue
        for line in _label_lines(s):
            text = " ".join(w.text for w in line)
            head = re.match(r"\s*Unit\s+(\d+)\s*[:;.]?\s*(.*)", text)
            if head is None:
                continue
            read, want = _key(head[2]).rstrip(".… "), _key(title)
            if len(read) < len(want) and head[2].rstrip().endswith(("…", "...")):
                want = want[:len(read)]  # a label cut short: its start is what can be compared
            score = similarity(read, want)
            if best is None or score > best[0]:
                best = (score, int(head[1]))
    return best[1] if best is not None and best[0] >= LABEL_MATCH else None


def _label_lines(s: Seen) -> list[list[Word]]:
    """A sheet's labels as lines (a wrapped label's lines joined): the words above each
    tile, in its label band."""
    out = []
    tiles = s.view["tiles"]
    for t in tiles:
        x0, y0 = t["at"]
        right = min((o["at"][0] for o in tiles if o["at"][1] == y0 and o["at"][0] > x0), default=float("inf"))
        band = [w for w in s.words if y0 - 42 <= w.box[1] and w.box[3] <= y0 + 1 and x0 - 2 <= w.box[0] < right]
        rows = lines(_relined(band))
        if rows:
            out.append([w for row in rows for w in row])
    return out


def chart_values(words: Sequence[Word], series: str, pixels: np.ndarray | None = None) -> list[tuple[str, str]]:
    """(category label, number printed for ``series``) pairs read in a chart.

    The category labels are the largest group of runs of words that share a baseline
    (columns and lines: each label's number is read above it) or a right end (bars: read
    to its right); a year (four digits from 1900 to 2099, no comma) is a label, not a
    value. Where no such group stands apart from a legend, the legend's entries are the
    categories (a pie's): each entry's number is the one printed on a mark of its swatch's
    colour. With a legend of several series, of the numbers beside a label the one printed
    at a mark of the colour of ``series``' swatch."""
    numbers = [w for w in words if is_number(w.text) and not _year(w.text)]
    texts = [w for w in words if not is_number(w.text) or _year(w.text)]
    if not numbers or not texts:
        return []
    h = _height(words)
    runs = [[w for w in run if any(c.isalnum() for c in w.text)] for line in lines(texts) for run in _runs(line, h)]
    runs = [run for run in runs if _wordlike(run)]
    swatches = {id(run): _swatch_of(run, pixels, h) for run in runs} if pixels is not None else {}
    axis_runs = [r for r in runs if not _chromatic(swatches.get(id(r)))]
    across = _largest_group(axis_runs, lambda r: (_span(r)[1] + _span(r)[3]) / 2, 0.5 * h)
    down = _largest_group(axis_runs, lambda r: _span(r)[2], h)
    keyed = [r for r in runs if _chromatic(swatches.get(id(r)))]
    if max(len(across), len(down)) < 2 and len(keyed) >= 2:
        return [(" ".join(w.text for w in run), n.text) for run in keyed
                if (n := _number_of_colour(numbers, swatches[id(run)], pixels, h)) is not None]
    swatch = _swatch(texts, series, pixels, h) if pixels is not None else None
    direction = "above" if len(across) >= max(2, len(down)) else "right" if len(down) >= 2 else "near"
    labels = across if direction == "above" else down if direction == "right" else axis_runs
    axis = 1 if direction == "right" else 0  # bars' labels stand in a column, the others' in a row
    centres = sorted((_span(r)[axis] + _span(r)[axis + 2]) / 2 for r in labels)
    pitch = min((b - a for a, b in zip(centres, centres[1:])), default=6 * h)
    out = []
    for run in labels:
        x0, y0, x1, y1 = _span(run)
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        if direction == "above":
            group = [n for n in numbers if n.box[3] <= y0 and abs((n.box[0] + n.box[2]) / 2 - cx) <= pitch / 2]
        elif direction == "right":
            group = [n for n in numbers if n.box[0] >= x1 and abs((n.box[1] + n.box[3]) / 2 - cy) <= pitch / 2]
        else:
            group = sorted(numbers, key=lambda n: abs((n.box[0] + n.box[2]) / 2 - cx) + abs((n.box[1] + n.box[3]) / 2
                                                                                           - cy))[:1]
        if not group:
            continue
        if swatch is not None and len(group) > 1:  # several series: the one whose mark has the swatch's colour
            pick = min(group, key=lambda n: _colour_distance(_mark_colour(n, direction, pixels, h), swatch))
        else:  # the number nearest the label's centre line
            pick = min(group, key=lambda n: abs((n.box[axis] + n.box[axis + 2]) / 2 - (cx, cy)[axis]))
        out.append((" ".join(w.text for w in run), pick.text))
    return out


def _year(text: str) -> bool:
    return len(text) == 4 and text.isdigit() and 1900 <= int(text) <= 2099


def _number_of_colour(numbers: Sequence[Word], colour: np.ndarray, pixels: np.ndarray, h: float) -> Word | None:
    """The number printed on a mark nearest ``colour`` (within :data:`SAME_COLOUR`)."""
    scored = [(min(_colour_distance(_mark_colour(n, d, pixels, h), colour) for d in ("above", "right")), n)
              for n in numbers]
    best = min(scored, key=lambda p: p[0], default=None)
    return best[1] if best is not None and best[0] < SAME_COLOUR else None


def data_labels(words: Sequence[Word], series: str, pixels: np.ndarray) -> list[str]:
    """The numbers printed at marks (a coloured mark just below or left of the number:
    not an axis's ticks), of ``series``' colour when its legend entry is read."""
    h = _height(words)
    texts = [w for w in words if not is_number(w.text)]
    swatch = _swatch(texts, series, pixels, h)
    out = []
    for n in (w for w in words if is_number(w.text)):
        colours = [c for c in (_mark_colour(n, d, pixels, h) for d in ("above", "right")) if _chromatic(c)]
        if colours and (swatch is None or min(_colour_distance(c, swatch) for c in colours) < SAME_COLOUR):
            out.append(n.text)
    return out


def _chromatic(colour: np.ndarray | None) -> bool:
    """Whether a colour is a mark's (its channels apart), not print's or paper's gray."""
    return colour is not None and float(colour.max() - colour.min()) > 40


def _wordlike(run: Sequence[Word]) -> bool:
    """Whether a run reads as words (a category's name), not a legend's line marks
    misread ("-e", "---"): at least two letters or digits, and they half its characters."""
    text = "".join(w.text for w in run)
    alnum = sum(c.isalnum() for c in text)
    return alnum >= 2 and alnum >= len(text) / 2


def _largest_group(runs: Sequence[Sequence[Word]], key: Any, tolerance: float) -> list[Sequence[Word]]:
    """The most ``runs`` whose ``key`` lies within ``tolerance`` of one run's."""
    best: list[Sequence[Word]] = []
    for run in runs:
        group = [r for r in runs if abs(key(r) - key(run)) <= tolerance]
        if len(group) > len(best):
            best = group
    return best




def _ink(region: np.ndarray) -> np.ndarray | None:
    """The median colour of the pixels of ``region`` that are not paper (not near white)."""
    if region.size == 0:
        return None
    flat = region.reshape(-1, region.shape[-1]).astype(float)
    coloured = flat[flat.min(axis=1) < 225]
    return np.median(coloured, axis=0) if len(coloured) else None


def _swatch(texts: Sequence[Word], series: str, pixels: np.ndarray, h: float) -> np.ndarray | None:
    """The colour of ``series``' swatch: the marks left of its legend entry; ``None`` when
    the entry is not read."""
    found = find_phrase(texts, series)
    return None if found is None else _swatch_of(found[0], pixels, h)


def _swatch_of(run: Sequence[Word], pixels: np.ndarray, h: float) -> np.ndarray | None:
    """The colour of the marks just left of a run of words (a legend entry's swatch)."""
    x0, y0, _, y1 = _span(run)
    return _ink(pixels[int(y0):int(y1) + 1, max(0, int(x0 - 2.5 * h)):max(0, int(x0 - 0.2 * h))])


def _mark_colour(number: Word, direction: str, pixels: np.ndarray, h: float) -> np.ndarray | None:
    """The colour of the mark a data label is printed at: below it on a column or a line,
    left of it on a bar."""
    x0, y0, x1, y1 = (int(v) for v in number.box)
    cx, cy = (x0 + x1) // 2, (y0 + y1) // 2
    if direction == "right":
        return _ink(pixels[max(0, cy - int(0.3 * h)):cy + int(0.3 * h) + 1, max(0, x0 - int(0.8 * h)):max(0, x0 - 1)])
    return _ink(pixels[y1 + 1:y1 + int(0.8 * h) + 1, max(0, cx - int(0.3 * h)):cx + int(0.3 * h) + 1])


def _colour_distance(a: np.ndarray | None, b: np.ndarray) -> float:
    return float("inf") if a is None else float(np.abs(a - b).sum())
