"""A real reader of printed text: Tesseract, through its maintained Python binding
``tesserocr`` (the ``[ocr]`` extra: :func:`install_hint`) and Debian's language data
(``apt-get install tesseract-ocr tesseract-ocr-eng``).

What the package says about printed text being *legible* or *answerable* is measured with
it: the legibility curves (``benchmarks/legibility.py``), the chart arm's reader check, and
the evidence arm's ``ocr`` executor. Tesseract is a floor, not a ceiling: a strong
vision-language model reads smaller text than it does, so "Tesseract reads it" means a
careful reader can, while "Tesseract does not" proves nothing by itself.

How an image is read (one documented procedure, used everywhere): the pixels are turned to
gray, cleared of graphics that are not text (:func:`without_graphics`: bright colours,
which marks are drawn in and print is not, then solid blocks, long thin rules and large
empty frames, which Tesseract's page layout otherwise takes for a picture and reads
nothing in or beside), framed by a white border of
:data:`BORDER` pixels (Tesseract needs a margin to find a text's edges), enlarged
:data:`UPSCALE` times with bicubic resampling (Tesseract's models are trained on text with
a cap height of about 20-30 pixels; a reader that enlarges reads smaller text, and the
curves measure this reader, whatever the image's size), and read by Tesseract's LSTM
engine in the page segmentation mode the call names. One engine is
kept open per thread and mode (opening one costs about 0.1 s; a line then costs about
0.01-0.03 s).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vicogym.errors import VicogymError
from vicogym.install import install_command

#: where Debian (and other distributions) put Tesseract's language data, searched in order
#: after ``$TESSDATA_PREFIX``
TESSDATA_DIRS = ("/usr/share/tesseract-ocr/5/tessdata", "/usr/share/tesseract-ocr/4.00/tessdata",
                 "/usr/share/tessdata", "/usr/local/share/tessdata", "/opt/homebrew/share/tessdata")
LANG = "eng"
#: white pixels added around an image before it is read
BORDER = 10
#: how many times an image is enlarged before it is read
UPSCALE = 3
#: page segmentation modes by name (Tesseract's ``--psm`` numbers)
MODES = {"line": 7, "word": 8, "block": 6, "sparse": 11, "auto": 3}


def install_hint() -> str:
    """What installs Tesseract for this vicogym: the ``[ocr]`` extra and Debian's data."""
    return (f"{install_command('ocr')} (the tesserocr binding) and apt-get install tesseract-ocr tesseract-ocr-eng "
            "(Tesseract's English data)")


class ReaderUnavailable(VicogymError, RuntimeError):
    """Tesseract cannot be used here (the binding or its language data is missing)."""


def tessdata_dir() -> str | None:
    """The folder holding ``eng.traineddata``: ``$TESSDATA_PREFIX`` or a distribution's."""
    for folder in (os.environ.get("TESSDATA_PREFIX"), *TESSDATA_DIRS):
        if folder and os.path.isfile(os.path.join(folder, f"{LANG}.traineddata")):
            return folder
    return None


def unavailable() -> str | None:
    """Why Tesseract cannot be used here, or ``None`` when it can."""
    try:
        import tesserocr  # noqa: F401
    except ImportError:
        return f"the Tesseract binding tesserocr is not installed; install it with {install_hint()}"
    if tessdata_dir() is None:
        return (f"Tesseract's English data ({LANG}.traineddata) is in none of $TESSDATA_PREFIX, "
                f"{', '.join(TESSDATA_DIRS)}; install it with {install_hint()}")
    return None


def require() -> None:
    """Raise :class:`ReaderUnavailable`, naming what to install, when Tesseract cannot be used."""
    reason = unavailable()
    if reason is not None:
        raise ReaderUnavailable(reason)


def version() -> str:
    """Tesseract's version as the binding reports it (``5.5.4``)."""
    require()
    import tesserocr

    return str(tesserocr.tesseract_version()).split()[1]


@dataclass(frozen=True)
class Word:
    """One word Tesseract read: its ``text``, its ``box`` ``[x0, y0, x1, y1]`` in the pixels
    of the image it was given, its confidence (0-100) and the line it belongs to (block,
    paragraph and line numbers, in reading order)."""

    text: str
    box: tuple[float, float, float, float]
    conf: float
    line: tuple[int, int, int]


def prepare(image: Any) -> tuple[Any, float]:
    """``image`` (an RGB or gray array, or a PIL image) as Tesseract reads it: gray, framed
    by :data:`BORDER` white pixels, enlarged :data:`UPSCALE` times; and the factor by which
    it was enlarged."""
    from PIL import Image

    pixels = np.asarray(image.convert("RGB") if isinstance(image, Image.Image) else image)
    if pixels.ndim == 3:
        rgb = np.ascontiguousarray(pixels[..., :3]).astype(np.uint8)
        pixels = np.asarray(Image.fromarray(without_colour(rgb)).convert("L"))
    elif pixels.ndim != 2:
        raise ValueError(f"expected an image as an H x W or H x W x 3 array, got shape {pixels.shape}")
    pixels = without_graphics(np.ascontiguousarray(pixels.astype(np.uint8)))
    framed = np.pad(pixels, BORDER, constant_values=255)
    picture = Image.fromarray(framed)
    factor = float(UPSCALE)
    picture = picture.resize((round(picture.width * factor), round(picture.height * factor)), Image.BICUBIC)
    return picture, factor


#: how dark a gray pixel is taken for ink when graphics are told from text
INK_BELOW = 200
#: a pixel this far from gray (its largest channel less its smallest) and this bright (its
#: largest channel) is a mark's colour, not print: every palette colour of the charts
#: is, while the inks of text (black, dark gray, navy) are not
CHROMA, BRIGHT = 50, 130


def without_colour(rgb: np.ndarray) -> np.ndarray:
    """``rgb`` with its marks painted white: the connected areas of bright colour
    (:data:`CHROMA`, :data:`BRIGHT`) taller than two glyphs or wider than four (a chart's
    bars, wedges and swatches go; coloured print, whose glyphs are glyph-sized, and the
    dark print on a mark stay). A glyph's height is the median height of the dark ink's
    connected areas."""
    import cv2

    high, low = rgb.max(axis=2).astype(np.int16), rgb.min(axis=2).astype(np.int16)
    coloured = ((high - low > CHROMA) & (high > BRIGHT)).astype(np.uint8)
    if not coloured.any():
        return rgb
    glyph = _glyph_height((high < INK_BELOW).astype(np.uint8))
    n, labels, stats, _ = cv2.connectedComponentsWithStats(coloured, connectivity=8)
    big = np.flatnonzero((stats[1:, cv2.CC_STAT_HEIGHT] > 2 * glyph) | (stats[1:, cv2.CC_STAT_WIDTH] > 4 * glyph)) + 1
    if not len(big):
        return rgb
    out = rgb.copy()
    out[np.isin(labels, big)] = 255
    return out


def _glyph_height(ink: np.ndarray) -> float:
    """The median height of ``ink``'s connected areas taller than 2 px (a glyph's)."""
    import cv2

    n, _, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    heights = stats[1:n, cv2.CC_STAT_HEIGHT]
    heights = heights[heights > 2]
    return float(np.median(heights)) if len(heights) else 1.0


def without_graphics(gray: np.ndarray) -> np.ndarray:
    """``gray`` with the ink that is not text painted white: connected components at
    least twice a glyph's height (the median component's) both ways that fill 70% of
    their box (a bar, a filled swatch), rules eight glyph heights long and under a third
    of one thick, and frames eight glyph heights both ways that fill under a tenth of
    their box. Glyphs, check boxes and underline-free text are kept as they are."""
    import cv2

    ink = (gray < INK_BELOW).astype(np.uint8)
    n, labels, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    if n <= 2:
        return gray
    glyph = _glyph_height(ink)
    x, y, w, h, area = (stats[1:, k] for k in range(5))
    fill = area / np.maximum(1, w * h)
    solid = (w >= 2 * glyph) & (h >= 2 * glyph) & (fill >= 0.7)
    rule = ((w >= 8 * glyph) & (h <= glyph / 3)) | ((h >= 8 * glyph) & (w <= glyph / 3))
    frame = (w >= 8 * glyph) & (h >= 8 * glyph) & (fill < 0.1)
    drop = np.flatnonzero(solid | rule | frame) + 1
    if not len(drop):
        return gray
    out = gray.copy()
    out[np.isin(labels, drop)] = 255
    return out


class Reader:
    """Tesseract kept open, one engine per thread and page segmentation mode."""

    def __init__(self, lang: str = LANG):
        require()
        self.lang = lang
        self.path = tessdata_dir()
        self._local = threading.local()

    def _api(self, mode: str) -> Any:
        if mode not in MODES:
            raise ValueError(f"expected a page segmentation mode in {sorted(MODES)}, got {mode!r}")
        apis = self._local.__dict__.setdefault("apis", {})
        if mode not in apis:
            import tesserocr

            apis[mode] = tesserocr.PyTessBaseAPI(path=self.path + os.sep, lang=self.lang,
                                                 psm=MODES[mode])
        return apis[mode]

    def text(self, image: Any, mode: str = "line") -> str:
        """What Tesseract reads in ``image`` (``mode``: ``line`` for one line of text,
        ``word``, ``block`` for a uniform block, ``sparse`` for text scattered over a
        picture, ``auto``), whitespace collapsed within lines, lines joined by newlines."""
        api = self._api(mode)
        picture, _ = prepare(image)
        api.SetImage(picture)
        text = api.GetUTF8Text()
        lines = (" ".join(line.split()) for line in text.splitlines())
        return "\n".join(line for line in lines if line)

    def words(self, image: Any, mode: str = "sparse") -> list[Word]:
        """Every word Tesseract finds in ``image``, with its box in ``image``'s pixels."""
        import tesserocr

        api = self._api(mode)
        picture, factor = prepare(image)
        api.SetImage(picture)
        api.Recognize()
        out: list[Word] = []
        iterator = api.GetIterator()
        level = tesserocr.RIL.WORD
        block = par = line = -1
        if iterator is None:
            return out
        while True:
            if iterator.IsAtBeginningOf(tesserocr.RIL.BLOCK):
                block, par, line = block + 1, -1, -1
            if iterator.IsAtBeginningOf(tesserocr.RIL.PARA):
                par, line = par + 1, -1
            if iterator.IsAtBeginningOf(tesserocr.RIL.TEXTLINE):
                line += 1
            try:  # an image with no text leaves the iterator on an empty element
                text = iterator.GetUTF8Text(level)
            except RuntimeError:
                text = None
            box = iterator.BoundingBox(level)
            if text and text.strip() and box is not None:
                x0, y0, x1, y1 = (v / factor - BORDER for v in box)
                out.append(Word(text.strip(), (x0, y0, x1, y1), float(iterator.Confidence(level)),
                                (block, max(par, 0), max(line, 0))))
            if not iterator.Next(level):
                break
        return out

    def close(self) -> None:
        for api in getattr(self._local, "apis", {}).values():
            api.End()
        self._local.apis = {}


_READER: Reader | None = None
_LOCK = threading.Lock()


def reader() -> Reader:
    """The process's shared :class:`Reader` (made on first use)."""
    global _READER
    with _LOCK:
        if _READER is None:
            _READER = Reader()
        return _READER


def lines(words: Sequence[Word]) -> list[list[Word]]:
    """``words`` grouped by the line Tesseract put them on, in reading order."""
    grouped: dict[tuple[int, int, int], list[Word]] = {}
    for word in words:
        grouped.setdefault(word.line, []).append(word)
    return [sorted(group, key=lambda w: w.box[0]) for _, group in sorted(grouped.items())]
