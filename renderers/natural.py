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
"""

from __future__ import annotations

import abc
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vicogym.structures.natural import FEATHER_PX, Target
from vicogym.validation import is_int, is_number

#: GrabCut rounds; five is OpenCV's own example and converges on the demo images
GRABCUT_ROUNDS = 5
#: points are prompts, not an outline: the box GrabCut starts from reaches this far around them
POINT_REACH = 24


def polygon_mask(polygon: tuple[tuple[float, float], ...], height: int, width: int) -> np.ndarray:
    import cv2

    mask = np.zeros((height, width), np.uint8)
    cv2.fillPoly(mask, [np.round(np.asarray(polygon, dtype=float)).astype(np.int32)], 1)
    return mask.astype(bool)


def box_mask(box: tuple[int, int, int, int], height: int, width: int) -> np.ndarray:
    x0, y0, x1, y1 = box
    mask = np.zeros((height, width), bool)
    mask[max(0, y0):min(height, y1), max(0, x0):min(width, x1)] = True
    return mask


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


def convex_hull(mask: np.ndarray) -> np.ndarray:
    """The mask filled to the convex hull of its pixels."""
    import cv2

    ys, xs = np.nonzero(mask)
    hull = cv2.convexHull(np.stack([xs, ys], axis=1).astype(np.int32))
    out = np.zeros(mask.shape, np.uint8)
    cv2.fillConvexPoly(out, hull, 1)
    return out.astype(bool) | mask


@dataclass(frozen=True)
class BoxSegmenter:
    """Target masks as the targets' own boxes (polygons as drawn; points grown by
    ``POINT_REACH``): the most cautious protection, instant, no model."""

    name = "box"

    def mask(self, image: np.ndarray, target: Target) -> np.ndarray:
        height, width = image.shape[:2]
        if target.polygon is not None:
            return polygon_mask(target.polygon, height, width)
        return box_mask(prompt_box(target, width, height), height, width)


@dataclass(frozen=True)
class GrabCutSegmenter:
    """Target masks by OpenCV's GrabCut, started from each target's box."""

    min_share: float = 0.2
    hull: bool = True

    name = "grabcut"

    def __post_init__(self) -> None:
        if not is_number(self.min_share, 0, 1, finite=False):
            raise ValueError(f"expected min_share in [0, 1], got {self.min_share!r}")

    def mask(self, image: np.ndarray, target: Target) -> np.ndarray:
        height, width = image.shape[:2]
        if target.polygon is not None:
            return polygon_mask(target.polygon, height, width)
        x0, y0, x1, y1 = prompt_box(target, width, height)
        box = box_mask((x0, y0, x1, y1), height, width)
        if x1 - x0 < 3 or y1 - y0 < 3 or (x0, y0, x1, y1) == (0, 0, width, height):
            return box  # GrabCut needs background around the box to learn from
        import cv2

        cv2.setRNGSeed(0)
        labels = np.zeros((height, width), np.uint8)
        background, foreground = np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64)
        cv2.grabCut(np.ascontiguousarray(image[:, :, ::-1]), labels, (x0, y0, x1 - x0, y1 - y0), background, foreground,
                    GRABCUT_ROUNDS, cv2.GC_INIT_WITH_RECT)
        mask = (labels == cv2.GC_FGD) | (labels == cv2.GC_PR_FGD)
        if target.points is not None:
            for x, y in target.points:  # a point prompt is on the object by definition
                mask[min(height - 1, int(y)), min(width - 1, int(x))] = True
        if self.hull and mask.any():
            mask = convex_hull(mask) & box
        return _or_box(mask, box, self.min_share)


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
    computed once per source image and reused for every target and edit of it. A mask is
    kept inside the target's box grown by the scene margin's worth (``reach``), and one that
    keeps less than ``min_share`` of the box falls back to the box, as with GrabCut."""

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
        import hashlib

        key = hashlib.sha256(image.tobytes()).digest() + bytes(str(image.shape), "ascii")
        if key != self._embedded:
            self._predictor.set_image(np.ascontiguousarray(image), image_format="RGB")
            self._embedded = key
            self.embeddings += 1
        return self._predictor

    def mask(self, image: np.ndarray, target: Target) -> np.ndarray:
        height, width = image.shape[:2]
        if target.polygon is not None:
            return polygon_mask(target.polygon, height, width)
        predictor = self._embed(image)
        if target.points is not None:
            coords = np.asarray(target.points, dtype=np.float32)
            masks, _, _ = predictor.predict(point_coords=coords, point_labels=np.ones(len(coords), np.int64),
                                            multimask_output=False)
        else:
            masks, _, _ = predictor.predict(box=np.asarray(target.bounds(), dtype=np.float32), multimask_output=False)
        x0, y0, x1, y1 = prompt_box(target, width, height)
        r = self.reach
        mask = np.asarray(masks[0], bool) & box_mask((x0 - r, y0 - r, x1 + r, y1 + r), height, width)
        return _or_box(mask, box_mask((x0, y0, x1, y1), height, width), self.min_share)


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
    boxes = [box_mask(t.box, height, width) for t in record.targets if t.geometry == "box"]
    return np.logical_or.reduce(boxes) if boxes else np.zeros((height, width), bool)


def record_protection(record: Any, targets: np.ndarray, margin: int) -> np.ndarray:
    """A record's protected region: its targets' masks and its box targets' boxes, grown by
    ``margin`` pixels."""
    return protected_region([targets, annotated_boxes(record, *targets.shape)], margin)


def protected_region(masks: list[np.ndarray], margin: int) -> np.ndarray:
    """The union of ``masks`` grown by ``margin`` pixels (a disc), as a boolean image."""
    if not masks:
        raise ValueError("expected at least one target mask")
    if not is_int(margin, 0):
        raise ValueError(f"expected margin as a whole number of pixels >= 0, got {margin!r}")
    union = np.logical_or.reduce(masks)
    if margin == 0:
        return union
    import cv2

    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * margin + 1, 2 * margin + 1))
    return cv2.dilate(union.astype(np.uint8), kernel).astype(bool)


def _region(op: dict, shape: tuple[int, int]) -> np.ndarray:
    if "box" in op:
        return box_mask(tuple(op["box"]), *shape)
    return np.ones(shape, bool)


def _recolor(image: np.ndarray, op: dict, rng: np.random.Generator, editable: np.ndarray) -> np.ndarray:
    import cv2

    hsv = cv2.cvtColor(image, cv2.COLOR_RGB2HSV)
    hsv[:, :, 0] = ((hsv[:, :, 0].astype(int) + round(op["hue"] / 2)) % 180).astype(np.uint8)  # OpenCV hue: 0-179
    return cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)


def _desaturate(image: np.ndarray, op: dict, rng: np.random.Generator, editable: np.ndarray) -> np.ndarray:
    import cv2

    grey = cv2.cvtColor(cv2.cvtColor(image, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2RGB).astype(float)
    return np.clip(np.round(image * (1 - op["amount"]) + grey * op["amount"]), 0, 255).astype(np.uint8)


def _blur(image: np.ndarray, op: dict, rng: np.random.Generator, editable: np.ndarray) -> np.ndarray:
    import cv2

    return cv2.GaussianBlur(image, (0, 0), float(op["sigma"]))


def _noise(image: np.ndarray, op: dict, rng: np.random.Generator, editable: np.ndarray) -> np.ndarray:
    return np.clip(np.round(image + rng.normal(0.0, float(op["sigma"]), image.shape)), 0, 255).astype(np.uint8)


def _contrast(image: np.ndarray, op: dict, rng: np.random.Generator, editable: np.ndarray) -> np.ndarray:
    # about the mean of the pixels it changes, so the untouched ones set no anchor
    mean = image[editable].mean(axis=0) if editable.any() else image.reshape(-1, 3).mean(axis=0)
    return np.clip(np.round((image - mean) * op["factor"] + mean), 0, 255).astype(np.uint8)


def _brightness(image: np.ndarray, op: dict, rng: np.random.Generator, editable: np.ndarray) -> np.ndarray:
    return np.clip(image.astype(int) + int(round(op["delta"])), 0, 255).astype(np.uint8)


def _jpeg(image: np.ndarray, op: dict, rng: np.random.Generator, editable: np.ndarray) -> np.ndarray:
    import cv2

    ok, data = cv2.imencode(".jpg", image[:, :, ::-1], [cv2.IMWRITE_JPEG_QUALITY, int(op["quality"])])
    return cv2.imdecode(data, cv2.IMREAD_COLOR)[:, :, ::-1]


class OpenCVInpainter:
    """``remove`` by OpenCV's Telea inpainting (the default; no weights)."""

    name = "opencv"

    def inpaint(self, image: np.ndarray, hole: np.ndarray, seed: int) -> np.ndarray:
        import cv2

        return cv2.inpaint(np.ascontiguousarray(image[:, :, ::-1]), hole.astype(np.uint8), INPAINT_RADIUS,
                           cv2.INPAINT_TELEA)[:, :, ::-1]


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

    def inpaint(self, image: np.ndarray, hole: np.ndarray, seed: int) -> np.ndarray:
        import cv2
        import torch

        pipe = self.load()
        size = self._size(pipe)
        ys, xs = np.nonzero(hole)
        height, width = hole.shape
        side = min(max(height, width), max(size, 2 * int(max(ys.max() - ys.min(), xs.max() - xs.min()) + 1)))
        cx, cy = (int(xs.min() + xs.max()) // 2, int(ys.min() + ys.max()) // 2)
        x0, y0 = min(max(0, cx - side // 2), max(0, width - side)), min(max(0, cy - side // 2), max(0, height - side))
        window = (slice(y0, min(height, y0 + side)), slice(x0, min(width, x0 + side)))
        crop, crop_hole = image[window], hole[window]
        small = cv2.resize(crop, (size, size), interpolation=cv2.INTER_AREA)
        small_hole = cv2.resize(crop_hole.astype(np.uint8), (size, size), interpolation=cv2.INTER_NEAREST).astype(bool)
        generator = torch.Generator(device="cpu").manual_seed(int(seed) % 2**63)
        out = self._fill(pipe, small, small_hole, generator)
        filled = cv2.resize(np.clip(np.round(out * 255), 0, 255).astype(np.uint8), (crop.shape[1], crop.shape[0]),
                            interpolation=cv2.INTER_CUBIC)
        result = image.copy()
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
    ``inpainter`` (OpenCV's by default). The indices of ops that changed no pixel (a
    recolour of a grey region, a blur of a flat border) are appended to ``idle``."""
    inpainter = inpainter or OpenCVInpainter()
    idle = idle if idle is not None else []
    image, guard = np.array(source, dtype=np.uint8, copy=True), protected.copy()
    for k, op in enumerate(ops):
        name, shape = op["op"], image.shape[:2]
        if name == "pad":
            widths = ((op["top"], op["bottom"]), (op["left"], op["right"]))
            image = np.stack([np.pad(image[:, :, c], widths, constant_values=op["fill"][c]) for c in range(3)], axis=2)
            guard = np.pad(guard, widths, constant_values=False)
            continue
        if name == "crop":
            x0, y0, x1, y1 = op["box"]
            image, guard = image[y0:y1, x0:x1].copy(), guard[y0:y1, x0:x1].copy()
            continue
        if name == "remove":
            hole = _region(op, shape) & ~guard
            if not hole.any():
                idle.append(k)
                continue
            edited = inpainter.inpaint(image, hole, int(_stream(seed, k).integers(2**63)))
            editable = hole
        elif name == "paste":
            sx0, sy0, sx1, sy1 = op["source"]
            tx, ty = op["to"]
            edited = image.copy()
            edited[ty:ty + sy1 - sy0, tx:tx + sx1 - sx0] = image[sy0:sy1, sx0:sx1]
            editable = box_mask((tx, ty, tx + sx1 - sx0, ty + sy1 - sy0), *shape) & ~guard
        else:
            editable = _region(op, shape) & ~guard
            edited = FILTERS[name](image, op, _stream(seed, k), editable)
        before = image
        if name == "remove":  # the inpainter blends its hole in itself: a soft edge would bring the object back
            image = np.where(editable[:, :, None], edited, image)
        else:
            alpha = feather(editable)[:, :, None]
            image = np.where(editable[:, :, None], np.rint(alpha * edited + (1.0 - alpha) * image), image).astype(
                np.uint8)
        if np.array_equal(image, before):
            idle.append(k)
    return image, guard


def feather(editable: np.ndarray) -> np.ndarray:
    """How much of an edit each pixel takes (0-1): all of it from ``FEATHER_PX`` pixels inside
    the editable region's edge on (a box's edge, the protected region's), fading to nothing
    at the edge, so that no edit draws a rectangle or the targets' outline; the image's own
    border is no edge. Zero outside the region, so protected pixels stay exact."""
    import cv2

    padded = np.pad(editable.astype(np.uint8), 1, constant_values=1)
    distance = cv2.distanceTransform(padded, cv2.DIST_L2, 3)[1:-1, 1:-1]
    return np.where(editable, np.clip(distance / FEATHER_PX, 0.0, 1.0), 0.0).astype(np.float32)


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
