"""Natural-image masks: GrabCut from boxes and points, polygons, the protected region."""

import cv2
import numpy as np
import pytest
from helpers.tiny_models import tiny_ddpm, tiny_sam_checkpoint, tiny_stable_diffusion

from vicogym.renderers.natural import GrabCutSegmenter, box_mask, polygon_mask, protected_region
from vicogym.structures.natural import Target


def _disc_image():
    rng = np.random.default_rng(0)
    image = rng.integers(90, 140, (120, 160, 3)).astype(np.uint8)
    cv2.circle(image, (80, 60), 25, (220, 30, 30), -1)
    disc = np.zeros((120, 160), np.uint8)
    cv2.circle(disc, (80, 60), 25, 1, -1)
    return image, disc.astype(bool)


@pytest.mark.parametrize("target", [Target("disc", box=(50, 30, 111, 91)), Target("disc", points=((80.0, 60.0),))],
                         ids=["box", "points"])
def test_grabcut_finds_the_object_in_its_box_and_repeats_itself(target):
    image, disc = _disc_image()
    mask = GrabCutSegmenter().mask(image, target)
    iou = (mask & disc).sum() / (mask | disc).sum()
    assert iou > 0.85, iou
    assert np.array_equal(mask, GrabCutSegmenter().mask(image, target))  # OpenCV's generator is seeded


def test_grabcut_that_loses_the_object_protects_the_whole_box():
    image, _ = _disc_image()
    target = Target("disc", box=(50, 30, 111, 91))
    assert np.array_equal(GrabCutSegmenter(min_share=1.0).mask(image, target), box_mask(target.box, 120, 160))
    flat = np.full((120, 160, 3), 100, np.uint8)  # nothing to find: the box stands
    assert GrabCutSegmenter().mask(flat, target).sum() >= 0.2 * 61 * 61


def test_polygons_are_their_own_masks_and_margins_grow_the_union():
    square = Target("tile", polygon=((10, 10), (29, 10), (29, 29), (10, 29)))
    mask = GrabCutSegmenter().mask(np.zeros((50, 60, 3), np.uint8), square)
    assert mask.sum() == 400 and mask[10:30, 10:30].all()
    other = polygon_mask(((40, 40), (44, 40), (44, 44), (40, 44)), 50, 60)
    region = protected_region([mask, other], 3)
    assert region[10:30, 10:30].all() and region[40:45, 40:45].all()
    assert region[7, 20] and not region[6, 20] and region[20, 32] and not region[20, 33]  # a disc of radius 3
    assert np.array_equal(protected_region([mask], 0), mask)
    with pytest.raises(ValueError, match="expected margin as a whole number of pixels >= 0, got -1"):
        protected_region([mask], -1)
    with pytest.raises(ValueError, match="expected at least one target mask"):
        protected_region([], 2)


def _astronaut_flag():
    from vicogym.sources.natural import load_image

    source = load_image("skimage:astronaut")
    protected = protected_region([box_mask((0, 0, 100, 512), 512, 512)], 8)
    return source, protected


EVERY_OP = [{"op": "remove", "box": [420, 20, 500, 120]}, {"op": "recolor", "hue": 60},
            {"op": "desaturate", "amount": 0.7}, {"op": "blur", "sigma": 3}, {"op": "noise", "sigma": 20},
            {"op": "contrast", "factor": 1.4}, {"op": "brightness", "delta": -40}, {"op": "jpeg", "quality": 15},
            {"op": "paste", "source": [400, 300, 480, 380], "to": [200, 20]},
            {"op": "pad", "top": 12, "bottom": 0, "left": 30, "right": 4, "fill": [255, 0, 0]},
            {"op": "crop", "box": [0, 0, 400, 512]}]


@pytest.mark.parametrize("op", EVERY_OP, ids=[op["op"] for op in EVERY_OP])
def test_every_op_changes_the_complement_and_never_a_protected_pixel(op):
    from vicogym.checks.natural import protected_unchanged
    from vicogym.renderers.natural import replay

    source, protected = _astronaut_flag()
    image, guard = replay(source, protected, (op,), seed=3)
    assert protected_unchanged(source, protected, image, guard)
    if op["op"] in ("pad", "crop"):
        assert image.shape != source.shape
    else:
        local = op["op"] in ("remove", "paste")  # a shaped part of a box, not the whole complement
        assert (image != source).any(axis=2)[~protected].mean() > (0.01 if local else 0.3)
    again, _ = replay(source, protected, (op,), seed=3)
    assert np.array_equal(image, again)  # same seed, same bytes


def test_a_sequence_keeps_the_proof_and_a_tampered_pixel_breaks_it():
    from vicogym.checks.natural import protected_unchanged
    from vicogym.renderers.natural import replay

    source, protected = _astronaut_flag()
    image, guard = replay(source, protected, (*EVERY_OP[:-1], {"op": "crop", "box": [10, 0, 400, 524]}), seed=5)
    assert image.shape == (524, 390, 3) and guard.sum() == protected.sum()
    assert protected_unchanged(source, protected, image, guard)
    ys, xs = np.nonzero(guard)
    image[ys[0], xs[0], 0] ^= 1
    assert not protected_unchanged(source, protected, image, guard)
    cut, cut_guard = replay(source, protected, ({"op": "crop", "box": [10, 0, 400, 512]},), seed=5)
    assert not protected_unchanged(source, protected, cut, cut_guard)  # a crop through the flag fails the proof
    noisy_a, _ = replay(source, protected, ({"op": "noise", "sigma": 20},), seed=1)
    noisy_b, _ = replay(source, protected, ({"op": "noise", "sigma": 20},), seed=2)
    assert not np.array_equal(noisy_a, noisy_b)



def _tiny_sam_checkpoint(tmp_path):
    return tiny_sam_checkpoint(tmp_path)


def test_sam_loads_a_checkpoint_through_the_real_path_and_embeds_each_image_once(tmp_path, monkeypatch):
    from vicogym.renderers.natural import SAM_CHECKPOINT_ENV, SamSegmenter

    encoder, path = _tiny_sam_checkpoint(tmp_path)
    monkeypatch.setenv(SAM_CHECKPOINT_ENV, str(path))
    segmenter = SamSegmenter(model=encoder)  # the checkpoint comes from the environment variable
    image, _ = _disc_image()
    targets = [Target("disc", box=(50, 30, 111, 91)), Target("disc", points=((80.0, 60.0),)),
               Target("tile", polygon=((10, 10), (29, 10), (29, 29), (10, 29)))]
    masks = [segmenter.mask(image, t) for t in targets]
    assert segmenter.embeddings == 1  # three targets, one embedding
    for target, mask, reach in zip(targets[:2], masks, (8, 8 + 24)):
        x0, y0, x1, y1 = target.bounds()
        near = box_mask((x0 - reach, y0 - reach, x1 + reach, y1 + reach), 120, 160)
        assert mask.shape == (120, 160) and mask.any()
        assert not (mask & ~near).any()  # kept near its prompt, whatever the random weights say
    assert masks[2].sum() == 400
    again = SamSegmenter(str(path), model=encoder)
    assert np.array_equal(again.mask(image, targets[0]), masks[0])  # the same weights, the same mask
    segmenter.mask(image[::-1].copy(), targets[0])
    assert segmenter.embeddings == 2


def test_sam_checkpoint_problems_are_named(tmp_path, monkeypatch):
    from vicogym.renderers.natural import SAM_CHECKPOINT_ENV, SamEncoder, SamSegmenter, build_sam

    monkeypatch.delenv(SAM_CHECKPOINT_ENV, raising=False)
    with pytest.raises(ValueError, match="the SAM segmenter needs a checkpoint"):
        SamSegmenter()
    with pytest.raises(ValueError, match="expected a SAM model in"):
        SamSegmenter("x.pth", model="vit_xl")
    encoder, path = _tiny_sam_checkpoint(tmp_path)
    with pytest.raises(FileNotFoundError, match="no SAM checkpoint at"):
        build_sam(encoder, str(tmp_path / "missing.pth"))
    other = SamEncoder(embed_dim=16, depth=1, num_heads=1, global_attn_indexes=(0,), image_size=256)
    with pytest.raises(ValueError, match="is not a SAM checkpoint of the"):
        build_sam(other, str(path))


def test_repaint_inpaints_only_the_hole_from_a_tiny_local_model(tmp_path):
    from vicogym.checks.natural import protected_unchanged
    from vicogym.renderers.natural import RePaintInpainter, replay

    tiny_ddpm(tmp_path)
    inpainter = RePaintInpainter(str(tmp_path / "ddpm"), steps=4, jump_length=2, jump_n_sample=1)
    source, protected = _astronaut_flag()
    op = {"op": "remove", "box": [420, 20, 500, 120]}
    image, guard = replay(source, protected, (op,), seed=4, inpainter=inpainter)
    hole = box_mask((420, 20, 500, 120), 512, 512)
    changed = (image != source).any(axis=2)
    assert changed[hole].mean() > 0.25 and not changed[~hole].any()  # what the box holds, and nothing else
    assert protected_unchanged(source, protected, image, guard)
    again, _ = replay(source, protected, (op,), seed=4, inpainter=RePaintInpainter(str(tmp_path / "ddpm"), steps=4,
                                                                                    jump_length=2, jump_n_sample=1))
    assert np.array_equal(image, again)  # loaded again from the folder, seeded: the same bytes
    with pytest.raises(FileNotFoundError, match="expected a diffusers model folder"):
        RePaintInpainter(str(tmp_path / "nothing")).inpaint(source, hole, 0)


def test_stable_diffusion_inpaints_only_the_hole_from_a_tiny_local_pipeline(tmp_path):
    from vicogym.checks.natural import protected_unchanged
    from vicogym.renderers.natural import StableDiffusionInpainter, replay

    model = tiny_stable_diffusion(tmp_path)
    source, protected = _astronaut_flag()
    op = {"op": "remove", "box": [420, 20, 500, 120]}
    image, guard = replay(source, protected, (op,), seed=4, inpainter=StableDiffusionInpainter(str(model), steps=3))
    hole = box_mask((420, 20, 500, 120), 512, 512)
    changed = (image != source).any(axis=2)
    assert changed[hole].mean() > 0.25 and not changed[~hole].any()
    assert protected_unchanged(source, protected, image, guard)
    again, _ = replay(source, protected, (op,), seed=4, inpainter=StableDiffusionInpainter(str(model), steps=3))
    other, _ = replay(source, protected, (op,), seed=5, inpainter=StableDiffusionInpainter(str(model), steps=3))
    assert np.array_equal(image, again) and not np.array_equal(image, other)  # seeded from the env's stream
    with pytest.raises(FileNotFoundError, match="expected a diffusers model folder"):
        StableDiffusionInpainter(str(tmp_path / "nothing")).inpaint(source, hole, 0)


# -- bounded work: windows, working sizes, row bands ---------------------------------------------
def test_the_row_bands_give_the_bytes_the_whole_canvas_would(monkeypatch):
    """Each op's arithmetic (the fade, noise's draws, contrast's mean, the blend) runs in row
    bands of at most BAND_PIXELS; any band size gives the same bytes, idle ops alike."""
    import vicogym.renderers.natural as renderer
    import vicogym.structures.natural as structures

    source, protected = _astronaut_flag()
    ops = (*EVERY_OP[:-1], {"op": "noise", "sigma": 9, "box": [300, 200, 500, 400]},
           {"op": "contrast", "factor": 0.7, "box": [120, 0, 400, 524]}, {"op": "crop", "box": [10, 0, 400, 524]})
    box = np.zeros((60, 80), bool)
    box[10:50, 20:70] = True
    box[30:35, 40:45] = False
    whole_idle = []
    whole, whole_guard = renderer.replay(source, protected, ops, seed=7, idle=whole_idle)
    fade = renderer.feather(box)
    for band in (1, 97, 5000):
        monkeypatch.setattr(structures, "BAND_PIXELS", band)
        banded_idle = []
        image, guard = renderer.replay(source, protected, ops, seed=7, idle=banded_idle)
        assert np.array_equal(image, whole) and np.array_equal(guard, whole_guard) and banded_idle == whole_idle
        assert np.array_equal(renderer.feather(box), fade)


def test_telea_reads_the_holes_window_and_fills_it_as_the_whole_image_would():
    from vicogym.renderers.natural import INPAINT_RADIUS, OpenCVInpainter

    rng = np.random.default_rng(3)
    image = cv2.GaussianBlur(rng.integers(0, 256, (200, 300, 3)).astype(np.uint8), (0, 0), 2)
    for _ in range(20):
        hole = np.zeros((200, 300), np.uint8)
        x, y = int(rng.integers(0, 280)), int(rng.integers(0, 180))
        hole[y:y + int(rng.integers(2, 40)), x:x + int(rng.integers(2, 60))] = 1
        hole[rng.integers(0, 200, 5), rng.integers(0, 300, 5)] = 1  # stray pixels: a wide, sparse box
        whole = cv2.inpaint(image, hole, INPAINT_RADIUS, cv2.INPAINT_TELEA)
        assert np.array_equal(OpenCVInpainter().inpaint(image, hole.astype(bool), 0), whole)


def test_grabcut_and_telea_read_at_most_their_working_size(monkeypatch):
    """On an image larger than their working sizes, GrabCut reads the target's window scaled
    down to GRABCUT_PIXELS and Telea the hole's window scaled down to INPAINT_PIXELS; the
    mask stays in the box and holds the point prompts, and only the hole is filled."""
    import vicogym.renderers.natural as renderer
    from vicogym.renderers.natural import GRABCUT_PIXELS, INPAINT_PIXELS, GrabCutSegmenter, replay

    seen = []
    real_grabcut, real_inpaint = cv2.grabCut, cv2.inpaint
    monkeypatch.setattr(cv2, "grabCut", lambda image, *a: (seen.append(("grabcut", image.shape)),
                                                           real_grabcut(image, *a))[1])
    monkeypatch.setattr(cv2, "inpaint", lambda image, *a: (seen.append(("inpaint", image.shape)),
                                                           real_inpaint(image, *a))[1])
    image = np.full((900, 3000, 3), 60, np.uint8)
    cv2.ellipse(image, (1500, 450), (1300, 380), 0, 0, 360, (220, 40, 40), -1)
    wide = Target("blob", box=(150, 40, 2850, 860))
    mask = GrabCutSegmenter().mask(image, wide)
    assert mask.shape == (900, 3000) and not mask[:, :150].any() and not mask[:40].any()
    assert mask[450, 1500] and mask.sum() > 0.6 * 2700 * 820
    pointed = Target("blob", points=((1500.0, 450.0), (2790.5, 452.0)))
    mask = GrabCutSegmenter(hull=False).mask(image, pointed)
    assert mask[450, 1500] and mask[452, 2790]
    protected = renderer.box_mask((1200, 300, 1800, 600), 900, 3000)
    edited, guard = replay(image, protected, ({"op": "remove", "box": [0, 0, 1100, 900]},), seed=1)
    assert (edited[:, 1100:] == image[:, 1100:]).all() and (edited[:, :1100] != image[:, :1100]).any()
    assert seen and all(shape[0] * shape[1] <= (GRABCUT_PIXELS if kind == "grabcut" else INPAINT_PIXELS)
                        for kind, shape in seen), seen
    assert {kind for kind, _ in seen} == {"grabcut", "inpaint"}


def test_sam_embeds_a_large_image_at_its_working_size(tmp_path, monkeypatch):
    """An image of more than SAM_PIXELS is embedded scaled down (one embedding still), its
    prompts scaled with it; masks come back at the image's size, near their prompts."""
    import vicogym.renderers.natural as renderer
    from vicogym.renderers.natural import SamSegmenter

    encoder, path = _tiny_sam_checkpoint(tmp_path)
    monkeypatch.setattr(renderer, "SAM_PIXELS", 4000)
    segmenter = SamSegmenter(str(path), model=encoder)
    shapes = []
    segmenter.load()
    real = segmenter._predictor.set_image
    monkeypatch.setattr(segmenter._predictor, "set_image", lambda image, **kw: (shapes.append(image.shape),
                                                                                 real(image, **kw))[1])
    image, _ = _disc_image()
    targets = [Target("disc", box=(50, 30, 111, 91)), Target("disc", points=((80.0, 60.0), (100.5, 70.5)))]
    masks = [segmenter.mask(image, t) for t in targets]
    assert segmenter.embeddings == 1 and shapes and all(h * w <= 4000 for h, w, _ in shapes)
    for target, mask, reach in zip(targets, masks, (8, 8 + 24)):
        x0, y0, x1, y1 = target.bounds()
        assert mask.shape == (120, 160) and mask.any()
        assert not (mask & ~box_mask((x0 - reach, y0 - reach, x1 + reach, y1 + reach), 120, 160)).any()
    assert masks[1][60, 80] and masks[1][70, 100]  # a point prompt is on its object
