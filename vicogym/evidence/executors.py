"""Executors that play ``vicogym/Evidence-v0``: they are sent a request (the question,
the protocol, the images with their geometry, the budgets) and reply with one JSON
action.

- ``openai:MODEL@URL``: a model behind an OpenAI-compatible server (vLLM, SGLang, hosted
  APIs). Each request is one user message: the skill's reader text, the protocol, the
  question and its answer contract, the units of the pool, the actions so far, and every
  image of the request (base64 PNG) under a caption with its number and geometry. Greedy
  (temperature 0) unless told otherwise; time-outs and retries as the other clients. A
  reply that holds no JSON object is passed on as it is, so the environment rejects it
  with the parser's reason (an invalid action).
- ``simulated`` (``simulated:skill``, ``simulated:largest``, ``simulated:oracle``): a
  documented stand-in for tests and dry runs, not a model (:class:`SimulatedExecutor`).
- ``direct`` (``direct``, ``direct:openai:MODEL@URL``): the paper's Direct baseline: no
  actions, the whole input at once (the environment sends every unit at reset), one
  answer.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vicogym.clients import _ChatClient
from vicogym.evidence.skills import Skill
from vicogym.validation import as_text

SIMULATED_POLICIES = ("skill", "largest", "oracle")
#: the simulated executor's settings a spec may give (``simulated:skill,acuity=1.3``), and
#: their bounds
SIMULATED_SETTINGS = {"locate": (0.0, 1.0), "zoom_hit": (0.0, 1.0), "format_slip": (0.0, 1.0), "acuity": (0.25, 4.0)}


def extract_action(text: str) -> str:
    """The last JSON object in a model's reply (the reply itself when it holds none, so
    that the environment's parser says why)."""
    text = as_text(text)
    decoder = json.JSONDecoder()
    found = None
    start = text.find("{")
    while start >= 0:
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):  # not JSON, an integer too long to read, nesting too deep
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            found = text[start:end]
        start = text.find("{", end)
    return found if found is not None else text.strip()


# -- the simulated executor ---------------------------------------------------------------
def read_probability(shown_px: float, legible: float, text: bool | None = None) -> float:
    """The chance the simulated reader reads one piece of evidence right, from the detail
    it was shown (``shown_px``, view pixels) against the size at which it is legible
    (``legible``, view pixels, already scaled by the reader's acuity); 0 when it was not
    shown at all.

    Text follows the legibility curves measured with Tesseract
    (:mod:`vicogym.legibility`): ``1 / (1 + exp(-s (shown_px / legible - 1)))``, with ``s =
    k * c50`` of the measured curve whose legible size ``c50`` is nearest ``legible``. Text
    evidence carries its font's ``c50`` as ``legible``, so this is that font's fitted curve,
    ``1 / (1 + exp(-k (shown_px - c50)))``, and a reader of acuity ``a`` (``legible = a *
    c50``) reads at ``shown_px`` about what Tesseract reads at ``shown_px / a`` (exactly
    when the nearest curve is the font's own). It is a stand-in fitted to Tesseract's word
    accuracy (a strong model reads smaller text), applied to a whole piece of evidence as if
    it were one word.

    CLEVR objects keep a stand-in with no measurement behind it (no reader of objects is at
    hand): about 0.06 at half the legible size, 0.77 at it, 0.99 at 1.5 times. ``text``
    says which kind the evidence is; left ``None``, a legible size under twice the largest
    measured text ``c50`` is text (objects are legible from 16 px; a reader whose acuity
    moves one kind past that line is read with the other's curve)."""
    from vicogym import legibility

    if shown_px <= 0:
        return 0.0
    measured = legibility.curves()
    if text is None:
        text = legible < 2.0 * max(c.c50 for c in measured)
    if not text:
        ratio = shown_px / legible
        return float(min(0.99, max(0.01, 1.0 / (1.0 + math.exp(-8.0 * (ratio - 0.85))))))
    nearest = min(measured, key=lambda c: (abs(c.c50 - legible), c.drawn, c.font))
    return legibility.logistic(nearest.k * nearest.c50 * (shown_px / legible - 1.0))


#: how often the simulated reader confuses the order of frames it compares without
#: timestamp rows read as such
ORDER_SLIP = 0.2

#: failure kinds of a simulated answer, as the paper names them
FAILURES = ("missed_unit", "unreadable", "wrong_format", "wrong_answer")


@dataclass
class SimulatedExecutor:
    """A stand-in executor with a reading model, not a model.

    It knows the task (its evidence boxes and answer) and reads each piece of evidence
    right with :func:`read_probability` of the largest detail any view it was sent shows
    of it (so zooming, re-drawing at scale and choosing units matter, and nothing else
    does); the task is answered right when every piece is read right. Otherwise its
    answer fails the paper's ways: ``missed_unit`` (a unit holding evidence was never
    sent: it guesses), ``unreadable`` (sent too small: a misread, e.g. a distractor or a
    text with a few characters wrong), ``wrong_format`` (the answer breaks the contract:
    the option's text instead of its letter, a sentence around the value), and
    ``wrong_answer``.

    What it does, by ``policy``:

    - ``skill``: follows the directives of its skill (:mod:`vicogym.evidence.skills`):
      ``find_units`` views the units that hold evidence (found with probability 0.9, else
      a wrong unit first), ``compose_frames`` composes the evidence units into one sheet
      before comparing, ``zoom_evidence`` zooms onto each evidence box (located with
      probability 0.85, else a wrong region), ``note_options`` notes each evidence unit's
      region on a multiple-choice task (halving its chance of confusing two options), and
      ``answer_format`` keeps the answer to the contract (without it, 15% of answers break
      it). With no directives it answers from what it was sent first.

    What it sees changes what it does (the skill's interface, :mod:`vicogym.evidence.interface`):
    units sent at reset need no finding; a sheet whose labels carry the units' titles lets
    it find a unit with probability ``locate``, one labelled by number only 0.5, none 0.3;
    a coordinate grid on a view makes its zooms land with probability 0.98, but only when
    the skill says to place regions by the grid (``grid_coordinates``); the option-noting
    gain needs one ring colour per note (not ``mono`` rings); on ``clevr_sequence`` tasks
    comparing frames it confuses their order (:data:`ORDER_SLIP`) unless it was sent
    timestamp rows and the skill says to read them (``timestamps``). ``acuity`` scales the
    size evidence must be shown at to be read (the legibility curve).
    - ``largest``: a fixed policy: zooms once into the largest text-like region of the
      first image (the largest block of dark strokes, found from the pixels), then answers.
    - ``oracle``: views each evidence unit and zooms onto each evidence box, then answers.
    """

    policy: str = "skill"
    locate: float = 0.9
    zoom_hit: float = 0.85
    format_slip: float = 0.15
    #: how large evidence must be shown to be read, against its legible size (1: the
    #: legible size; 1.3: a weaker reader needs 30% more pixels) -- the legibility curve
    acuity: float = 1.0
    _plan: list[dict[str, Any]] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.policy not in SIMULATED_POLICIES:
            raise ValueError(f"expected a simulated policy in {SIMULATED_POLICIES}, got {self.policy!r}")
        for name in SIMULATED_SETTINGS:
            value = getattr(self, name)
            low, high = SIMULATED_SETTINGS[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
                raise ValueError(f"expected the simulated executor's {name} as a number in [{low}, {high}], got "
                                 f"{value!r}")

    @property
    def spec(self) -> str:
        settings = [f"{k}={getattr(self, k):g}" for k in SIMULATED_SETTINGS
                    if getattr(self, k) != SimulatedExecutor.__dataclass_fields__[k].default]
        return ",".join([f"simulated:{self.policy}", *settings])

    def begin(self, task: Mapping[str, Any], skill: Skill, rng: np.random.Generator) -> None:
        self.task, self.skill, self.rng = task, skill, rng
        self.directives = (frozenset({"zoom_evidence", "find_units", "answer_format"}) if self.policy == "oracle"
                           else skill.directives if self.policy == "skill" else frozenset())
        self.phase, self.done_items, self.seen_units = "start", 0, set()
        self.reviewed = -1  # the evidence item whose unit was last sent again
        self.noted = self.composed = self.zoomed_largest = False
        self.mono_rings = self.timestamped = False
        self.failure: str | None = None

    def observe(self, images: Sequence[Mapping[str, Any]]) -> None:
        """What the executor takes in of the images it is sent (before it acts)."""
        self._saw(images)

    def _saw(self, images: Sequence[Mapping[str, Any]]) -> None:
        for image in images:
            view = image["view"]
            self.seen_units.update(t["unit"] for t in view["tiles"])
            style = view.get("style", {})
            self.timestamped |= bool(style.get("timestamps"))
            if view.get("notes"):
                self.mono_rings |= style.get("rings") == "mono"

    # the episode, one action at a time ------------------------------------------------------
    def act(self, request: Mapping[str, Any], info: Mapping[str, Any]) -> str:
        images = request["images"]
        self.observe(images)
        budget = request["budget"]
        if budget["steps"] <= 1:
            return self._answer(info)
        task, d = self.task, self.directives
        evidence = task["evidence"]
        units = list(dict.fromkeys(e["unit"] for e in evidence))
        if self.policy == "largest":
            if not self.zoomed_largest and images and budget["crops"] > 0:
                self.zoomed_largest = True
                region = largest_text_region(images[0]["pixels"])
                if region is not None:
                    return json.dumps({"action": "zoom", "image": images[0]["id"], "regions": [region]})
            return self._answer(info)
        if "find_units" in d:
            missing = [u for u in units if not self._shown_whole_or_cropped(u, images)]
            if missing:
                chosen = missing[:budget["images"]]
                if self.policy != "oracle" and self.rng.random() > self._locate(images):
                    others = [u for u in range(len(task["units"])) if u not in units]
                    if others:
                        chosen = [others[int(self.rng.integers(len(others)))]]
                return json.dumps({"action": "view", "units": chosen})
        if "compose_frames" in d and len(units) > 1 and not self.composed:
            self.composed = True
            return json.dumps({"action": "compose", "units": units, "cols": min(4, len(units))})
        if "note_options" in d and task["contract"] == "letter" and not self.noted and len(units) > 1:
            notes = []
            for e in evidence:
                spot = self._fraction_of(e, images)
                if spot is not None:
                    view_id, region = spot
                    notes.append({"image": view_id, "at": [(region[0] + region[2]) / 2, (region[1] + region[3]) / 2],
                                  "text": e.get("what", "")[:80]})
            self.noted = True
            if notes and budget["notes"] >= len(notes):
                return json.dumps({"action": "note", "notes": notes[: budget["notes"]]})
        if "zoom_evidence" in d and budget["crops"] > 0:
            while self.done_items < len(evidence):
                e, taken = self._group(evidence, request)
                spot = self._fraction_of(e, images, margin=0.25)
                if spot is None and self.reviewed != self.done_items and budget["steps"] > 2:
                    # its unit left the request (older views drop out): send it whole again, then zoom
                    self.reviewed = self.done_items
                    return json.dumps({"action": "view", "units": [e["unit"]]})
                self.done_items += taken
                if spot is None:
                    continue
                view_id, region = spot
                if self.policy != "oracle" and self.rng.random() > self._zoom_hit(images, view_id):
                    region = _jittered(region, self.rng)
                return json.dumps({"action": "zoom", "image": view_id,
                                   "regions": [{"x0": region[0], "y0": region[1], "x1": region[2], "y1": region[3]}]})
        return self._answer(info)

    def _group(self, evidence: Sequence[Mapping[str, Any]], request: Mapping[str, Any]
               ) -> tuple[Mapping[str, Any], int]:
        """The next evidence item, merged with the ones after it in the same unit while one
        zoom onto their joint box still shows each legibly (a label and its value read
        together, as a person would), and how many items it covers."""
        first = evidence[self.done_items]
        unit = request["units"][first["unit"]]
        box, taken = list(first["box"]), 1
        for e in evidence[self.done_items + 1:]:
            if e["unit"] != first["unit"]:
                break
            joint = [min(box[0], e["box"][0]), min(box[1], e["box"][1]), max(box[2], e["box"][2]),
                     max(box[3], e["box"][3])]
            w, h = (joint[2] - joint[0]) * 1.5, (joint[3] - joint[1]) * 1.5
            scale = min(request["view_size"] / w, request["view_size"] / h, unit["max_scale"])
            group = evidence[self.done_items:self.done_items + taken + 1]
            if any(g["size"] * scale < 1.2 * g["legible"] for g in group):
                break
            box, taken = joint, taken + 1
        return {**first, "box": box}, taken

    def _locate(self, images: Sequence[Mapping[str, Any]]) -> float:
        """The chance of viewing the right unit: ``locate`` when a sheet labels its units
        with their titles, 0.5 when only with their numbers, 0.3 with no labels or no sheet
        (the titles are in the pictures, not in the request's text)."""
        labels = [t.get("label", "") for image in images if len(image["view"]["tiles"]) > 1
                  for t in image["view"]["tiles"]]
        if any(":" in label for label in labels):
            return self.locate
        return 0.5 if any(labels) else 0.3

    def _zoom_hit(self, images: Sequence[Mapping[str, Any]], view_id: int) -> float:
        """The chance a zoom lands on its target: ``zoom_hit``, or 0.98 on a view with a
        coordinate grid when the skill says to place regions by it."""
        view = next((i["view"] for i in images if i["id"] == view_id), {})
        if view.get("style", {}).get("grid") and "grid_coordinates" in self.directives:
            return max(self.zoom_hit, 0.98)
        return self.zoom_hit

    def _shown_whole_or_cropped(self, unit: int, images: Sequence[Mapping[str, Any]]) -> bool:
        return any(t["unit"] == unit for image in images for t in image["view"]["tiles"])

    def _fraction_of(self, evidence: Mapping[str, Any], images: Sequence[Mapping[str, Any]], margin: float = 0.0
                     ) -> tuple[int, tuple[float, float, float, float]] | None:
        """The newest image whose tile shows all of ``evidence``'s box, and the box (grown
        by ``margin`` of its size, at least 6 unit pixels) in fractions of that image."""
        x0, y0, x1, y1 = evidence["box"]
        pad_x, pad_y = max(6.0, (x1 - x0) * margin), max(6.0, (y1 - y0) * margin)
        for image in reversed(list(images)):
            view = image["view"]
            for t in view["tiles"]:
                cx0, cy0, cx1, cy1 = t["crop"]
                inside = cx0 - 0.5 <= x0 and cy0 - 0.5 <= y0 and x1 <= cx1 + 0.5 and y1 <= cy1 + 0.5
                if t["unit"] != evidence["unit"] or not inside:
                    continue
                bx0, by0 = max(cx0, x0 - pad_x), max(cy0, y0 - pad_y)
                bx1, by1 = min(cx1, x1 + pad_x), min(cy1, y1 + pad_y)
                w = round((cx1 - cx0) * t["scale"])
                h = round((cy1 - cy0) * t["scale"])
                sx, sy = w / (cx1 - cx0), h / (cy1 - cy0)
                ax, ay = t["at"]
                region = (_fraction(bx0, ax, cx0, sx, view["width"]), _fraction(by0, ay, cy0, sy, view["height"]),
                          _fraction(bx1, ax, cx0, sx, view["width"]), _fraction(by1, ay, cy0, sy, view["height"]))
                if region[0] < region[2] and region[1] < region[3]:
                    return image["id"], region
        return None

    def _answer(self, info: Mapping[str, Any]) -> str:
        return json.dumps({"action": "answer", "answer": self.reply(info)})

    def reply(self, info: Mapping[str, Any]) -> str:
        """The answer the reading model gives from what was sent (``info["support"]``)."""
        task, rng = self.task, self.rng
        items = info["support"]["items"]
        p = 1.0
        for item in items:
            p *= read_probability(item["shown_px"], item["legible"] * self.acuity)
        if not items:
            p = 0.9
        if task["contract"] == "letter" and "note_options" in self.directives and self.noted and not self.mono_rings:
            p = 1.0 - (1.0 - p) / 2.0  # one ring colour per option keeps the options apart
        if len({i["unit"] for i in items}) > 1 and task["family"] == "clevr_sequence" and not (
                self.timestamped and "timestamps" in self.directives):
            p *= 1.0 - ORDER_SLIP  # frames compared without reading their order from timestamp rows
        missed = [i for i in items if i["unit"] not in self.seen_units]
        correct = rng.random() < p
        if correct:
            answer, self.failure = task["answer"], None
        else:
            self.failure = "missed_unit" if missed else "unreadable" if any(
                i["shown_px"] < i["legible"] * self.acuity for i in items) else "wrong_answer"
            answer = self._misread(items)
        if "answer_format" not in self.directives and rng.random() < self.format_slip:
            self.failure = "wrong_format"
            return self._off_contract(answer)
        return answer

    def _misread(self, items: Sequence[Mapping[str, Any]]) -> str:
        task, rng = self.task, self.rng
        if task["contract"] == "letter":
            n = len(task["options"])
            return chr(65 + int(rng.integers(n)))  # a guess: right by chance one time in n
        best = min((i["shown_px"] / i["legible"] for i in items), default=0.0)
        answer = str(task["answer"])
        if task["contract"] == "text" and best >= 0.6 and answer:
            return _typo(answer, rng, max(1, len(answer) // 8))  # nearly legible: a few characters wrong
        distractors = [str(x) for x in task.get("meta", {}).get("distractors", []) if str(x) != answer]
        if distractors:
            return distractors[int(rng.integers(len(distractors)))]
        if task["contract"] in ("number", "count"):
            try:
                value = float(answer)
            except ValueError:
                return _typo(answer, rng, max(1, len(answer) // 2))
            off = value + max(1.0, abs(value) * 0.3) * (1 if rng.random() < 0.5 else -1)
            return str(int(off)) if task["contract"] == "count" else f"{off:g}"
        return _typo(answer, rng, max(1, len(answer) // 2))

    def _off_contract(self, answer: str) -> str:
        task = self.task
        if task["contract"] == "letter" and task["options"]:
            k = ord(answer[:1].upper() or "A") - 65
            return str(task["options"][k]) if 0 <= k < len(task["options"]) else answer
        return f"Based on the image, I believe the answer is {answer}, as shown in the figure."


def _fraction(x: float, at: float, origin: float, scale: float, size: float) -> float:
    """Where ``x`` of a composed image's source lands in the composed view, as a fraction of ``size``."""
    return min(1.0, max(0.0, (at + (x - origin) * scale) / size))


def _typo(text: str, rng: np.random.Generator, n: int) -> str:
    chars = list(text)
    letters = "abcdefghijklmnopqrstuvwxyz0123456789"
    for _ in range(n):
        k = int(rng.integers(len(chars)))
        chars[k] = letters[int(rng.integers(len(letters)))]
    return "".join(chars)


def _jittered(region: tuple[float, float, float, float], rng: np.random.Generator) -> tuple[float, float, float, float]:
    """A region of the same size moved off the target (a zoom that missed)."""
    w, h = region[2] - region[0], region[3] - region[1]
    x0 = float(rng.uniform(0.0, max(0.0, 1.0 - w)))
    y0 = float(rng.uniform(0.0, max(0.0, 1.0 - h)))
    return (x0, y0, min(1.0, x0 + w), min(1.0, y0 + h))


def largest_text_region(pixels: np.ndarray) -> dict[str, float] | None:
    """The largest block of dark strokes in ``pixels`` (text lines merged by a dilation),
    as a zoom region in fractions; ``None`` on a blank image."""
    import cv2

    gray = cv2.cvtColor(np.ascontiguousarray(pixels), cv2.COLOR_RGB2GRAY)
    ink = cv2.adaptiveThreshold(gray, 255, cv2.ADAPTIVE_THRESH_MEAN_C, cv2.THRESH_BINARY_INV, 15, 12)
    h, w = ink.shape
    k = max(3, round(min(h, w) / 60))
    blocks = cv2.dilate(ink, np.ones((k, 3 * k), np.uint8))
    n, _, stats, _ = cv2.connectedComponentsWithStats(blocks)
    if n <= 1:
        return None
    best = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    x, y, bw, bh = (int(v) for v in stats[best, :4])
    if bw * bh >= 0.9 * w * h:  # the whole frame: take its busiest quarter instead
        bw, bh = w // 2, h // 2
    return {"x0": x / w, "y0": y / h, "x1": min(1.0, (x + bw) / w), "y1": min(1.0, (y + bh) / h)}


# -- a model behind an OpenAI-compatible server ---------------------------------------------
@dataclass
class OpenAIExecutor(_ChatClient):
    """An executor model behind an OpenAI-compatible chat server (see the module doc):
    the shared client's settings, greedy by default, with a longer time-out (requests carry
    several images)."""

    timeout: float = 120.0
    temperature: float = 0.0
    direct: bool = False

    @property
    def spec(self) -> str:
        return ("direct:" if self.direct else "") + f"openai:{self.model}@{self.base_url}"

    def begin(self, task: Mapping[str, Any], skill: Skill, rng: np.random.Generator) -> None:
        self.skill, self.seed = skill, int(rng.integers(2**31))
        self.failure = None
        self.usage: dict[str, Any] = {}

    def content(self, request: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The user message of one request."""
        from vicogym.clients import image_data_url

        parts = [text.strip() for text in (self.skill.reader, self.skill.view_contract) if text.strip()]
        if self.direct:
            parts.append("Answer the question from the images. " + request["contract"] +
                         ' Reply with one JSON object: {"action": "answer", "answer": "..."}')
        else:
            parts.append(request["protocol"])
            kinds = sorted({u["kind"] for u in request["units"]})
            parts.append(f"The task's pool holds {len(request['units'])} units (0-{len(request['units']) - 1}; "
                         f"{', '.join(kinds)}); what each shows is in the images, not in this text.")
            b = request["budget"]
            parts.append(f"Budget left: {b['steps']} steps, {b['crops']} zoom views, {b['notes']} notes; a request "
                         f"holds {b['images']} images.")
            if request["history"]:
                parts.append("Your actions so far:\n" + "\n".join(json.dumps(h, sort_keys=True)
                                                                   for h in request["history"]))
        parts.append("Question: " + request["question"])
        if self.skill.answer_contract.strip():
            parts.append("Answer contract: " + self.skill.answer_contract.strip())
        content: list[dict[str, Any]] = [{"type": "text", "text": "\n\n".join(parts)}]
        for image in request["images"]:
            view = image["view"]
            tiles = view["tiles"]
            where = (f"unit {tiles[0]['unit']}, crop {tiles[0]['crop']} of the unit's pixels, scale "
                     f"{tiles[0]['scale']:.3g}") if len(tiles) == 1 else \
                f"a sheet of units {[t['unit'] for t in tiles]}"
            content.append({"type": "text", "text": f"Image {image['id']} ({where}):"})
            content.append({"type": "image_url", "image_url": {"url": image_data_url(image["pixels"])}})
        return content

    def act(self, request: Mapping[str, Any], info: Mapping[str, Any]) -> str:
        reply = self.chat(self.content(request), n=1, seed=self.seed)[0]
        self.usage = dict(self.last_usage)
        self.last_reply = reply
        return extract_action(reply)


@dataclass
class DirectExecutor:
    """The Direct baseline: the whole input at once and one answer, no actions. It wraps
    a reader: the simulated reading model, or a model (``direct:openai:MODEL@URL``)."""

    inner: Any = None

    @property
    def spec(self) -> str:
        if isinstance(self.inner, OCRExecutor):  # direct:ocr[,settings]: the policy is Direct's own
            return "direct:ocr" + self.inner.spec[len("ocr:skill"):]
        return "direct" if isinstance(self.inner, SimulatedExecutor) else self.inner.spec

    def begin(self, task: Mapping[str, Any], skill: Skill, rng: np.random.Generator) -> None:
        self.inner.begin(task, skill, rng)
        if isinstance(self.inner, SimulatedExecutor):
            self.inner.directives = skill.directives & {"answer_format"}

    @property
    def failure(self) -> str | None:
        return getattr(self.inner, "failure", None)

    def act(self, request: Mapping[str, Any], info: Mapping[str, Any]) -> str:
        if isinstance(self.inner, SimulatedExecutor):
            self.inner.observe(request["images"])
            return self.inner._answer(info)
        return self.inner.act(request, info)


EXECUTOR_SPECS = ("simulated", "simulated:skill", "simulated:largest", "simulated:oracle",
                  "simulated:skill,acuity=1.3", "direct", "ocr", "ocr:skill", "ocr:largest", "ocr:oracle",
                  "direct:ocr", "direct:openai:MODEL@URL", "openai:MODEL@URL")


def make_executor(spec: Any, **settings: Any) -> Any:
    """The executor a spec names (see :data:`EXECUTOR_SPECS`)."""
    if not isinstance(spec, str):
        raise ValueError(f"expected an executor spec ({', '.join(EXECUTOR_SPECS)}), got {spec!r}")
    if spec == "simulated" or spec.startswith(("simulated:", "simulated,")):
        return SimulatedExecutor(**simulated_settings(spec), **settings)
    if spec == "direct" or spec.startswith("direct,"):
        return DirectExecutor(SimulatedExecutor(**simulated_settings("simulated:skill" + spec[len("direct"):])))
    if spec == "ocr" or spec.startswith(("ocr:", "ocr,")):
        return OCRExecutor(**simulated_settings(spec), **settings)
    if spec == "direct:ocr" or spec.startswith("direct:ocr,"):
        return DirectExecutor(OCRExecutor(**simulated_settings("ocr:skill" + spec[len("direct:ocr"):])))
    if spec.startswith("direct:openai:"):
        from vicogym.clients import parse_spec

        return DirectExecutor(OpenAIExecutor(**parse_spec(spec[len("direct:"):]), direct=True, **settings))
    if spec.startswith("openai:"):
        from vicogym.clients import parse_spec

        return OpenAIExecutor(**parse_spec(spec), **settings)
    raise ValueError(f"unknown executor {spec!r}; use one of {', '.join(EXECUTOR_SPECS)}")


def simulated_settings(spec: str) -> dict[str, Any]:
    """The settings of a ``simulated[:POLICY][,name=value...]`` spec (``direct,...`` and
    ``ocr[:POLICY],...`` take the same settings)."""
    head, *pairs = spec.split(",")
    out: dict[str, Any] = {"policy": head.partition(":")[2] or "skill"}
    for pair in pairs:
        name, eq, value = pair.partition("=")
        name = name.strip()
        if not eq or name not in SIMULATED_SETTINGS:
            raise ValueError(f"executor {spec!r}: expected name=value settings of the simulated executor "
                             f"({', '.join(SIMULATED_SETTINGS)}), got {pair!r}")
        try:
            out[name] = float(value)
        except ValueError:
            raise ValueError(f"executor {spec!r}: {name} must be a number, got {value!r}") from None
    return out


# -- the simulated policy with a real reader ------------------------------------------------------
@dataclass
class OCRExecutor(SimulatedExecutor):
    """The ``ocr`` executor (``ocr``, ``ocr:skill``, ``ocr:largest``, ``ocr:oracle``, and
    Direct's ``direct:ocr``): the simulated executor's policy, a stand-in that decides
    which views to ask for (it knows where the evidence lies, finds a unit and lands a
    zoom with the simulated ``locate`` and ``zoom_hit``, follows its skill's directives),
    with a real reader: every image it is sent is read by Tesseract (:mod:`vicogym.ocr`)
    as it arrives, and its answer is what :mod:`vicogym.evidence.reading`'s documented
    procedure reads in them (a form's field, one slide's value, highest or lowest value,
    or the category with it). Its score measures what can be read in the pixels it was
    sent; where the reader finds no answer, :attr:`failure` says why (``unsupported``
    for a question of another kind, ``missed_unit``, ``unreadable``). It makes no
    format slips (the simulated reader's ``format_slip`` is not used)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        from vicogym import ocr

        ocr.require()

    @property
    def spec(self) -> str:
        return "ocr" + super().spec[len("simulated"):]

    def begin(self, task: Mapping[str, Any], skill: Skill, rng: np.random.Generator) -> None:
        super().begin(task, skill, rng)
        self.read: dict[int, Any] = {}

    def observe(self, images: Sequence[Mapping[str, Any]]) -> None:
        from vicogym import ocr
        from vicogym.evidence.reading import Seen

        super().observe(images)
        for image in images:
            if image["id"] not in self.read:
                pixels = np.asarray(image["pixels"])
                self.read[image["id"]] = Seen(image["view"], pixels, ocr.reader().words(pixels))

    def reply(self, info: Mapping[str, Any]) -> str:
        from vicogym.evidence.reading import read_field, read_slide

        question = str(self.task["question"])
        seen = [self.read[k] for k in sorted(self.read)]
        reading = read_slide(question, seen) if question.startswith("In the slide titled") else \
            read_field(question, seen)
        self.failure = reading.failure
        return reading.answer


def timed(fn: Any, *args: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start
