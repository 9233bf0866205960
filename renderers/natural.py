"""Natural-image arm, pixel side: target masks and the protected region.

A segmenter turns each :class:`~vicogym.structures.natural.Target` into a boolean mask of
the image. :class:`GrabCutSegmenter` (the default, OpenCV, no weights) runs GrabCut from
the target's box; a polygon is its own mask; points are grown to a box around them first.
GrabCut's mask is filled to its convex hull (``hull``: GrabCut often loses part of an
object, a wheel's far rim, a thin leg, and a lost part must not be left unprotected), and
GrabCut that keeps less than ``min_share`` of the box (it lost the object) falls back to
the whole box, so a target is never protected by less than its segmentation promised.
OpenCV's GrabCut draws its colour models from OpenCV's global random generator, which is
seeded before every call: the same image and target give the same mask.

:func:`protected_region` is the union of the target masks grown by ``margin`` pixels: the
pixels no edit may change.

**Bounded work.** What a segmenter, an inpainter or an op costs is bounded by what the
sample needs, not by the image file's size (an image may have up to
``vicogym.sources.MAX_IMAGE_PIXELS``, 40 MP, a 40000 x 1000 strip included):

- GrabCut reads a *window*: the target's prompt box grown by ``GRABCUT_CONTEXT`` pixels
  or half the box's longer side, whichever is more (the background it learns its colour
  model from); a window of more than ``GRABCUT_PIXELS`` is scaled down to that many
  pixels first, and the mask it finds scaled back. Either way the mask is kept inside the
  prompt box, filled to its hull, never below ``min_share`` of the box, and holds every
  point prompt; a box target's whole box is protected besides (see
  :func:`record_protection`), so a coarse mask never leaves part of the box editable.
- Segment Anything embeds an image of more than ``SAM_PIXELS`` scaled down to that many
  pixels (its encoder reads 1024 pixels a side whatever it is given); prompts are scaled
  to it, and a mask is read back only inside the target's box grown by ``reach``.
- ``remove`` shows the inpainter only its ``window`` of the canvas: for OpenCV's Telea the
  hole's box grown by ``INPAINT_RADIUS + 2`` pixels (which gives the very pixels the whole
  image would), scaled down to ``INPAINT_PIXELS`` when larger; a diffusers model's square
  window around the hole (scaled to the model's size in any case).
- Every other op works on the box of the pixels it may change (its box, or the whole
  canvas less the protected region), blur with ``4 sigma + 2`` pixels of context around it
  (JPEG with the whole canvas: its blocks are laid from the canvas's corner), so a boxed
  op costs its box; an op of the whole canvas costs one pass over it, its
  floating-point arithmetic done in row bands of at most
  :data:`~vicogym.structures.natural.BAND_PIXELS` pixels (a
  band's result is the whole computation's, bit for bit, noise included: its draws follow
  the rows, whatever the band).
- The protected region is dilated inside the box of the target masks grown by the margin.

So a 40 MP image costs a few passes over its pixels per render, with memory a small
multiple of the image, and never a model's or GrabCut's work on the whole of it.
"""

from __future__ import annotations

import abc
import hashlib
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vicogym.structures.natural import (
    FEATHER_PX,
    Box,
    Target,
    box_slices,
    grow,
    mask_box,
    row_bands,
    scaled_size,
    within,
)
from vicogym.validation import is_int, is_number

#: GrabCut rounds; five is OpenCV's own example and converges on the demo images
GRABCUT_ROUNDS = 5
#: points are prompts, not an outline: the box GrabCut starts from reaches this far around them
POINT_REACH = 24
#: the least background GrabCut sees around a target's prompt box (pixels on each side)
GRABCUT_CONTEXT = 32
#: the most pixels GrabCut reads for one target: a larger window is scaled down to this
GRABCUT_PIXELS = 512 * 512
#: the most pixels Segment Anything is given: a larger image is scaled down to this
SAM_PIXELS = 2048 * 2048
#: the most pixels OpenCV's Telea inpainting fills at once: a larger window is scaled down to this
INPAINT_PIXELS = 1 << 19


def polygon_mask(polygon: tuple[tuple[float, float], ...], height: int, width: int) -> np.ndarray:
    box, local = polygon_window(polygon, height, width)
    mask = np.zeros((height, width), bool)
    mask[box_slices(box)] = local
    return mask


def polygon_window(polygon: tuple[tuple[float, float], ...], height: int, width: int) -> tuple[Box, np.ndarray]:
    """The polygon's mask inside the box of its (rounded) vertices, within the image: the
    box and the mask there (what :func:`polygon_mask` draws on the whole image)."""
    import cv2

    points = np.round(np.asarray(polygon, dtype=float)).astype(np.int32)
    x0, y0 = max(0, int(points[:, 0].min())), max(0, int(points[:, 1].min()))
    x1, y1 = min(width, int(points[:, 0].max()) + 1), min(height, int(points[:, 1].max()) + 1)
    x1, y1 = max(x0, x1), max(y0, y1)
    local = np.zeros((y1 - y0, x1 - x0), np.uint8)
    if local.size:
        cv2.fillPoly(local, [points - np.array([x0, y0], np.int32)], 1)
    return (x0, y0, x1, y1), local.astype(bool)


def box_mask(box: tuple[int, int, int, int], height: int, width: int) -> np.ndarray:
    x0, y0, x1, y1 = box
    mask = np.zeros((height, width), bool)
    mask[max(0, y0):min(height, y1), max(0, x0):min(width, x1)] = True
    return mask


def image_digest(image: np.ndarray) -> bytes:
    """SHA-256 of an image's shape and bytes, read in place (no copy of a large image)."""
    array = np.ascontiguousarray(image)
    digest = hashlib.sha256(repr(array.shape).encode("ascii"))
    digest.update(memoryview(array).cast("B"))
    return digest.digest()


def prompt_box(target: Target, width: int, height: int) -> tuple[int, int, int, int]:
    """The box a segmenter starts from: the target's own, or one reaching ``POINT_REACH``
    around its points; within the image."""
    x0, y0, x1, y1 = target.bounds()
    if target.points is not None:
        x0, y0, x1, y1 = x0 - POINT_REACH, y0 - POINT_REACH, x1 + POINT_REACH, y1 + POINT_REACH
    return max(0, x0), max(0, y0), min(width, x1), min(height, y1)


def _or_box(mask: np.ndarray, box: np.ndarray, min_share: float) -> np.ndarray:
    """``mask``, or the whole ``box`` when the mask kept less than ``min_share`` of it (the
    segmenter lost the object: a target is never protected by less than its box promised)."""
    return mask if mask.sum() >= min_share * box.sum() else box


def _mark_points(mask: np.ndarray, target: Target, window: Box, width: int, height: int) -> None:
    """A point prompt is on the object by definition: set its pixel in ``mask`` (of ``window``)."""
    if target.points is None:
        return
    for x, y in target.points:
        px, py = min(width - 1, int(x)), min(height - 1, int(y))
        if window[0] <= px < window[2] and window[1] <= py < window[3]:
            mask[py - window[1], px - window[0]] = True


def convex_hull(mask: np.ndarray) -> np.ndarray:
    """The mask filled to the convex hull of its pixels."""
    import cv2

    ys, xs = np.nonzero(mask)
    hull = cv2.convexHull(np.stack([xs, ys], axis=1).astype(np.int32))
    out = np.zeros(mask.shape, np.uint8)
    cv2.fillConvexPoly(out, hull, 1)
    return out.astype(bool) | mask


def local_mask(segmenter: Any, image: np.ndarray, target: Target) -> tuple[Box, np.ndarray]:
    """``segmenter``'s mask of ``target`` as ``(box, mask inside the box)``: the segmenters
    here say where their mask can lie, so a union never holds a whole-image mask per target."""
    if hasattr(segmenter, "local_mask"):
        return segmenter.local_mask(image, target)
    height, width = image.shape[:2]
    return (0, 0, width, height), np.asarray(segmenter.mask(image, target), bool)


def target_union(segmenter: Any, image: np.ndarray, targets: Any) -> np.ndarray:
    """The union of ``segmenter``'s masks of ``targets`` on ``image``, as one boolean image."""
    height, width = image.shape[:2]
    union = np.zeros((height, width), bool)
    for target in targets:
        box, mask = local_mask(segmenter, image, target)
        union[box_slices(box)] |= mask
    return union


def _whole(local: tuple[Box, np.ndarray], height: int, width: int) -> np.ndarray:
    box, mask = local
    out = np.zeros((height, width), bool)
    out[box_slices(box)] = mask
    return out


@dataclass(frozen=True)
class BoxSegmenter:
    """Target masks as the targets' own boxes (polygons as drawn; points grown by
    ``POINT_REACH``): the most cautious protection, instant, no model."""

    name = "box"

    def mask(self, image: np.ndarray, target: Target) -> np.ndarray:
        return _whole(self.local_mask(image, target), *image.shape[:2])

    def local_mask(self, image: np.ndarray, target: Target) -> tuple[Box, np.ndarray]:
        height, width = image.shape[:2]
        if target.polygon is not None:
            return polygon_window(target.polygon, height, width)
        box = prompt_box(target, width, height)
        return box, np.ones((box[3] - box[1], box[2] - box[0]), bool)


@dataclass(frozen=True)
class GrabCutSegmenter:
    """Target masks by OpenCV's GrabCut, started from each target's box, run on the box's
    window (see the module notes: ``GRABCUT_CONTEXT``, ``GRABCUT_PIXELS``)."""

    min_share: float = 0.2
    hull: bool = True

    name = "grabcut"

    def __post_init__(self) -> None:
        if not is_number(self.min_share, 0, 1, finite=False):
            raise ValueError(f"expected min_share in [0, 1], got {self.min_share!r}")

    def mask(self, image: np.ndarray, target: Target) -> np.ndarray:
        return _whole(self.local_mask(image, target), *image.shape[:2])

    def local_mask(self, image: np.ndarray, target: Target) -> tuple[Box, np.ndarray]:
        """The mask inside the target's prompt box: ``(box, mask)``."""
        height, width = image.shape[:2]
        if target.polygon is not None:
            return polygon_window(target.polygon, height, width)
        box = prompt_box(target, width, height)
        x0, y0, x1, y1 = box
        whole = np.ones((y1 - y0, x1 - x0), bool)
        if x1 - x0 < 3 or y1 - y0 < 3 or box == (0, 0, width, height):
            return box, whole  # GrabCut needs background around the box to learn from
        import cv2

        window = grow(box, max(GRABCUT_CONTEXT, max(x1 - x0, y1 - y0) // 2), width, height)
        wx0, wy0, wx1, wy1 = window
        crop = np.ascontiguousarray(image[wy0:wy1, wx0:wx1, ::-1])  # BGR, as GrabCut reads it
        sx = sy = 1.0
        if crop.shape[0] * crop.shape[1] > GRABCUT_PIXELS:
            size = scaled_size(wx1 - wx0, wy1 - wy0, GRABCUT_PIXELS)
            crop = cv2.resize(crop, size, interpolation=cv2.INTER_AREA)
            sx, sy = size[0] / (wx1 - wx0), size[1] / (wy1 - wy0)
        # the box in the working window, rounded outwards so it holds the whole target
        rx0, ry0 = int(math.floor((x0 - wx0) * sx)), int(math.floor((y0 - wy0) * sy))
        rx1 = min(crop.shape[1], int(math.ceil((x1 - wx0) * sx)))
        ry1 = min(crop.shape[0], int(math.ceil((y1 - wy0) * sy)))
        if rx1 - rx0 < 3 or ry1 - ry0 < 3 or (rx0, ry0, rx1, ry1) == (0, 0, crop.shape[1], crop.shape[0]):
            return box, whole
        cv2.setRNGSeed(0)
        labels = np.zeros(crop.shape[:2], np.uint8)
        background, foreground = np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64)
        cv2.grabCut(crop, labels, (rx0, ry0, rx1 - rx0, ry1 - ry0), background, foreground, GRABCUT_ROUNDS,
                    cv2.GC_INIT_WITH_RECT)
        found = ((labels == cv2.GC_FGD) | (labels == cv2.GC_PR_FGD)).astype(np.uint8)
        if (sx, sy) != (1.0, 1.0):
            found = cv2.resize(found, (wx1 - wx0, wy1 - wy0), interpolation=cv2.INTER_NEAREST)
        mask = found[within(box, window)].astype(bool)
        _mark_points(mask, target, box, width, height)
        if self.hull and mask.any():
            mask = convex_hull(mask)
        return box, _or_box(mask, whole, self.min_share)


@dataclass(frozen=True)
class SamEncoder:
    """The size of a Segment Anything image encoder. :data:`SAM_MODELS` holds the released
    ones (``vit_h``, ``vit_l``, ``vit_b``); smaller ones serve tests and experiments."""

    embed_dim: int
    depth: int
    num_heads: int
    global_attn_indexes: tuple[int, ...]
    image_size: int = 1024

    def __post_init__(self) -> None:
        for name in ("embed_dim", "depth", "num_heads", "image_size"):
            value = getattr(self, name)
            if not is_int(value, 1):
                raise ValueError(f"expected SAM encoder {name} as a positive integer, got {value!r}")
        if self.embed_dim % self.num_heads or self.image_size % 16:
            raise ValueError(f"expected embed_dim divisible by num_heads and image_size by 16, got {self}")
        if not all(isinstance(i, int) and 0 <= i < self.depth for i in self.global_attn_indexes):
            raise ValueError(f"expected global_attn_indexes within [0, {self.depth}), got {self.global_attn_indexes!r}")
        object.__setattr__(self, "global_attn_indexes", tuple(self.global_attn_indexes))


SAM_MODELS = {"vit_h": SamEncoder(1280, 32, 16, (7, 15, 23, 31)), "vit_l": SamEncoder(1024, 24, 16, (5, 11, 17, 23)),
              "vit_b": SamEncoder(768, 12, 12, (2, 5, 8, 11))}
#: where a SAM checkpoint is looked for when the config names none
SAM_CHECKPOINT_ENV = "VICOGYM_SAM_CHECKPOINT"


def build_sam(encoder: SamEncoder, checkpoint: str | None = None, device: str = "cpu") -> Any:
    """A Segment Anything model of ``encoder``'s size (prompt encoder and mask decoder as
    released), with the weights of ``checkpoint`` (a ``torch.save``d state dict) when given."""
    from functools import partial

    import torch
    from segment_anything.modeling import ImageEncoderViT, MaskDecoder, PromptEncoder, Sam, TwoWayTransformer

    embedding = encoder.image_size // 16
    sam = Sam(
        image_encoder=ImageEncoderViT(depth=encoder.depth, embed_dim=encoder.embed_dim, img_size=encoder.image_size,
                                      mlp_ratio=4, norm_layer=partial(torch.nn.LayerNorm, eps=1e-6),
                                      num_heads=encoder.num_heads, patch_size=16, qkv_bias=True, use_rel_pos=True,
                                      global_attn_indexes=encoder.global_attn_indexes, window_size=14, out_chans=256),
        prompt_encoder=PromptEncoder(embed_dim=256, image_embedding_size=(embedding, embedding),
                                     input_image_size=(encoder.image_size, encoder.image_size), mask_in_chans=16),
        mask_decoder=MaskDecoder(num_multimask_outputs=3,
                                 transformer=TwoWayTransformer(depth=2, embedding_dim=256, mlp_dim=2048, num_heads=8),
                                 transformer_dim=256, iou_head_depth=3, iou_head_hidden_dim=256),
        pixel_mean=[123.675, 116.28, 103.53], pixel_std=[58.395, 57.12, 57.375])
    if checkpoint is not None:
        path = Path(checkpoint)
        if not path.is_file():
            raise FileNotFoundError(f"no SAM checkpoint at {path}; set sam_checkpoint or ${SAM_CHECKPOINT_ENV}")
        try:
            state = torch.load(path, map_location=device, weights_only=True)
            sam.load_state_dict(state)
        except Exception as exc:  # torch.load and load_state_dict fail in many ways on other files
            raise ValueError(f"{path} is not a SAM checkpoint of the {encoder} encoder ({type(exc).__name__}: "
                             f"{str(exc)[:300]})") from None
    return sam.to(device).eval()


class SamSegmenter:
    """Target masks by Segment Anything from box and point prompts. The image embedding is
    computed once per source image and reused for every target and edit of it; an image of
    more than ``SAM_PIXELS`` is embedded scaled down to that many pixels, its prompts scaled
    with it. A mask is kept inside the target's box grown by the scene margin's worth
    (``reach``), holds its point prompts, and one that keeps less than ``min_share`` of the
    box falls back to the box, as with GrabCut."""

    name = "sam"

    def __init__(self, checkpoint: str | None = None, model: str | SamEncoder = "vit_h", device: str = "cpu",
                 min_share: float = 0.2, reach: int = 8):
        checkpoint = checkpoint or os.environ.get(SAM_CHECKPOINT_ENV)
        if not checkpoint:
            raise ValueError(f"the SAM segmenter needs a checkpoint: set sam_checkpoint or ${SAM_CHECKPOINT_ENV}")
        if isinstance(model, str):
            if model not in SAM_MODELS:
                raise ValueError(f"expected a SAM model in {sorted(SAM_MODELS)} or an encoder size, got {model!r}")
            model = SAM_MODELS[model]
        self.encoder, self.checkpoint, self.device = model, checkpoint, device
        self.min_share, self.reach = min_share, reach
        self._predictor: Any = None
        self._embedded: bytes | None = None
        self._scale = (1.0, 1.0)  # the embedded image's size over the source image's, x and y
        self.embeddings = 0  # how many images were embedded (the cache's misses)

    def load(self) -> None:
        """Build the model and load the checkpoint now (a bad file fails here, not at the
        first mask)."""
        if self._predictor is None:
            from segment_anything import SamPredictor

            self._predictor = SamPredictor(build_sam(self.encoder, self.checkpoint, self.device))

    def forget(self) -> None:
        """Drop the cached image embedding (the next mask embeds its image again)."""
        self._embedded = None

    def _embed(self, image: np.ndarray) -> Any:
        self.load()
        key = image_digest(image)
        if key != self._embedded:
            height, width = image.shape[:2]
            work, self._scale = np.ascontiguousarray(image), (1.0, 1.0)
            if height * width > SAM_PIXELS:
                import cv2

                size = scaled_size(width, height, SAM_PIXELS)
                work = cv2.resize(work, size, interpolation=cv2.INTER_AREA)
                self._scale = (size[0] / width, size[1] / height)
            self._predictor.set_image(work, image_format="RGB")
            self._embedded = key
            self.embeddings += 1
        return self._predictor

    def mask(self, image: np.ndarray, target: Target) -> np.ndarray:
        return _whole(self.local_mask(image, target), *image.shape[:2])

    def local_mask(self, image: np.ndarray, target: Target) -> tuple[Box, np.ndarray]:
        """The mask inside the target's prompt box grown by ``reach``: ``(box, mask)``."""
        height, width = image.shape[:2]
        if target.polygon is not None:
            return polygon_window(target.polygon, height, width)
        predictor = self._embed(image)
        sx, sy = self._scale
        if target.points is not None:
            coords = np.asarray(target.points, dtype=np.float32) * np.array([sx, sy], np.float32)
            masks, _, _ = predictor.predict(point_coords=coords, point_labels=np.ones(len(coords), np.int64),
                                            multimask_output=False)
        else:
            box = np.asarray(target.bounds(), dtype=np.float32) * np.array([sx, sy, sx, sy], np.float32)
            masks, _, _ = predictor.predict(box=box, multimask_output=False)
        found = np.asarray(masks[0], bool)
        prompt = prompt_box(target, width, height)
        near = grow(prompt, self.reach, width, height)
        if (sx, sy) == (1.0, 1.0):
            mask = found[box_slices(near)].copy()
        else:  # each source pixel reads the embedded pixel it falls in
            ys = np.minimum(((np.arange(near[1], near[3]) + 0.5) * sy).astype(np.int64), found.shape[0] - 1)
            xs = np.minimum(((np.arange(near[0], near[2]) + 0.5) * sx).astype(np.int64), found.shape[1] - 1)
            mask = found[np.ix_(ys, xs)]
        _mark_points(mask, target, near, width, height)
        whole = np.zeros(mask.shape, bool)
        whole[within(prompt, near)] = True
        return near, _or_box(mask, whole, self.min_share)


@dataclass(frozen=True)
class NaturalFacts:
    """What a natural-image render knows besides its pixels: the source image, its
    protected region, where that region lies in the image (``guard``, after pads and
    crops), where the targets lie (``targets``, un-grown, in image coordinates) and which
    ops changed no pixel (``idle``)."""

    source: np.ndarray
    protected: np.ndarray
    guard: np.ndarray
    targets: np.ndarray
    idle: tuple[int, ...] = ()


def annotated_boxes(record: Any, height: int, width: int) -> np.ndarray:
    """The boxes of ``record``'s box targets, as one boolean image: an annotator's box is
    where the object lies, so it is protected whole (a segmenter that loses a tyre's tread or
    the foot of a cup's handle inside it protects that part anyway)."""
    boxes = np.zeros((height, width), bool)
    for target in record.targets:
        if target.geometry == "box":
            x0, y0, x1, y1 = target.box
            boxes[max(0, y0):min(height, y1), max(0, x0):min(width, x1)] = True
    return boxes


def record_protection(record: Any, targets: np.ndarray, margin: int) -> np.ndarray:
    """A record's protected region: its targets' masks and its box targets' boxes, grown by
    ``margin`` pixels."""
    return protected_region([targets, annotated_boxes(record, *targets.shape)], margin)


def protected_region(masks: list[np.ndarray], margin: int) -> np.ndarray:
    """The union of ``masks`` grown by ``margin`` pixels (a disc), as a boolean image. The
    growing reads only the box of the union grown by the margin (what it can reach)."""
    if not masks:
        raise ValueError("expected at least one target mask")
    if not is_int(margin, 0):
        raise ValueError(f"expected margin as a whole number of pixels >= 0, got {margin!r}")
    union = np.array(masks[0], bool, copy=True)
    for mask in masks[1:]:
        union |= mask
    box = mask_box(union)
    if margin == 0 or box is None:
        return union
    import cv2

    height, width = union.shape
    window = box_slices(grow(box, margin, width, height))
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * margin + 1, 2 * margin + 1))
    union[window] = cv2.dilate(union[window].astype(np.uint8), kernel).astype(bool)  # outside: no pixel to grow
    return union


def _recolor(image: np.ndarray, op: dict, rng: np.random.Generator, editable: np.ndarray) -> np.ndarray:
    import cv2

    hsv = cv2.cvtColor(image, cv2.COLOR_RGB2HSV)
    hue = hsv[:, :, 0].astype(np.int16) + round(op["hue"] / 2)
    hsv[:, :, 0] = (hue % 180).astype(np.uint8)  # OpenCV hue: 0-179
    return cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)


def _banded(image: np.ndarray, pixels: Any) -> np.ndarray:
    """``pixels(r0, r1)`` (the op's result on rows ``[r0, r1)``) for every row band of
    ``image``, as one image: the arithmetic holds one band at a time."""
    out = np.empty_like(image)
    for r0, r1 in row_bands(*image.shape[:2]):
        out[r0:r1] = pixels(r0, r1)
    return out


def _desaturate(image: np.ndarray, op: dict, rng: np.random.Generator, editable: np.ndarray) -> np.ndarray:
    import cv2

    grey = cv2.cvtColor(cv2.cvtColor(image, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2RGB)
    amount = op["amount"]
    return _banded(image, lambda r0, r1: np.clip(
        np.round(image[r0:r1] * (1 - amount) + grey[r0:r1].astype(float) * amount), 0, 255))


def _blur(image: np.ndarray, op: dict, rng: np.random.Generator, editable: np.ndarray) -> np.ndarray:
    import cv2

    return cv2.GaussianBlur(image, (0, 0), float(op["sigma"]))


def _noise(image: np.ndarray, op: dict, rng: np.random.Generator, editable: np.ndarray) -> np.ndarray:
    sigma = np.float32(op["sigma"])

    def band(r0: int, r1: int) -> np.ndarray:  # drawn row after row: the bands draw what one draw would
        noise = rng.standard_normal(image[r0:r1].shape, dtype=np.float32)
        noise *= sigma
        noise += image[r0:r1]
        return np.clip(np.rint(noise, out=noise), 0, 255, out=noise)

    return _banded(image, band)


def _contrast(image: np.ndarray, op: dict, rng: np.random.Generator, editable: np.ndarray) -> np.ndarray:
    # about the mean of the pixels it changes, so the untouched ones set no anchor
    counted = editable if editable.any() else np.ones(image.shape[:2], bool)
    total, count = np.zeros(3, np.int64), 0
    for r0, r1 in row_bands(*image.shape[:2]):  # whole-number sums: the mean of one sum, exactly
        total += image[r0:r1][counted[r0:r1]].sum(axis=0, dtype=np.int64)
        count += int(counted[r0:r1].sum())
    mean = total.astype(np.float64) / count
    factor = op["factor"]
    return _banded(image, lambda r0, r1: np.clip(np.round((image[r0:r1] - mean) * factor + mean), 0, 255))


def _brightness(image: np.ndarray, op: dict, rng: np.random.Generator, editable: np.ndarray) -> np.ndarray:
    delta = int(round(op["delta"]))
    return _banded(image, lambda r0, r1: np.clip(image[r0:r1].astype(np.int16) + delta, 0, 255))


def _jpeg(image: np.ndarray, op: dict, rng: np.random.Generator, editable: np.ndarray) -> np.ndarray:
    import cv2

    ok, data = cv2.imencode(".jpg", image[:, :, ::-1], [cv2.IMWRITE_JPEG_QUALITY, int(op["quality"])])
    if not ok:
        raise ValueError(f"OpenCV could not encode the {image.shape[1]} x {image.shape[0]} canvas as JPEG")
    return cv2.imdecode(data, cv2.IMREAD_COLOR)[:, :, ::-1]


def _reach(op: dict) -> int | None:
    """How far around the pixels it changes an op reads (``None``: the whole canvas, as
    JPEG's blocks are laid from the canvas's corner)."""
    if op["op"] == "blur":
        return int(math.ceil(4 * float(op["sigma"]))) + 2  # OpenCV's 8-bit kernel reaches 3 sigma
    if op["op"] == "jpeg":
        return None
    return 0


def _telea(image: np.ndarray, hole: np.ndarray) -> np.ndarray:
    """``image`` with ``hole`` filled by OpenCV's Telea inpainting, at most
    ``INPAINT_PIXELS`` at once: a larger image is filled scaled down (its hole grown to
    every scaled pixel a hole pixel touches) and the fill scaled back into the hole."""
    import cv2

    height, width = hole.shape  # Telea fills each channel alike: RGB is filled as BGR would be
    if height * width <= INPAINT_PIXELS:
        return cv2.inpaint(np.ascontiguousarray(image), hole.astype(np.uint8), INPAINT_RADIUS, cv2.INPAINT_TELEA)
    size = scaled_size(width, height, INPAINT_PIXELS)
    small = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    touched = (cv2.resize(hole.astype(np.uint8) * 255, size, interpolation=cv2.INTER_AREA) > 0).astype(np.uint8)
    touched = cv2.dilate(touched, np.ones((3, 3), np.uint8))
    filled = cv2.inpaint(small, touched, INPAINT_RADIUS, cv2.INPAINT_TELEA)
    out = cv2.resize(filled, (width, height), interpolation=cv2.INTER_LINEAR)
    np.copyto(out, image, where=~hole[:, :, None])
    return out


class OpenCVInpainter:
    """``remove`` by OpenCV's Telea inpainting (the default; no weights). It reads the hole's
    box grown by ``INPAINT_RADIUS + 2`` pixels (:meth:`window`: what Telea reads, so the
    fill is the one the whole image would give), at most ``INPAINT_PIXELS`` at once."""

    name = "opencv"
    #: its fill is smooth: the renderer gives it the texture of the surroundings
    smooth = True

    def window(self, box: Box, width: int, height: int) -> Box:
        """The part of a ``width`` x ``height`` canvas the fill of a hole in ``box`` reads."""
        window = grow(box, INPAINT_RADIUS + 2, width, height)
        pixels = (window[2] - window[0]) * (window[3] - window[1])
        if pixels > INPAINT_PIXELS:  # filled scaled down: the same context in scaled pixels
            window = grow(box, int(math.ceil((INPAINT_RADIUS + 3) * math.sqrt(pixels / INPAINT_PIXELS))), width,
                          height)
        return window

    def inpaint(self, image: np.ndarray, hole: np.ndarray, seed: int) -> np.ndarray:
        box = mask_box(hole)
        if box is None:
            return np.array(image, copy=True)
        window = self.window(box, hole.shape[1], hole.shape[0])
        if window == (0, 0, hole.shape[1], hole.shape[0]):  # replay shows it its window only
            return _telea(image, hole)
        out = np.array(image, copy=True)
        out[box_slices(window)] = _telea(image[box_slices(window)], hole[box_slices(window)])
        return out


class _WindowInpainter(abc.ABC):
    """``remove`` by a diffusers pipeline from a local model folder (loaded with
    ``from_pretrained``, local files only: nothing is downloaded). The hole's surroundings,
    a square window around it, are scaled to the model's size, inpainted, and scaled back;
    only hole pixels are taken. Seeded per call."""

    name = "diffusers"

    def __init__(self, model_dir: str, steps: int = 50, device: str = "cpu"):
        self.model_dir, self.steps, self.device = model_dir, steps, device
        self._pipe: Any = None

    def load(self) -> Any:
        """The pipeline, loaded on first use (a wrong folder fails here)."""
        if self._pipe is None:
            if not (Path(self.model_dir) / "model_index.json").is_file():
                raise FileNotFoundError(f"expected a diffusers model folder with model_index.json at {self.model_dir}")
            pipe = self._load()
            pipe.set_progress_bar_config(disable=True)
            self._pipe = pipe.to(self.device)
        return self._pipe

    @abc.abstractmethod
    def _load(self) -> Any:
        """The pipeline, from ``model_dir``."""

    @abc.abstractmethod
    def _size(self, pipe: Any) -> int:
        """The side of the square the model paints."""

    @abc.abstractmethod
    def _fill(self, pipe: Any, window: np.ndarray, hole: np.ndarray, generator: Any) -> np.ndarray:
        """The model's picture (floats in [0, 1], the window's size) with ``hole`` filled."""

    def window(self, box: Box, width: int, height: int) -> Box:
        """The square window around a hole in ``box`` that the model paints (at least its
        own size and twice the hole's longer side, within the ``width`` x ``height`` canvas)."""
        size = self._size(self.load())
        x0, y0, x1, y1 = box
        side = min(max(height, width), max(size, 2 * (max(y1 - y0, x1 - x0))))
        cx, cy = (x0 + x1 - 1) // 2, (y0 + y1 - 1) // 2
        wx0, wy0 = min(max(0, cx - side // 2), max(0, width - side)), min(max(0, cy - side // 2), max(0, height - side))
        return wx0, wy0, min(width, wx0 + side), min(height, wy0 + side)

    def inpaint(self, image: np.ndarray, hole: np.ndarray, seed: int) -> np.ndarray:
        import cv2
        import torch

        pipe = self.load()
        size = self._size(pipe)
        box = mask_box(hole)
        result = np.array(image, copy=True)
        if box is None:
            return result
        window = box_slices(self.window(box, hole.shape[1], hole.shape[0]))
        crop, crop_hole = image[window], hole[window]
        small = cv2.resize(crop, (size, size), interpolation=cv2.INTER_AREA)
        small_hole = cv2.resize(crop_hole.astype(np.uint8), (size, size), interpolation=cv2.INTER_NEAREST).astype(bool)
        generator = torch.Generator(device="cpu").manual_seed(int(seed) % 2**63)
        out = self._fill(pipe, small, small_hole, generator)
        filled = cv2.resize(np.clip(np.round(out * 255), 0, 255).astype(np.uint8), (crop.shape[1], crop.shape[0]),
                            interpolation=cv2.INTER_CUBIC)
        result[window] = np.where(crop_hole[:, :, None], filled, crop)
        return result


class RePaintInpainter(_WindowInpainter):
    """RePaint with an unconditional DDPM model (a folder with ``model_index.json``,
    ``unet/``, ``scheduler/``)."""

    name = "repaint"

    def __init__(self, model_dir: str, steps: int = 50, jump_length: int = 10, jump_n_sample: int = 2,
                 device: str = "cpu"):
        super().__init__(model_dir, steps, device)
        self.jump_length, self.jump_n_sample = jump_length, jump_n_sample

    def _load(self) -> Any:
        from diffusers import RePaintPipeline, RePaintScheduler

        pipe = RePaintPipeline.from_pretrained(self.model_dir, local_files_only=True)
        pipe.scheduler = RePaintScheduler.from_config(pipe.scheduler.config)
        return pipe

    def _size(self, pipe: Any) -> int:
        return int(pipe.unet.config.sample_size)

    def _fill(self, pipe: Any, window: np.ndarray, hole: np.ndarray, generator: Any) -> np.ndarray:
        from PIL import Image

        keep = Image.fromarray((~hole).astype(np.uint8) * 255).convert("RGB")  # RePaint: white = keep
        return pipe(image=Image.fromarray(window), mask_image=keep, num_inference_steps=self.steps,
                    jump_length=self.jump_length, jump_n_sample=self.jump_n_sample, generator=generator,
                    output_type="np").images[0]


class StableDiffusionInpainter(_WindowInpainter):
    """A Stable Diffusion inpainting pipeline (a folder with ``model_index.json``,
    ``unet/``, ``vae/``, ``text_encoder/``, ``tokenizer/``, ``scheduler/``), prompted with
    ``prompt`` (the surroundings continued, by default)."""

    name = "stable_diffusion"

    def __init__(self, model_dir: str, steps: int = 25, device: str = "cpu", prompt: str = "background",
                 guidance_scale: float = 7.5):
        super().__init__(model_dir, steps, device)
        self.prompt, self.guidance_scale = prompt, guidance_scale

    def _load(self) -> Any:
        from diffusers import StableDiffusionInpaintPipeline

        return StableDiffusionInpaintPipeline.from_pretrained(self.model_dir, local_files_only=True,
                                                              safety_checker=None, requires_safety_checker=False)

    def _size(self, pipe: Any) -> int:
        return int(pipe.unet.config.sample_size) * int(pipe.vae_scale_factor)

    def _fill(self, pipe: Any, window: np.ndarray, hole: np.ndarray, generator: Any) -> np.ndarray:
        from PIL import Image

        size = window.shape[0]
        paint = Image.fromarray(hole.astype(np.uint8) * 255)  # Stable Diffusion: white = paint
        return pipe(prompt=self.prompt, image=Image.fromarray(window), mask_image=paint, height=size, width=size,
                    num_inference_steps=self.steps, guidance_scale=self.guidance_scale, generator=generator,
                    output_type="np").images[0]


FILTERS = {"recolor": _recolor, "desaturate": _desaturate, "blur": _blur, "noise": _noise, "contrast": _contrast,
           "brightness": _brightness, "jpeg": _jpeg}
#: OpenCV's inpainting radius for ``remove`` (pixels of context around the hole)
INPAINT_RADIUS = 5


def _stream(seed: int, k: int) -> np.random.Generator:
    """Op ``k``'s own random stream."""
    return np.random.default_rng(np.random.SeedSequence([int(seed) % 2**63, k]))


def replay(source: np.ndarray, protected: np.ndarray, ops: tuple, seed: int,
           inpainter: Any = None, idle: list[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The image after ``ops`` (see :mod:`vicogym.editors.natural`) and where the source's
    protected pixels now lie. Every op writes only outside the protected region; ``noise``
    and the inpainter draw from ``SeedSequence([seed, op index])``. ``remove`` uses
    ``inpainter`` (OpenCV's by default), shown only its ``window`` of the canvas around the
    hole. An op reads and writes only the box of the pixels it may change (with a blur's
    reach around it; see the module notes). The indices of ops that changed no pixel (a
    recolour of a grey region, a blur of a flat border) are appended to ``idle``."""
    inpainter = inpainter or OpenCVInpainter()
    idle = idle if idle is not None else []
    image, guard = np.array(source, dtype=np.uint8, copy=True), protected.copy()
    for k, op in enumerate(ops):
        name = op["op"]
        height, width = image.shape[:2]
        if name == "pad":
            image, guard = _pad(image, op), np.pad(guard, ((op["top"], op["bottom"]), (op["left"], op["right"])),
                                                   constant_values=False)
            continue
        if name == "crop":
            x0, y0, x1, y1 = op["box"]
            image, guard = image[y0:y1, x0:x1].copy(), guard[y0:y1, x0:x1].copy()
            continue
        if name == "paste":
            sx0, sy0, sx1, sy1 = op["source"]
            tx, ty = op["to"]
            area = (tx, ty, tx + sx1 - sx0, ty + sy1 - sy0)
        else:
            area = tuple(op["box"]) if "box" in op else (0, 0, width, height)
        area = grow(area, 0, width, height)
        free = ~guard[box_slices(area)]
        inner = mask_box(free)
        if inner is None:  # nothing it may change
            idle.append(k)
            continue
        box = (area[0] + inner[0], area[1] + inner[1], area[0] + inner[2], area[1] + inner[3])
        editable = free[box_slices(inner)]
        if name == "remove":
            changed = _remove(image, box, editable, inpainter, int(_stream(seed, k).integers(2**63)), guard)
        elif name == "paste":
            patch = image[sy0:sy1, sx0:sx1][box_slices(inner)].copy()
            changed = _paste(image, box, editable, patch)
        else:
            reach = _reach(op)
            window = (0, 0, width, height) if reach is None else grow(box, reach, width, height)
            local = np.zeros((window[3] - window[1], window[2] - window[0]), bool)
            local[within(box, window)] = editable
            edited = FILTERS[name](image[box_slices(window)], op, _stream(seed, k), local)
            shape = region_blob(image[box_slices(area)])[box_slices(inner)] if "box" in op else None
            changed = _blend(image, box, editable, edited[within(box, window)], shape)
        if not changed:
            idle.append(k)
    return image, guard


def _pad(image: np.ndarray, op: dict) -> np.ndarray:
    height, width = image.shape[:2]
    top, left = op["top"], op["left"]
    out = np.empty((height + top + op["bottom"], width + left + op["right"], 3), np.uint8)
    out[:] = np.asarray(op["fill"], np.uint8)
    out[top:top + height, left:left + width] = image
    return out


def _remove(image: np.ndarray, box: Box, editable: np.ndarray, inpainter: Any, seed: int,
            guard: np.ndarray | None = None) -> bool:
    """Inpaint what ``box`` holds in place (its hole: :func:`removal_hole`, within the
    editable pixels), showing the inpainter its window of the canvas; whether a pixel
    changed. The inpainter blends its hole in itself: a soft edge would bring the object
    back, so its fill is taken as it is. A smooth fill (OpenCV's Telea) is given the
    texture of the best-matching neighbouring patch clear of ``guard`` (Poisson blending:
    :func:`_texture`), so a large hole is no smear."""
    height, width = image.shape[:2]
    hole = removal_hole(image, box, editable)
    if not hole.any():
        return False
    window = inpainter.window(box, width, height) if hasattr(inpainter, "window") else (0, 0, width, height)
    local = np.zeros((window[3] - window[1], window[2] - window[0]), bool)
    local[within(box, window)] = hole
    filled = inpainter.inpaint(image[box_slices(window)], local, seed)[within(box, window)]
    region = image[box_slices(box)]
    changed = False
    for r0, r1 in row_bands(*region.shape[:2]):
        old, where = region[r0:r1], hole[r0:r1]
        changed = changed or not np.array_equal(filled[r0:r1][where], old[where])
        np.copyto(old, filled[r0:r1], where=where[:, :, None])
    if getattr(inpainter, "smooth", False) and guard is not None:
        changed = _texture(image, box, hole, guard) or changed
    return changed


#: the most pixels a shaped edit's blob, a removal's object search and a Poisson blend read at once
BLOB_PIXELS = 1 << 18
#: a boxed edit takes all of its strength inside this share of its blob's radius (0: only at the centre, a gentle swell)
BLOB_CORE = 0.0
#: a long box's blobs lie this many of their radii apart (spots in a row, not a strip)
BLOB_SPACING = 2.5
#: a removal's object mask grows by this many pixels (its outline and anti-aliased rim go too)
HOLE_GROWTH = 3


def _guided(guide: np.ndarray, value: np.ndarray, radius: int, eps: float) -> np.ndarray:
    """``value`` smoothed so that it follows the edges of ``guide`` (He et al.'s guided filter,
    by box filters; both float32, guide in [0, 1])."""
    import cv2

    size = (2 * radius + 1, 2 * radius + 1)

    def mean(a: np.ndarray) -> np.ndarray:
        return cv2.boxFilter(a, -1, size, borderType=cv2.BORDER_REFLECT)

    mean_i, mean_v = mean(guide), mean(value)
    a = (mean(guide * value) - mean_i * mean_v) / (mean(guide * guide) - mean_i * mean_i + eps)
    b = mean_v - a * mean_i
    return mean(a) * guide + mean(b)


def region_blob(pixels: np.ndarray) -> np.ndarray:
    """How much of a boxed edit each pixel of its box takes (0-1): a soft ellipse inscribed
    in the box (all of it inside ``BLOB_CORE`` of its radius, fading to nothing at its
    rim, so the box's edges and corners are never reached) shaped by the photo's own
    regions: smoothed along the edges of ``pixels`` (a guided filter with their luminance as
    guide), so the edit's outline follows the objects and shades there rather than a
    rectangle or a drawn ellipse. A box of more than ``BLOB_PIXELS`` is shaped scaled down."""
    import cv2

    height, width = pixels.shape[:2]
    work = pixels
    if height * width > BLOB_PIXELS:
        work = cv2.resize(pixels, scaled_size(width, height, BLOB_PIXELS), interpolation=cv2.INTER_AREA)
    h, w = work.shape[:2]
    # a row of round blobs along the box's longer side: a long box's ellipse would have long straight flanks
    side, longer = min(h, w) / 2, max(h, w)
    spacing = BLOB_SPACING * side
    count = max(1, int((longer - 2 * side) // spacing) + 1)
    reach = min(longer / 2, side * max(1.0, min(1.5, longer / (2 * side))))  # a lone blob is at most 3:2
    along = np.arange(longer, dtype=np.float32) + 0.5
    across = (np.arange(min(h, w), dtype=np.float32) + 0.5 - side) / side
    centres = longer / 2 + (np.arange(count, dtype=np.float32) - (count - 1) / 2) * spacing
    nearest = centres[np.argmin(np.abs(along[:, None] - centres[None, :]), axis=1)]
    offsets = (along - nearest) / (reach if count == 1 else side)  # signed, in blob radii
    angle = np.arctan2(across[None, :], offsets[:, None])
    wobble = 1 + 0.1 * np.sin(3 * angle + 1.0) + 0.06 * np.sin(5 * angle + 2.0)  # an outline with no straight flank
    radius = np.sqrt(offsets[:, None] ** 2 + across[None, :] ** 2) / wobble  # (longer, shorter)
    radius = np.ascontiguousarray(radius if h > w else radius.T)
    t = np.clip((1 - radius) / (1 - BLOB_CORE), 0, 1)
    blob = t * t * (3 - 2 * t)
    guide = np.ascontiguousarray(work[..., :3].astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32))
    shaped = _guided(guide / 255, blob, max(1, min(h, w) // 10), 2e-3)
    shaped = np.clip(shaped, 0, 1) * np.clip((1 - radius) / 0.2, 0, 1)  # nothing at the ellipse's rim or beyond
    if (h, w) != (height, width):
        shaped = cv2.resize(shaped, (width, height), interpolation=cv2.INTER_LINEAR)
    return shaped.astype(np.float32)


def removal_hole(image: np.ndarray, box: Box, editable: np.ndarray) -> np.ndarray:
    """The pixels of ``box`` that ``remove`` fills (a mask of the box, within ``editable``):
    the object GrabCut finds in the box, grown by ``HOLE_GROWTH`` pixels, or, where it finds
    none (a texture, a plain wall: under a tenth or over nine tenths of the box) or the box
    holds more than ``BLOB_PIXELS``, the middle of the box as :func:`region_blob` shapes
    it. Either way the hole keeps off the box's corners and edges, so the fill's outline is
    the object's or the photo's, never a rectangle."""
    import cv2

    height, width = image.shape[:2]
    x0, y0, x1, y1 = box
    blob = region_blob(image[box_slices(box)])
    inside = blob > 0.02
    found = np.zeros((y1 - y0, x1 - x0), bool)
    if min(x1 - x0, y1 - y0) >= 8 and (x1 - x0) * (y1 - y0) <= BLOB_PIXELS and (x1 - x0, y1 - y0) != (width, height):
        _, found = GrabCutSegmenter(min_share=0.0).local_mask(image, Target("remove", box=box))
    share = found.mean() if found.size else 0.0
    if 0.1 <= share <= 0.9:
        kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * HOLE_GROWTH + 1, 2 * HOLE_GROWTH + 1))
        hole = cv2.dilate(found.astype(np.uint8), kernel).astype(bool) & inside
    else:
        hole = blob > 0.3
    return hole & editable


def _texture(image: np.ndarray, box: Box, hole: np.ndarray, guard: np.ndarray) -> bool:
    """Give the filled ``hole`` of ``box`` the texture of a neighbouring patch: of the eight
    patches the box's size beside it (inside the canvas, clear of ``guard``: no target is
    copied), the one whose surroundings best match the hole's, blended in by Poisson
    (OpenCV's ``seamlessClone``: its gradients, the hole's surroundings at its outline);
    whether a pixel changed. Nothing when no patch fits or the box holds more than
    ``BLOB_PIXELS``."""

    height, width = image.shape[:2]
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    if w * h > BLOB_PIXELS or hole.sum() < 16:
        return False
    ring = 3
    around = grow(box, ring, width, height)
    if around != (x0 - ring, y0 - ring, x1 + ring, y1 + ring):
        return False
    frame = np.ones((h + 2 * ring, w + 2 * ring), bool)
    frame[ring:-ring, ring:-ring] = False
    mine = image[box_slices(around)][frame].astype(np.int32)
    best, best_score = None, None
    for dx, dy in ((-w, 0), (w, 0), (0, -h), (0, h), (-w, -h), (w, -h), (-w, h), (w, h)):
        cx0, cy0 = x0 + dx - ring, y0 + dy - ring
        if cx0 < 0 or cy0 < 0 or cx0 + w + 2 * ring > width or cy0 + h + 2 * ring > height:
            continue
        cand = (cx0, cy0, cx0 + w + 2 * ring, cy0 + h + 2 * ring)
        if guard[box_slices(cand)].any():
            continue
        score = int(np.abs(image[box_slices(cand)][frame].astype(np.int32) - mine).sum())
        if best_score is None or score < best_score:
            best, best_score = (cx0 + ring, cy0 + ring), score
    if best is None:
        return False
    window = grow(box, 2, width, height)
    dst = np.ascontiguousarray(image[box_slices(window)])
    src = dst.copy()
    src[within(box, window)] = image[best[1]:best[1] + h, best[0]:best[0] + w]
    mask = np.zeros(dst.shape[:2], np.uint8)
    mask[within(box, window)][hole] = 255
    cloned = _poisson(src, dst, mask)
    if cloned is None:
        return False
    region, fill = image[box_slices(box)], cloned[within(box, window)]
    changed = not np.array_equal(region[hole], fill[hole])
    region[hole] = fill[hole]
    return changed


def _poisson(src: np.ndarray, dst: np.ndarray, mask: np.ndarray) -> np.ndarray | None:
    """``src`` blended into ``dst`` where ``mask`` (255) by OpenCV's Poisson ``seamlessClone``
    (the same size; the mask kept off the border), or ``None`` when the mask is empty or a
    sliver under 3 pixels across (OpenCV's solver fails on one: a 1-pixel-high box did)."""
    import cv2

    mask = mask.copy()
    mask[[0, -1], :] = 0
    mask[:, [0, -1]] = 0
    if not mask.any():
        return None
    x, y, w, h = cv2.boundingRect(mask)
    if min(w, h) < 3:
        return None
    return cv2.seamlessClone(np.ascontiguousarray(src), np.ascontiguousarray(dst), mask, (x + w // 2, y + h // 2),
                             cv2.NORMAL_CLONE)


def _paste(image: np.ndarray, box: Box, editable: np.ndarray, patch: np.ndarray) -> bool:
    """Paste ``patch`` (the source box's pixels) into ``box``: the middle of the patch as
    :func:`region_blob` shapes it, blended in by Poisson (its own gradients, the
    destination's colours at its outline), then faded in; whether a pixel changed. A patch
    too small for Poisson blending, or over ``BLOB_PIXELS``, is only faded in, shaped alike."""
    height, width = image.shape[:2]
    shape = region_blob(patch)
    inside = (shape > 0.05) & editable
    if inside.sum() < 16 or patch.shape[0] * patch.shape[1] > BLOB_PIXELS:
        return _blend(image, box, editable, patch, shape)
    window = grow(box, 2, width, height)
    dst = np.ascontiguousarray(image[box_slices(window)])
    src = dst.copy()
    src[within(box, window)] = patch
    mask = np.zeros(dst.shape[:2], np.uint8)
    mask[within(box, window)][inside] = 255
    cloned = _poisson(src, dst, mask)
    if cloned is None:
        return False
    return _blend(image, box, editable, cloned[within(box, window)], np.minimum(1.0, 2 * shape))


def _blend(image: np.ndarray, box: Box, editable: np.ndarray, edited: np.ndarray,
           shape: np.ndarray | None = None) -> bool:
    """Write ``edited`` (the op's pixels over ``box``) into ``image`` where ``editable``,
    faded in by :func:`feather` from the editable region's edge and, for a shaped edit, by
    its ``shape`` (a share 0-1 per pixel of the box); whether a pixel changed.
    Band by band: each band's fade is read with ``FEATHER_PX + 2`` rows either side (all a
    fade of ``FEATHER_PX`` can see), so no whole-canvas array of shares is held."""
    height, width = image.shape[:2]
    rim = grow(box, 1, width, height)  # one pixel around the box: not editable, or the image's border
    local = np.zeros((rim[3] - rim[1], rim[2] - rim[0]), bool)
    inner = within(box, rim)
    local[inner] = editable
    region = image[box_slices(box)]
    reach, top, left = FEATHER_PX + 2, box[1] - rim[1], box[0] - rim[0]
    changed = False
    for r0, r1 in row_bands(*region.shape[:2], reach):
        a0, a1 = max(0, top + r0 - reach), min(local.shape[0], top + r1 + reach)  # rows of the rim read
        a = feather(local[a0:a1])[top + r0 - a0:top + r1 - a0, left:left + region.shape[1]]
        if shape is not None:
            a = a * shape[r0:r1]
        old, new, free = region[r0:r1], edited[r0:r1], editable[r0:r1]
        full, part = free & (a >= 1.0), free & (a > 0.0) & (a < 1.0)  # all of the edit; a share of it (the fade)
        mixed = old[part]
        if len(mixed):
            share = a[part][:, None]
            mixed = np.rint(share * new[part] + (1.0 - share) * mixed).astype(np.uint8)
        changed = changed or not (np.array_equal(new[full], old[full]) and np.array_equal(mixed, old[part]))
        np.copyto(old, new, where=full[:, :, None])
        old[part] = mixed
    return changed


def feather(editable: np.ndarray) -> np.ndarray:
    """How much of an edit each pixel takes (0-1): all of it from ``FEATHER_PX`` pixels inside
    the editable region's edge on (a box's edge, the protected region's), fading to nothing
    at the edge, so that no edit draws a rectangle or the targets' outline; the image's own
    border is no edge. Zero outside the region, so protected pixels stay exact. Computed in
    row bands read with ``FEATHER_PX + 2`` rows either side: a distance up to
    ``FEATHER_PX`` is found within them, and a longer one is all of the edit anyway."""
    import cv2

    height, width = editable.shape
    padded = np.pad(editable.astype(np.uint8), 1, constant_values=1)
    out = np.zeros((height, width), np.float32)
    reach = FEATHER_PX + 2
    for r0, r1 in row_bands(height, width, reach):
        a0, a1 = max(0, r0 - reach), min(height, r1 + reach)
        distance = cv2.distanceTransform(padded[a0:a1 + 2], cv2.DIST_L2, 3)[1:-1, 1:-1][r0 - a0:r1 - a0]
        out[r0:r1] = np.where(editable[r0:r1], np.clip(distance / FEATHER_PX, 0.0, 1.0), 0.0)
    return out


def frame_mask(mask: np.ndarray, ops: tuple) -> np.ndarray:
    """A mask of the source image moved with the canvas by the ops' pads and crops (where
    its pixels lie in the edited image)."""
    for op in ops:
        if op["op"] == "pad":
            mask = np.pad(mask, ((op["top"], op["bottom"]), (op["left"], op["right"])), constant_values=False)
        elif op["op"] == "crop":
            x0, y0, x1, y1 = op["box"]
            mask = mask[y0:y1, x0:x1]
    return np.ascontiguousarray(mask)


__all__ = ["SAM_MODELS", "BoxSegmenter", "GrabCutSegmenter", "OpenCVInpainter", "RePaintInpainter", "SamEncoder",
           "SamSegmenter", "StableDiffusionInpainter", "NaturalFacts", "build_sam", "box_mask", "frame_mask",
           "polygon_mask", "protected_region", "replay", "annotated_boxes", "record_protection", "feather"]
