"""``vicogym/Natural-v0``: edit the surroundings of a natural image's answer-relevant
targets; the targets' pixels are proven unchanged, so the answer stands.

:class:`NaturalArm` composes the natural-image layers (records and scenes, editors with
question-type guards, segmenters, inpainters and the replay renderer, record sources)
behind the arm interface; :class:`NaturalEnv` is the Gymnasium environment.
What the simulated actor reads is in :mod:`vicogym.checks.natural`.

An image keeps its own size, up to the 40 MP a source may hold, and what a reset or a step
does with it is bounded by what the sample needs: each target is segmented in its own
window (the union is written window by window), models and GrabCut read at most their
working sizes, ops read the box they may change, and the arithmetic of a whole-image op
runs in row bands (see :mod:`vicogym.renderers.natural`). The segmentation cache holds at
most ``_MASK_CACHE_PIXELS`` mask pixels, and an arm keeps the stored files of its last
``_FILES_KEPT`` sources.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from vicogym.answers import short_answer
from vicogym.arm import Arm, draw_edit, payload_dict, require_module
from vicogym.checks import natural as natural_checks
from vicogym.core import SHORT_ANSWER, Edit, ExportHints, Render, Sample, Seed
from vicogym.editors import natural as natural_editor
from vicogym.envs.base import EnvConfig, VicoEnv
from vicogym.errors import InvalidEdit, SourceError
from vicogym.images import ImagePolicy, decode_png, encode_png, row_png
from vicogym.renderers.natural import (
    SAM_MODELS,
    BoxSegmenter,
    GrabCutSegmenter,
    NaturalFacts,
    OpenCVInpainter,
    RePaintInpainter,
    SamEncoder,
    SamSegmenter,
    StableDiffusionInpainter,
    frame_mask,
    record_protection,
    replay,
    target_union,
)
from vicogym.sources.natural import RecordSource
from vicogym.structures.natural import (
    ERROR_CODES,
    ProtectedRule,
    Record,
    Scene,
    pack_mask,
    pixels_sha256,
    sha256,
)
from vicogym.validation import is_int

#: the simulated actor's scale: it is right half of the time at difficulty 0.5 (skill 2.0)
ACTOR_SCALE = 4.0
SEGMENTERS = ("grabcut", "sam", "box")
INPAINTERS = ("opencv", "repaint", "stable_diffusion")
#: where a run folder keeps the files its rows share (source images and their masks)
FILES_PREFIX = "natural/"


@dataclass(frozen=True)
class NaturalEnvConfig(EnvConfig):
    """Natural-image arm settings.

    ``source``: ``"demo"`` (the embedded records), a ``.jsonl`` file of records, or a
    COCO-style folder (``annotations.json``, ``questions.json``, ``images/``).
    ``segmenter``: ``"grabcut"`` (OpenCV, the default), ``"sam"`` (Segment Anything;
    ``sam_checkpoint`` or ``$VICOGYM_SAM_CHECKPOINT``, ``sam_model`` one of vit_h, vit_l,
    vit_b or an encoder size as a mapping of :class:`~vicogym.renderers.natural.SamEncoder`
    fields) or ``"box"`` (the targets' boxes themselves). ``margin``: pixels the target
    masks grow by into the protected region. ``inpainter`` for ``remove``: ``"opencv"``,
    ``"repaint"`` (an unconditional DDPM folder) or ``"stable_diffusion"`` (an inpainting
    pipeline folder), both from ``inpaint_model``, loaded locally. ``width`` x ``height``:
    the observation canvas every image is letterboxed onto. ``cache_masks=False``
    segments every render again (for benchmarks; the masks must come out the same)."""

    source: str = "demo"
    segmenter: str = "grabcut"
    sam_checkpoint: str | None = None
    sam_model: Any = "vit_h"
    margin: int = 8
    inpainter: str = "opencv"
    inpaint_model: str | None = None
    inpaint_steps: int = 25
    device: str = "cpu"
    width: int = 512
    height: int = 512
    cache_masks: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.source, str) or not self.source:
            raise TypeError(f"expected source as 'demo', a .jsonl file or a COCO-style folder, got {self.source!r}")
        if self.source != "demo" and Path(self.source).exists():
            object.__setattr__(self, "source", str(Path(self.source).resolve()))  # verify may run elsewhere
        if self.segmenter not in SEGMENTERS:
            raise ValueError(f"expected segmenter in {SEGMENTERS}, got {self.segmenter!r}")
        if self.inpainter not in INPAINTERS:
            raise ValueError(f"expected inpainter in {INPAINTERS}, got {self.inpainter!r}")
        if self.inpainter != "opencv" and not isinstance(self.inpaint_model, str):
            raise ValueError(f"inpainter={self.inpainter!r} needs inpaint_model, a local diffusers model folder")
        for name in ("inpaint_model", "sam_checkpoint"):  # must exist where models load (open), not where rows are read
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise TypeError(f"expected {name} as a path, got {value!r}")
            if value is not None and Path(value).exists():
                object.__setattr__(self, name, str(Path(value).resolve()))
        self.sam_encoder()  # validates sam_model
        for name, low, high in (("margin", 0, 256), ("inpaint_steps", 1, 1000), ("width", 32, 4096),
                                ("height", 32, 4096)):
            v = getattr(self, name)
            if not is_int(v, low, high):
                raise ValueError(f"expected {name} to be an integer in [{low}, {high}], got {v!r}")
        if not isinstance(self.cache_masks, bool):
            raise TypeError(f"expected cache_masks to be true or false, got {self.cache_masks!r}")
        if not isinstance(self.device, str) or not re.fullmatch(r"cpu|cuda(:\d+)?|mps", self.device):
            raise ValueError(f"expected device as 'cpu', 'cuda', 'cuda:N' or 'mps', got {self.device!r}")

    def sam_encoder(self) -> SamEncoder:
        if isinstance(self.sam_model, str):
            if self.sam_model not in SAM_MODELS:
                raise ValueError(
                    f"expected sam_model in {sorted(SAM_MODELS)} or an encoder size, got {self.sam_model!r}"
                )
            return SAM_MODELS[self.sam_model]
        if isinstance(self.sam_model, Mapping):
            try:
                return SamEncoder(**self.sam_model)
            except TypeError as exc:
                raise ValueError(f"expected sam_model's encoder fields {[f.name for f in fields(SamEncoder)]}, got "
                                 f"{dict(self.sam_model)!r} ({exc})") from None
        raise ValueError(f"expected sam_model as a name in {sorted(SAM_MODELS)} or a mapping of encoder fields, got "
                         f"{self.sam_model!r}")

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        if isinstance(self.sam_model, Mapping):
            d["sam_model"] = {k: list(v) if isinstance(v, tuple) else v for k, v in self.sam_model.items()}
        return d


#: target masks by (segmenter, source pixels, targets), shared by every environment of the
#: process: segmentation runs once per record, whichever environment asks first
_MASK_CACHE: dict[tuple, np.ndarray] = {}
_MASK_CACHE_SIZE = 512
#: the most mask pixels the cache holds (a byte each): 40 MP masks do not pile up by the hundred
_MASK_CACHE_PIXELS = 1 << 28
#: how many sources' stored files (PNG bytes) an arm keeps for the rows still to come
_FILES_KEPT = 8


class NaturalArm(Arm):
    """The natural-image arm behind the arm interface (see :class:`vicogym.arm.Arm`)."""

    name = "natural"
    export = ExportHints(ability="visual_question_answering", prompt_suffix=SHORT_ANSWER)
    error_codes = ERROR_CODES
    op_fields = natural_editor.OP_FIELDS
    field_schemas = natural_editor.FIELD_SCHEMAS

    def __init__(self, config: NaturalEnvConfig):
        super().__init__(config)
        self.source: RecordSource | None = None
        self.run_folder: Path | None = None
        self._segmenter: Any = None
        self._inpainter: Any = None
        self._known: dict[str, list[str]] = {}
        self._files: dict[str, dict[str, bytes]] = {}

    # -- building --------------------------------------------------------------------------
    def open(self) -> None:
        c = self.config
        if c.inpaint_model is not None and not Path(c.inpaint_model).is_dir():
            raise FileNotFoundError(
                f"expected inpaint_model as an existing diffusers model folder, got {c.inpaint_model!r}"
            )
        if c.sam_checkpoint is not None and not Path(c.sam_checkpoint).is_file():
            raise FileNotFoundError(f"expected sam_checkpoint as an existing checkpoint file, got {c.sam_checkpoint!r}")
        if self.source is None:
            self.source = RecordSource(self.config.source)
            for record in self.source.records:
                self._known.setdefault(record.answer_type, []).append(record.answer)
        _ = self.segmenter  # a missing model or package fails here, at gym.make
        if hasattr(self.inpainter, "load"):
            try:
                self.inpainter.load()
            except (OSError, ValueError) as exc:
                raise ValueError(f"inpaint_model {c.inpaint_model!r} cannot be loaded as a {c.inpainter} pipeline: "
                                 f"{exc}") from None

    @property
    def segmenter(self) -> Any:
        if self._segmenter is None:
            c = self.config
            if c.segmenter == "grabcut":
                self._segmenter = GrabCutSegmenter()
            elif c.segmenter == "box":
                self._segmenter = BoxSegmenter()
            else:
                for module in ("torch", "segment_anything"):
                    require_module(module, "natural", "segmenter='sam'")
                segmenter = SamSegmenter(c.sam_checkpoint, c.sam_encoder(), c.device, reach=c.margin)
                segmenter.load()
                self._segmenter = segmenter
        return self._segmenter

    @property
    def inpainter(self) -> Any:
        if self._inpainter is None:
            c = self.config
            if c.inpainter != "opencv":
                require_module("diffusers", "natural", f"inpainter={c.inpainter!r}")
            if c.inpainter == "opencv":
                self._inpainter = OpenCVInpainter()
            elif c.inpainter == "repaint":
                self._inpainter = RePaintInpainter(c.inpaint_model, steps=c.inpaint_steps, device=c.device)
            else:
                self._inpainter = StableDiffusionInpainter(c.inpaint_model, steps=c.inpaint_steps, device=c.device)
        return self._inpainter

    def source_summary(self) -> dict[str, Any]:
        self.open()
        return dict(self.source.summary(), segmenter=self.config.segmenter, inpainter=self.config.inpainter)

    @property
    def image_policy(self) -> ImagePolicy:
        return ImagePolicy("letterbox", self.config.height, self.config.width, fill=0)

    def decode(self, text: str, payloads: Mapping[str, bytes] | None = None) -> Scene:
        return Scene.from_dict(json.loads(text), payloads)

    # -- segmentation ----------------------------------------------------------------------
    def target_mask(self, record: Record, image: np.ndarray, cached: bool = True) -> np.ndarray:
        """The union of ``record``'s target masks on ``image`` (``cached=False``: segment
        again, and for Segment Anything embed the image again)."""
        key = (self.config.segmenter, self.config.sam_checkpoint, repr(self.config.sam_encoder()), self.config.margin,
               pixels_sha256(image), tuple(json.dumps(t.to_dict(), sort_keys=True) for t in record.targets))
        if cached and key in _MASK_CACHE:
            return _MASK_CACHE[key]
        if not cached and hasattr(self.segmenter, "forget"):
            self.segmenter.forget()
        mask = target_union(self.segmenter, image, record.targets)  # each target's mask inside its own window
        mask.setflags(write=False)
        while _MASK_CACHE and (len(_MASK_CACHE) >= _MASK_CACHE_SIZE or
                               sum(m.size for m in _MASK_CACHE.values()) + mask.size > _MASK_CACHE_PIXELS):
            _MASK_CACHE.pop(next(iter(_MASK_CACHE)))
        _MASK_CACHE[key] = mask
        return mask

    def scene(self, record: Record) -> Scene:
        """The unedited, segmented scene of ``record``."""
        self.open()
        image = self.source.image(record.image)
        targets = self.target_mask(record, image)
        protected = record_protection(record, targets, self.config.margin)
        return Scene(record, image.shape[1], image.shape[0], self.config.margin, (), pixels_sha256(image),
                     pack_mask(targets), pack_mask(protected))

    # -- one episode -----------------------------------------------------------------------
    def draw_seed(self, rng: np.random.Generator, options: Mapping[str, Any]) -> Seed:
        self.open()
        records = self.source.records
        if "index" in options:
            index = int(options["index"])
            if index >= len(records):
                raise ValueError(f"options['index'] {index} is past the source's {len(records)} records")
        else:
            index = int(rng.integers(len(records)))
        record = records[index]
        rule: ProtectedRule = {"kind": "protected", "answer_type": record.answer_type}
        return Seed(self.scene(record), record.question, record.answer, rule, self.source.name, record.id)

    def apply(self, structure: Scene, edit: Edit, rule: ProtectedRule) -> Scene:
        return natural_editor.apply(structure, edit, rule)

    def relabel(self, structure: Scene, rule: ProtectedRule) -> str:
        """The record's answer: edits never touch the pixels it depends on (``validate``
        proves it for every render)."""
        if rule.get("kind") != "protected":
            raise InvalidEdit("malformed", f"expected a 'protected' label rule, got {rule.get('kind')!r}")
        if rule.get("answer_type") != structure.record.answer_type:
            raise InvalidEdit("malformed", f"the rule is for a {rule.get('answer_type')!r} answer, the record's is "
                              f"{structure.record.answer_type!r}")
        return structure.record.answer

    def check_question(self, question: str, rule: ProtectedRule, structure: Scene) -> str | None:
        if question != structure.record.question:
            return f"the record asks {structure.record.question!r}"
        return None

    def _source_image(self, scene: Scene) -> np.ndarray:
        """The scene's source image: the run folder's stored copy where one is attached
        (``vicogym verify``), else the record source's; its pixels must be the ones the
        scene was made from."""
        name = source_file(scene.source_sha256)
        if self.run_folder is not None and (self.run_folder / name).is_file():
            image = decode_png((self.run_folder / name).read_bytes())
        else:
            try:
                self.open()
                image = self.source.image(scene.record.image)
            except (SourceError, OSError) as exc:
                raise InvalidEdit("render_failed", f"the source image of record {scene.record.id} cannot be read "
                                  f"here ({exc})") from None
        if pixels_sha256(image) != scene.source_sha256:
            raise InvalidEdit("render_failed", f"the image {scene.record.image} of record {scene.record.id} is not the "
                              "one the scene was made from (its pixels differ); use the source the run used")
        return image

    def render(self, structure: Scene, rng: np.random.Generator) -> Render:
        if not structure.segmented:
            raise InvalidEdit("render_failed", f"the scene of record {structure.record.id} carries no masks; build "
                              "it with the environment (NaturalArm.scene), which segments its targets")
        source = self._source_image(structure)
        targets, protected = structure.mask("targets"), structure.mask("protected")
        if not self.config.cache_masks:
            targets = self.target_mask(structure.record, source, cached=False)
            protected = record_protection(structure.record, targets, structure.margin)
        idle: list[int] = []
        image, guard = replay(source, protected, structure.ops, int(rng.integers(2**63)), self.inpainter, idle)
        return Render(image, NaturalFacts(source, protected, guard, frame_mask(targets, structure.ops), tuple(idle)))

    def validate(self, structure: Scene, render: Render, rule: ProtectedRule) -> None:
        """The proof (see :func:`vicogym.checks.natural.check`)."""
        natural_checks.check(structure, render.facts, render.image)

    def actor_context(self, sample: Sample, render: Render) -> dict[str, Any]:
        record = sample.structure.record
        features = natural_checks.difficulty_features(render.image, render.facts.targets)
        wrong = natural_checks.distractors(sample.answer, record.answer_type, self._known.get(record.answer_type, ()))
        return {"answer": sample.answer, "features": features,
                "difficulty": ACTOR_SCALE * natural_checks.difficulty(features),
                "distractors": wrong, "closed": True}

    def score(self, prediction: str, target: str) -> float:
        return short_answer(prediction, target)

    def sample_edit(self, structure: Scene, rule: ProtectedRule, rng: np.random.Generator) -> dict[str, Any]:
        return draw_edit(lambda: {"ops": [natural_editor.sample_op(structure, rng)]},
                         lambda edit: bool(natural_editor.apply(structure, edit, rule)), self.config.max_tries,
                         "natural-image")

    # -- stored runs -----------------------------------------------------------------------
    def side_files(self, structure: Scene) -> dict[str, bytes]:
        """The source image and its protected mask, stored once per source in a run folder."""
        key = structure.source_sha256 + sha256(structure.protected_mask)
        if key not in self._files:
            source = self._source_image(structure)
            mask = structure.mask("protected").astype(np.uint8) * 255
            while len(self._files) >= _FILES_KEPT:
                self._files.pop(next(iter(self._files)))
            self._files[key] = {source_file(structure.source_sha256): encode_png(source, 9),
                                mask_file(structure): encode_mask_png(mask)}
        return self._files[key]

    def attach_run(self, folder: Path) -> None:
        self.run_folder = Path(folder)

    def verify_row(self, row: Mapping[str, Any]) -> str | None:
        """Besides the label: the protected pixels of the stored image are, bit for bit, those
        of the stored source image (the run folder's copy), under the stored mask, and that
        mask is the stored targets grown by the margin."""
        problem = super().verify_row(row)
        if problem is not None:
            return problem
        try:
            scene = self.decode(row["structure"], payload_dict(row.get("payloads")))
            targets, protected = scene.mask("targets"), scene.mask("protected")
        except ValueError as exc:
            return f"the structure's masks cannot be read: {exc}"
        if not np.array_equal(protected, record_protection(scene.record, targets, scene.margin)):
            return (f"the protected mask is not the targets (and box targets' boxes) grown by the margin of "
                    f"{scene.margin} px")
        if self.run_folder is None:
            return None
        stored_mask = self.run_folder / mask_file(scene)
        stored_source = self.run_folder / source_file(scene.source_sha256)
        for path in (stored_source, stored_mask):
            if not path.is_file():
                return f"{path.relative_to(self.run_folder)} (its source image or mask) is missing from the run folder"
        try:
            source, image = decode_png(stored_source.read_bytes()), decode_png(row_png(row))
            mask = decode_png(stored_mask.read_bytes())[:, :, 0] > 127
        except ValueError as exc:
            return f"the stored image, source or mask does not decode ({exc})"
        return natural_checks.stored_pixels_problem(scene, source, image, mask, frame_mask(protected, scene.ops))

    def close(self) -> None:
        self._segmenter = self._inpainter = None


def source_file(sha: str) -> str:
    return f"{FILES_PREFIX}{sha[:24]}.png"


def mask_file(scene: Scene) -> str:
    return f"{FILES_PREFIX}{scene.source_sha256[:24]}.protected-{sha256(scene.protected_mask)[:16]}.png"


def encode_mask_png(mask: np.ndarray) -> bytes:
    return encode_png(np.repeat(mask[:, :, None], 3, axis=2), 9)


class NaturalEnv(VicoEnv):
    """
    ## Description

    A question about a natural image whose answer depends only on its targets (boxes,
    points or polygons of the objects the answer is about). The targets are segmented
    (GrabCut by default, or Segment Anything) and grown by ``margin`` pixels into a
    protected region; the rewriter edits only the rest of the image: inpaints regions
    away, recolours, blurs, adds noise or JPEG artefacts, pastes distractor patches, pads
    or crops the frame. After every edit the environment replays the edits on the source
    image and proves, pixel by pixel, that no protected pixel changed, so the answer stands;
    it probes the actor ``k`` times and rewards edits that put its pass rate in the sweet
    zone.

    ## Action Space

    ``Text``: an edit as JSON, ``{"ops": [...]}``. Ops: remove, recolor, desaturate, blur,
    noise, contrast, brightness, jpeg, paste, pad, crop, stop (see
    :mod:`vicogym.editors.natural`); boxes are ``[x0, y0, x1, y1]`` in the current image.
    Question-type guards refuse edits that could change the answer (``guarded``); edits
    reaching a target are refused (``protected``).

    ## Observation Space

    ``Dict(image=Box(0, 255, (height, width, 3), uint8), question=Text, structure=Text)``.
    Image policy ``letterbox``: images keep their own size (the sample's image, the
    exported PNG), up to 40 MP, and the work on them stays bounded (segmentation in each
    target's window, models at a working size; see :mod:`vicogym.renderers.natural`); the
    observation and ``render()`` scale it to fit ``width`` x ``height`` (512 x 512 by
    default), keeping its aspect ratio, centred on black. ``structure`` is the
    record, the image size, the margin and the edits so far, as JSON.

    ## Rewards

    A valid edit earns ``f(p)`` of the actor's pass rate ``p`` (band on [0.35, 0.65] by
    default); an invalid edit earns ``invalid_penalty`` (-1) and changes nothing; ``stop``
    earns 0.

    ## Starting State

    A record of the source (by default the 18 embedded demo records on scikit-image's and
    matplotlib's sample photos), its targets segmented.

    ## Episode End

    Terminated by a ``stop`` op; truncated after ``max_turns`` steps (3 by default), valid or
    not: a rejected edit uses a turn too.

    ## Arguments

    ``gymnasium.make("vicogym/Natural-v0", source="demo", segmenter="grabcut", margin=8,
    inpainter="opencv", width=512, height=512, k=8, max_turns=3, ...)``. Segment Anything
    (``segmenter="sam"``) and the diffusers inpainters need the ``[natural]`` extra and
    local weights (nothing is downloaded).

    ## Version History

    - v0: initial release.
    """

    env_id = "vicogym/Natural-v0"
    version = 0
    config_class = NaturalEnvConfig
    arm_class = NaturalArm
    #: settings for quick smoke runs (the registry-wide tests): a small observation canvas
    smoke_settings = {"width": 128, "height": 128}


__all__ = ["NaturalArm", "NaturalEnv", "NaturalEnvConfig"]
