"""Answerability checks of the natural-image arm: the proof that an edit left every
protected pixel of the source, bit for bit, in the image (so the record's answer stands),
that the untouched region does not stand out from its edited surroundings as a seam
(which would teach a model where the photo is unedited), that every op of an edit
changed some pixel a reader can see, and the same proof on a
stored row's image against the run's stored source. And, read from the rendered image,
what makes a question harder for a stand-in actor: :func:`difficulty_features` (how
little of the image the targets cover, how little they stand out from the edited
surroundings, how much the surroundings look like them, how cluttered they are),
:func:`difficulty` (one number in [0, 1]) and :func:`distractors` (wrong answers of the
answer's type).

Pure functions of the scene, the renderer's facts
(:class:`~vicogym.renderers.natural.NaturalFacts`) and pixels. Each reads what it needs of a
large image: the proof a pass over the protected pixels, the seam check the region's
boundary, the band check the region's box grown by its ring, in row bands, and the actor's
features an image of more than ``ACTOR_PIXELS`` scaled down to that many.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from vicogym.errors import InvalidEdit
from vicogym.structures.natural import FEATHER_PX, Scene, grow, mask_box, pixels_sha256, row_bands, scaled_size


def protected_changes(source: np.ndarray, protected: np.ndarray, image: np.ndarray, guard: np.ndarray) -> int | None:
    """How many protected pixels of ``source`` differ in ``image`` where ``guard`` (their
    place after pads and crops) says they are; ``None`` when the guard cut the region."""
    if protected.sum() != guard.sum():
        return None
    return int((source[protected] != image[guard]).any(axis=1).sum())


def protected_unchanged(source: np.ndarray, protected: np.ndarray, image: np.ndarray, guard: np.ndarray) -> bool:
    """The proof: the protected pixels of ``source`` are, bit for bit, those of ``image``
    where ``guard`` says they are."""
    return protected_changes(source, protected, image, guard) == 0


def check(scene: Scene, facts: Any, image: np.ndarray) -> None:
    """Every op changed some pixel (an edit a reader cannot see is no edit: ``no_change``);
    the protected region is the one the scene carries, and every protected pixel of the
    source is in ``image`` (``protected``); the untouched region draws no outline and leaves
    no band of the old colour (``seam``), and no change beyond a straight edge of it cuts
    what runs across that edge (``cut``, :func:`straight_cut`)."""
    if facts.idle:
        k = facts.idle[0]
        op = scene.ops[k]
        raise InvalidEdit("no_change", f"{op['op']} changes no pixel of the image (ops[{k}] of the scene: "
                          f"{json.dumps(dict(op))}); edit a region it would change", field="op")
    if not np.array_equal(facts.protected, scene.mask("protected")):
        raise InvalidEdit("protected", "segmenting again gave another protected region than the scene carries; "
                          "the segmenter is not deterministic on this machine")
    changed = protected_changes(facts.source, facts.protected, image, facts.guard)
    if changed != 0:
        where = "the protected region was cut" if changed is None else f"{changed} protected pixels changed"
        targets = ", ".join(sorted({t.label for t in scene.record.targets}))
        raise InvalidEdit("protected", f"{where}; the edit reached the targets ({targets})")
    outline = seam(facts.source, facts.protected, image, facts.guard)
    if outline > MAX_SEAM:
        raise InvalidEdit("seam", f"the untouched protected region stands out from its edited surroundings (its "
                          f"boundary contrasts {outline:.1f}/255 more than in the photo, over the {MAX_SEAM:g} a "
                          f"reader does not notice); give the op a box away from the targets, or make it weaker")
    tone = any(op.get("op") in TONE_OPS for op in scene.ops)  # content ops (remove, paste) change what is there
    shift = halo(facts.source, facts.protected, image, facts.guard) if tone else 0.0
    if shift > MAX_SEAM:
        raise InvalidEdit("seam", f"the surroundings of the untouched protected region moved {shift:.1f}/255 away "
                          f"from the photo (a band of the old colour stands around the targets, over the "
                          f"{MAX_SEAM:g} a reader does not notice); make the op weaker, or give it a box that "
                          f"keeps away from the targets")
    whole = any(op.get("op") in WHOLE_OPS and "box" not in op for op in scene.ops)  # a boxed op keeps off the edges
    cut, where = straight_cut(facts.source, facts.protected, image, facts.guard) if whole else (0.0, "")
    if cut > MAX_CUT:
        raise InvalidEdit("cut", f"the edit stops at a straight edge of the protected region ({where}) and changes "
                          f"what lies beyond it by {cut:.1f}/255 on average, so an object or a surface running "
                          f"across that edge is cut in two along a line, over the {MAX_CUT:g} a reader does not "
                          "notice; give the op a box away from the targets' boxes, or make it weaker")


#: ops that may change the whole image (no box): they stop only at the protected region, so
#: they are the ones that can cut along its straight edges (a boxed op fades out inside its box)
WHOLE_OPS = frozenset({"recolor", "desaturate", "blur", "noise", "contrast", "brightness", "jpeg"})
#: ops that change the tone of what they cover (not what is there): the ones that leave a
#: band of the old colour around the targets
TONE_OPS = frozenset({"brightness", "contrast", "recolor", "desaturate"})
#: how much more (0-255 luminance) the protected region's boundary may contrast with its
#: surroundings in the edited image than in the source before a reader sees the seam
MAX_SEAM = 10.0


#: a straight stretch of the protected region's edge at least this long (pixels) is a line a
#: reader sees cutting what runs across it (a box target's side, grown by the margin)
CUT_RUN = 32
#: how much (0-255, the largest channel, mean) an edit may change the strip beyond such a stretch
MAX_CUT = 4.0


def _straight_runs(edge: np.ndarray) -> list[tuple[int, int, int]]:
    """The runs of ``edge`` down each column at least ``CUT_RUN`` long: ``(column, first
    row, end row)``."""
    padded = np.zeros((edge.shape[0] + 2, edge.shape[1]), np.int8)
    padded[1:-1] = edge
    steps = np.diff(padded, axis=0)
    starts, ends = np.nonzero(steps.T == 1), np.nonzero(steps.T == -1)
    return [(int(c), int(r0), int(r1)) for c, r0, r1 in zip(starts[0], starts[1], ends[1]) if r1 - r0 >= CUT_RUN]


def straight_cut(source: np.ndarray, protected: np.ndarray, image: np.ndarray,
                 guard: np.ndarray) -> tuple[float, str]:
    """How much an edit changed the strip beyond the straightest cut it makes: for every
    horizontal or vertical stretch of the protected region's edge at least ``CUT_RUN``
    pixels long, the mean change (0-255, largest channel) of the editable pixels
    ``FEATHER_PX`` to ``2 * FEATHER_PX`` beyond it (past the fade), and where; the largest.
    The untouched region ends there in a line, so a change beyond it (a blur, noise, a
    tint) cuts whatever runs across the line, the cup's rim blurred above a box's top edge
    and sharp below it. Reads the region's box grown by the strip."""
    if not protected.any() or protected.sum() != guard.sum():
        return 0.0, ""
    dy, dx = _shift(protected, guard)
    h, w = protected.shape
    x0, y0, x1, y1 = grow(mask_box(protected), 2 * FEATHER_PX + 1, w, h)
    region = protected[y0:y1, x0:x1]
    worst, where = 0.0, ""
    for axis in (0, 1):  # 0: vertical stretches (left and right sides), 1: horizontal ones
        mask = region if axis == 0 else region.T
        for side in (-1, 1):  # the outside lies before (-1) or after (+1) the stretch
            inside = mask[:, 1:] & ~mask[:, :-1] if side == -1 else mask[:, :-1] & ~mask[:, 1:]
            offset = 1 if side == -1 else 0
            for column, r0, r1 in _straight_runs(inside):
                edge = column + offset  # the protected pixel's column (or row)
                near, far = edge + side * FEATHER_PX, edge + side * 2 * FEATHER_PX
                lo, hi = min(near, far), max(near, far) + 1
                lo, hi = max(0, lo), min(mask.shape[1], hi)
                if hi - lo < FEATHER_PX // 2:
                    continue
                if axis == 0:
                    ys, xs = slice(y0 + r0, y0 + r1), slice(x0 + lo, x0 + hi)
                else:
                    ys, xs = slice(y0 + lo, y0 + hi), slice(x0 + r0, x0 + r1)
                free = ~protected[ys, xs]
                iy0, ix0 = ys.start + dy, xs.start + dx
                if (iy0 < 0 or ix0 < 0 or iy0 + free.shape[0] > image.shape[0]
                        or ix0 + free.shape[1] > image.shape[1] or free.sum() < CUT_RUN):
                    continue  # pads and crops took it out of the picture
                after = image[iy0:iy0 + free.shape[0], ix0:ix0 + free.shape[1], :3].astype(np.int16)
                change = float(np.abs(after - source[ys, xs, :3]).max(axis=2)[free].mean())
                if change > worst:
                    at, along = (x0, y0) if axis == 0 else (y0, x0)
                    worst = change
                    where = f"{'xy'[axis]} = {at + edge} of the photo, from {along + r0} to {along + r1}"
    return worst, where


def _shift(protected: np.ndarray, guard: np.ndarray) -> tuple[int, int]:
    """How far pads and crops moved the protected region: its first pixel's place in
    ``guard`` less its place in ``protected`` (both non-empty; found without listing them)."""
    width, gwidth = protected.shape[1], guard.shape[1]
    first, gfirst = int(np.argmax(protected.reshape(-1))), int(np.argmax(guard.reshape(-1)))
    return gfirst // gwidth - first // width, gfirst % gwidth - first % width


def _luminance(rgb: np.ndarray) -> np.ndarray:
    return rgb[..., :3].astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)


def seam(source: np.ndarray, protected: np.ndarray, image: np.ndarray, guard: np.ndarray) -> float:
    """How much more the protected region's boundary contrasts in ``image`` than in
    ``source``: the mean luminance difference across the boundary (each pixel of the region
    against its outside neighbour, left, right, up and down), over the same pixel pairs in
    both (those pads and crops kept). A global recolour or brightness change that stops at
    the region draws its outline; 0 when the edit leaves the boundary as it was. Reads the
    boundary's pixels only."""
    if not protected.any() or protected.sum() != guard.sum():
        return 0.0
    dy, dx = _shift(protected, guard)  # pads and crops only move the region
    h, w = protected.shape
    before, after = [], []
    for oy, ox in ((0, 1), (1, 0)):
        a, b = protected[: h - oy, : w - ox], protected[oy:, ox:]
        ys, xs = np.nonzero(a != b)
        ys2, xs2 = ys + oy, xs + ox
        cy, cx, cy2, cx2 = ys + dy, xs + dx, ys2 + dy, xs2 + dx
        keep = ((cy >= 0) & (cy < image.shape[0]) & (cx >= 0) & (cx < image.shape[1]) & (cy2 >= 0)
                & (cy2 < image.shape[0]) & (cx2 >= 0) & (cx2 < image.shape[1]))
        before.append(np.abs(_luminance(source[ys, xs]) - _luminance(source[ys2, xs2]))[keep])
        after.append(np.abs(_luminance(image[cy[keep], cx[keep]]) - _luminance(image[cy2[keep], cx2[keep]])))
    before_all, after_all = np.concatenate(before), np.concatenate(after)
    if not len(before_all):
        return 0.0
    return float(after_all.mean() - before_all.mean())


def halo(source: np.ndarray, protected: np.ndarray, image: np.ndarray, guard: np.ndarray) -> float:
    """How far (0-255, the largest channel) the surroundings of the protected region moved
    from the photo where a reader would see a band: the local mean change (over
    ``2 * FEATHER_PX + 1`` pixels square, edited pixels only) on a ring of twice the edit's
    fade around the region, at its 90th percentile. The fade hides the region's outline, but a whole-image
    brightening, contrast or recolour still leaves a band of the old colour around the
    targets (a lighter rectangle around the camera), and where the targets fill nearly the
    whole photo the edit is a coloured strip at its border; noise, blur or JPEG move the
    local mean by nothing, and a small paste beside the targets moves a few of the ring's
    pixels. 0 when pads and crops cut the region. Reads only the region's box grown by the
    ring and the local mean's reach, in row bands (``vicogym.structures.natural.BAND_PIXELS``)
    read with that reach either side, so a large photo costs one pass in bounded memory."""
    import cv2

    if not protected.any() or protected.sum() != guard.sum():
        return 0.0
    dy, dx = _shift(protected, guard)  # pads and crops only move the region
    h, w = protected.shape
    y0, y1, x0, x1 = max(0, -dy), min(h, image.shape[0] - dy), max(0, -dx), min(w, image.shape[1] - dx)
    if y0 >= y1 or x0 >= x1:
        return 0.0
    half = FEATHER_PX  # the local mean's reach
    ring_px = 2 * FEATHER_PX  # the fade too: a strip thinner than it is all band
    # a ring pixel lies within 26 rows and columns of the region (the 3 x 3 chamfer distance
    # is at least 0.955 of the larger offset), and its local mean reads ``half`` more
    px0, py0, px1, py1 = mask_box(protected)
    reach = ring_px + 2 + half + 1
    wx0, wy0, wx1, wy1 = max(0, px0 - reach), max(0, py0 - reach), min(w, px1 + reach), min(h, py1 + reach)
    size = (2 * half + 1,) * 2
    rings = []
    for r0, r1 in row_bands(wy1 - wy0, wx1 - wx0, reach):
        a0, a1 = max(wy0, wy0 + r0 - reach), min(wy1, wy0 + r1 + reach)  # source rows read for this band
        rows = slice(a0, a1)
        band = protected[rows, wx0:wx1]
        change = np.zeros((a1 - a0, wx1 - wx0, 3), np.float32)
        valid = np.zeros((a1 - a0, wx1 - wx0), np.float32)
        cy0, cy1, cx0, cx1 = max(a0, y0), min(a1, y1), max(wx0, x0), min(wx1, x1)  # within the canvas
        if cy0 < cy1 and cx0 < cx1:
            inside = (slice(cy0 - a0, cy1 - a0), slice(cx0 - wx0, cx1 - wx0))
            change[inside] = (image[cy0 + dy:cy1 + dy, cx0 + dx:cx1 + dx, :3].astype(np.float32)
                              - source[cy0:cy1, cx0:cx1, :3].astype(np.float32))
            valid[inside] = 1.0
        valid[band] = 0.0
        weight = cv2.boxFilter(valid, -1, size, normalize=False)
        change *= valid[..., None]
        local = cv2.boxFilter(change, -1, size, normalize=False)
        local /= np.maximum(weight, 1.0)[..., None]
        distance = cv2.distanceTransform((~band).astype(np.uint8), cv2.DIST_L2, 3)
        own = slice(wy0 + r0 - a0, wy0 + r1 - a0)  # the band's own rows
        ring = (distance[own] <= ring_px) & (valid[own] > 0)
        rings.append(np.abs(local[own][ring]))
    ring_values = np.concatenate(rings)
    if not len(ring_values):
        return 0.0
    return float(np.percentile(ring_values, 90, axis=0).max())


def stored_pixels_problem(scene: Scene, source: np.ndarray, image: np.ndarray, mask: np.ndarray,
                          guard: np.ndarray) -> str | None:
    """Why a stored row's image does not prove its answer, or ``None``: the stored source's
    pixels are the scene's, the stored mask is the scene's protected mask, and under it
    (moved by the edits' pads and crops, ``guard``) the image holds the source's pixels."""
    protected = scene.mask("protected")
    if pixels_sha256(source) != scene.source_sha256:
        return "the stored source image's pixels are not the ones the structure names"
    if not np.array_equal(mask, protected):
        return "the stored mask differs from the row's protected mask"
    if image.shape[:2] != guard.shape:
        return (f"the image is {image.shape[1]} x {image.shape[0]}, the edits make a {guard.shape[1]} x "
                f"{guard.shape[0]} canvas")
    changed = protected_changes(source, protected, image, guard)
    if changed is None:
        return "the edits cut the protected region out of the image"
    if changed:
        return f"{changed} protected pixels differ from the stored source image"
    return None


# -- what the stand-in actor reads ----------------------------------------------------------------
#: a ring this many pixels wide around the targets is their "surroundings" for contrast
RING = 24
#: CIE76 colour distance at which a target stands out completely
STANDS_OUT = 40.0
COLOURS = ("red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white", "gray")
WEIGHTS = {"small": 0.3, "low_contrast": 0.3, "distractor_similarity": 0.25, "clutter": 0.15}


def _lab(pixels: np.ndarray) -> np.ndarray:
    """CIE Lab (L 0-100, a and b about 0) of pixels of OpenCV's 8-bit Lab image."""
    lab = pixels.astype(float)
    lab[..., 0] *= 100 / 255  # OpenCV's 8-bit Lab: L in 0-255, a and b offset by 128
    lab[..., 1:] -= 128
    return lab


def _histogram(bins: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The 8 x 8 histogram of ``a`` and ``b`` (bins of 32 on [-128, 128], as
    ``np.histogram2d`` counts them) over ``mask``, as shares; ``bins`` holds each pixel's
    bin (``8 * (a // 32) + b // 32`` of the 8-bit Lab image)."""
    hist = np.bincount(bins[mask], minlength=64).reshape(8, 8).astype(np.float64)
    total = hist.sum()
    return hist / total if total else hist


#: the most pixels the stand-in actor reads: a larger image is read scaled down to this many
#: (as a vision-language model reads a bounded number of pixels, whatever the photo's size)
ACTOR_PIXELS = 2048 * 2048


def actor_view(image: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The image and target mask the stand-in actor reads: as they are up to
    ``ACTOR_PIXELS``, else scaled down to that many pixels (area-averaged), a scaled pixel
    a target pixel when most of it was one (any of it, for targets that would vanish)."""
    import cv2

    height, width = targets.shape
    if height * width <= ACTOR_PIXELS:
        return image, targets
    size = scaled_size(width, height, ACTOR_PIXELS)
    small = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    cover = cv2.resize(targets.astype(np.uint8) * 255, size, interpolation=cv2.INTER_AREA)
    mask = cover >= 128
    if not mask.any():
        mask = cover > 0
        if not mask.any():
            mask.reshape(-1)[int(np.argmax(cover))] = True
    return small, mask


def difficulty_features(image: np.ndarray, targets: np.ndarray) -> dict[str, float]:
    """Features of an image whose answer-relevant pixels are ``targets`` (a boolean mask of
    the image): ``area`` (the targets' share of the image), ``contrast`` (CIE76 distance of
    the targets' mean colour from a ring around them), ``distractor_similarity`` (how much
    the rest of the image's colours overlap the targets', Bhattacharyya coefficient) and
    ``clutter`` (edge density outside the targets). Read from :func:`actor_view` (images of
    more than ``ACTOR_PIXELS`` scaled down)."""
    import cv2

    if targets.shape != image.shape[:2] or not targets.any():
        raise ValueError("expected a non-empty target mask of the image's size")
    image, targets = actor_view(image, targets)
    lab = cv2.cvtColor(image, cv2.COLOR_RGB2LAB)  # 8 bits a channel; in CIE units only where read
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * RING + 1, 2 * RING + 1))
    x0, y0, x1, y1 = grow(mask_box(targets), RING, targets.shape[1], targets.shape[0])  # all the ring can reach
    ring = np.zeros(targets.shape, bool)
    ring[y0:y1, x0:x1] = cv2.dilate(targets[y0:y1, x0:x1].astype(np.uint8), kernel).astype(bool)
    ring &= ~targets
    rest = ~targets
    contrast = (float(np.linalg.norm(_lab(lab[targets]).mean(axis=0) - _lab(lab[ring]).mean(axis=0)))
                if ring.any() else STANDS_OUT)
    bins = (lab[:, :, 1] >> 5) * 8 + (lab[:, :, 2] >> 5)
    similarity = float(np.sqrt(_histogram(bins, targets) * _histogram(bins, rest)).sum()) if rest.any() else 0.0
    edges = cv2.Canny(cv2.cvtColor(image, cv2.COLOR_RGB2GRAY), 100, 200) > 0
    clutter = float(edges[rest].mean()) if rest.any() else 0.0
    return {"area": float(targets.mean()), "contrast": contrast, "distractor_similarity": similarity,
            "clutter": clutter}


def difficulty(features: dict[str, float]) -> float:
    """0 (easy) to 1 (hard): small targets, low contrast, look-alike surroundings, clutter."""
    small = 1.0 - min(1.0, np.sqrt(features["area"] / 0.25))  # a quarter of the image is plainly visible
    low_contrast = 1.0 - min(1.0, features["contrast"] / STANDS_OUT)
    clutter = min(1.0, features["clutter"] / 0.2)
    score = (WEIGHTS["small"] * small + WEIGHTS["low_contrast"] * low_contrast
             + WEIGHTS["distractor_similarity"] * features["distractor_similarity"] + WEIGHTS["clutter"] * clutter)
    return float(min(1.0, max(0.0, score)))


def distractors(answer: str, answer_type: str, known: Any = ()) -> list[str]:
    """Plausible wrong answers of ``answer``'s type: the other of yes/no; counts one or two
    away; another colour for a colour; otherwise other answers of the same source."""
    if answer_type == "yes/no":
        return ["no" if answer == "yes" else "yes"]
    if answer_type == "number":
        n = int(answer)
        return [str(v) for v in (n + 1, n - 1, n + 2, n - 2) if v >= 0]
    if answer in COLOURS:
        return [c for c in COLOURS if c != answer]
    others = sorted(
        {str(a) for a in known if str(a) != answer and str(a) not in ("yes", "no") and not str(a).isdigit()}
    )
    return others or ["something else"]
