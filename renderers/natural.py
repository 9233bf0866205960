"""Natural-image arm, pixel side: target masks and the protected region.

A segmenter turns each :class:`~vicogym.structures.natural.Target` into a boolean mask of
the image. :class:`GrabCutSegmenter` (the default, OpenCV, no weights) runs GrabCut from
the target's box; a polygon is its own mask; points are grown to a box around them first.
GrabCut that keeps less than ``min_share`` of the box (it lost the object) falls back to
the whole box, so a target is never protected by less than its segmentation promised.
OpenCV's GrabCut draws its colour models from OpenCV's global random generator, which is
seeded before every call: the same image and target give the same mask.

:func:`protected_region` is the union of the target masks grown by ``margin`` pixels: the
pixels no edit may change.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vicogym.structures.natural import Target

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


@dataclass(frozen=True)
class GrabCutSegmenter:
    """Target masks by OpenCV's GrabCut, started from each target's box."""

    min_share: float = 0.2

    name = "grabcut"

    def __post_init__(self) -> None:
        if isinstance(self.min_share, bool) or not isinstance(self.min_share, (int, float)) or \
                not 0 <= self.min_share <= 1:
            raise ValueError(f"expected min_share in [0, 1], got {self.min_share!r}")

    def mask(self, image: np.ndarray, target: Target) -> np.ndarray:
        height, width = image.shape[:2]
        if target.polygon is not None:
            return polygon_mask(target.polygon, height, width)
        x0, y0, x1, y1 = target.bounds()
        if target.points is not None:
            x0, y0, x1, y1 = x0 - POINT_REACH, y0 - POINT_REACH, x1 + POINT_REACH, y1 + POINT_REACH
        x0, y0, x1, y1 = max(0, x0), max(0, y0), min(width, x1), min(height, y1)
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
        return mask if mask.sum() >= self.min_share * box.sum() else box


def protected_region(masks: list[np.ndarray], margin: int) -> np.ndarray:
    """The union of ``masks`` grown by ``margin`` pixels (a disc), as a boolean image."""
    if not masks:
        raise ValueError("expected at least one target mask")
    if isinstance(margin, bool) or not isinstance(margin, int) or margin < 0:
        raise ValueError(f"expected margin as a whole number of pixels >= 0, got {margin!r}")
    union = np.logical_or.reduce(masks)
    if margin == 0:
        return union
    import cv2

    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * margin + 1, 2 * margin + 1))
    return cv2.dilate(union.astype(np.uint8), kernel).astype(bool)


__all__ = ["GrabCutSegmenter", "box_mask", "polygon_mask", "protected_region"]
