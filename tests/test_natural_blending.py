"""Natural-image edits blend into the photo: measured on the rendered rows themselves.

For random accepted edits of every demo record, the change between the photo and the
edited image (aligned by the edits' pads and crops) may draw no long straight
horizontal or vertical step (a pasted rectangle, a boxed noise or brightness patch, an
object cut at the straight edge of a protected box), and what ``paste`` and ``remove``
put in may not step in brightness across its outline (a hard-edged patch, a smear)."""

import cv2
import gymnasium as gym
import numpy as np
import pytest

from vicogym.editors.natural import sample_op
from vicogym.structures.natural import frame_of

#: a step this long (pixels) in one row or column of the change is a straight edge a reader sees
STEP_LENGTH = 40
#: how much the smoothed change must rise across 2 pixels to count as a step (0-255)
STEP_RISE = 3.0
#: a step where the photo itself has a straight edge of this strength is the photo's (a pole), not the edit's
OWN_EDGE = 8.0
#: how many accepted edits are measured
ROWS = 48
#: box targets protected by their boxes: the straightest protected edges, and no GrabCut to wait for
SEGMENTER = "box"


def _luminance(rgb):
    return rgb.astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)


def _runs(mask):
    """The longest run of True in each column of ``mask`` with its start: (length, start) arrays."""
    best = np.zeros(mask.shape[1], int)
    start = np.zeros(mask.shape[1], int)
    current = np.zeros(mask.shape[1], int)
    for y in range(mask.shape[0]):
        current = np.where(mask[y], current + 1, 0)
        longer = current > best
        best = np.where(longer, current, best)
        start = np.where(longer, y - current + 1, start)
    return best, start


def straight_steps(source, image, frame):
    """The straight horizontal and vertical steps of the change from ``source`` to ``image``
    (``frame``: where the source lies in the image): ``(axis, position, length)`` for each
    column (or row) whose smoothed change rises by ``STEP_RISE`` across 2 pixels, in the same
    direction, along ``STEP_LENGTH`` pixels or more where the photo has no straight edge of
    its own."""
    h, w = source.shape[:2]
    y0, x0 = max(0, -frame.dy), max(0, -frame.dx)
    y1, x1 = min(h, image.shape[0] - frame.dy), min(w, image.shape[1] - frame.dx)
    before = source[y0:y1, x0:x1]
    after = image[y0 + frame.dy:y1 + frame.dy, x0 + frame.dx:x1 + frame.dx]
    change = np.abs(after.astype(np.float32) - before.astype(np.float32)).max(axis=2)
    photo = _luminance(before)
    found = []
    for axis in (1, 0):  # 1: steps across x (vertical lines), 0: across y
        c, p = (change, photo) if axis == 1 else (change.T, photo.T)
        c = cv2.GaussianBlur(np.ascontiguousarray(c), (0, 0), sigmaX=3.0, sigmaY=6.0)  # along the line: noise averages
        rise = c[:, 2:] - c[:, :-2]
        p = cv2.GaussianBlur(np.ascontiguousarray(p), (0, 0), 1.0)
        slope = p[:, 2:] - p[:, :-2]  # the photo's own rise, signed: texture averages out along a line, an edge not
        for sign in (1, -1):
            v = sign * rise
            ridge = np.zeros(v.shape, bool)  # where the step is steepest across the line: its position
            ridge[:, 1:-1] = (v[:, 1:-1] >= v[:, :-2]) & (v[:, 1:-1] > v[:, 2:])
            step = cv2.dilate((ridge & (v >= STEP_RISE)).astype(np.uint8), np.ones((1, 3), np.uint8)).astype(bool)
            length, first = _runs(step)
            for position in np.nonzero(length >= STEP_LENGTH)[0]:
                rows = slice(first[position], first[position] + length[position])
                near = slope[rows, max(0, position - 10):position + 11].mean(axis=0)
                if np.abs(near).max() >= OWN_EDGE:  # the photo has a straight edge there (a pole, a shelf)
                    continue
                found.append(("x" if axis == 1 else "y", int(position) + 1, int(length[position])))
    return found


def outline_jump(source, image, frame):
    """How much more the edited image steps across the outline of what changed than the
    photo does there: the mean luminance difference between each pixel on the changed
    region's edge and its unchanged neighbour, edited image less photo (0-255)."""
    h, w = source.shape[:2]
    y0, x0 = max(0, -frame.dy), max(0, -frame.dx)
    y1, x1 = min(h, image.shape[0] - frame.dy), min(w, image.shape[1] - frame.dx)
    before = _luminance(source[y0:y1, x0:x1])
    after = _luminance(image[y0 + frame.dy:y1 + frame.dy, x0 + frame.dx:x1 + frame.dx])
    changed = np.abs(after - before) > 0
    jumps = []
    for dy, dx in ((0, 1), (1, 0)):
        a, b = changed[: changed.shape[0] - dy, : changed.shape[1] - dx], changed[dy:, dx:]
        edge = a != b
        ea = np.abs(after[: after.shape[0] - dy, : after.shape[1] - dx] - after[dy:, dx:])[edge]
        sa = np.abs(before[: before.shape[0] - dy, : before.shape[1] - dx] - before[dy:, dx:])[edge]
        jumps.append(ea - sa)
    every = np.concatenate(jumps)
    return float(every.mean()) if len(every) else 0.0


@pytest.fixture(scope="module")
def rows():
    """``ROWS`` accepted single-op edits of the demo records (by seed), with the photo."""
    env = gym.make("vicogym/Natural-v0", k=1, max_turns=10_000, segmenter=SEGMENTER)
    arm = env.unwrapped.arm
    out = []
    rng = np.random.default_rng(7)
    tries = 0
    while len(out) < ROWS and tries < 20 * ROWS:
        index = tries % 18
        tries += 1
        env.reset(seed=tries, options={"index": index})
        scene = env.unwrapped.sample.structure
        op = sample_op(scene, rng)
        if op["op"] in ("pad", "crop"):  # they move the frame; the change is read where the photo lies
            continue
        _, _, _, _, info = env.step({"ops": [op]})
        if not info["valid"]:
            continue
        after = env.unwrapped.sample.structure
        source = arm.source.image(after.record.image)
        out.append((after.record.id, op, source, env.unwrapped.sample.image.copy(), frame_of(after)))
    env.close()
    assert len(out) == ROWS, f"only {len(out)} of {ROWS} edits accepted in {tries} tries"
    return out


def test_no_edit_draws_a_long_straight_step_in_the_photo(rows):
    """A rectangle (a boxed noise patch, a brightened box of sky, a pasted patch) or a cut
    along a protected box's straight edge is a straight step of the change; natural edits
    follow the photo's own regions and fade out, so none is found."""
    flagged = [(rid, op, steps[:3]) for rid, op, source, image, frame in rows
               if (steps := straight_steps(source, image, frame))]
    assert not flagged, f"{len(flagged)} of {len(rows)} edits draw straight steps: {flagged[:4]}"


def test_pasted_and_removed_regions_do_not_step_across_their_outline(rows):
    """What paste and remove put in matches its surroundings at its outline (Poisson
    blending, fills shaped by the photo): the edited image steps across the outline of
    what changed by at most 4/255 more than the photo did there."""
    content = [(rid, op, outline_jump(source, image, frame)) for rid, op, source, image, frame in rows
               if op["op"] in ("paste", "remove")]
    assert content, "no paste or remove among the rows"
    worst = max(content, key=lambda row: row[2])
    assert worst[2] <= 4.0, worst


def test_the_metrics_see_a_pasted_rectangle_and_a_cut():
    """The two measures find what they are for: a hard-edged dark patch and a blur that
    stops at a straight line through an object."""
    rng = np.random.default_rng(0)
    photo = cv2.GaussianBlur((rng.random((120, 160, 3)) * 255).astype(np.uint8), (0, 0), 1.5)  # a fine texture
    from vicogym.structures.natural import Frame

    frame = Frame(160, 120)
    patched = photo.copy()
    patched[20:80, 30:90] = 10
    assert straight_steps(photo, patched, frame) and outline_jump(photo, patched, frame) > 4.0
    striped = photo.copy()
    striped[:, 80:] = cv2.GaussianBlur(photo, (0, 0), 4)[:, 80:]
    assert any(axis == "x" and abs(position - 80) <= 3 for axis, position, _ in straight_steps(photo, striped, frame))
    assert not straight_steps(photo, photo, frame) and outline_jump(photo, photo, frame) == 0.0
