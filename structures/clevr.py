"""The CLEVR arm's structure: one scene in CLEVR's scene JSON, plus the camera and lights
that render it.

A :class:`Scene` holds objects (``shape``, ``color``, ``material``, ``size``, ``3d_coords``,
``rotation``, ``pixel_coords``), the ground-plane ``directions`` seen from the camera, the
``relationships`` (left / right / front / behind) and ``image_index``, ``image_filename``,
``split``: the keys CLEVR's question generator reads, with CLEVR's spelling, so a file of
these scenes (``{"info": ..., "scenes": [...]}``) feeds that generator unchanged. Two keys
CLEVR's files lack make a scene renderable again: ``camera`` (location, rotation, lens)
and ``lights`` (the three-point rig's jitter).

``directions``, ``relationships`` and ``pixel_coords`` are derived from the objects and
the camera (pure numpy), the way CLEVR's renderer computes them. So is what a reader sees
of an object's size: :func:`apparent_sizes`, each object's whole silhouette projected
through the camera, and :func:`size_problem`, whether the scene's large and small objects
can be told apart in the picture.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypedDict

import numpy as np

from vicogym.core import canonical_json
from vicogym.errors import InvalidEdit, register_error_codes
from vicogym.validation import is_int

#: CLEVR's attribute values, with its RGB colours and object sizes (radius in scene units)
COLORS: Mapping[str, tuple[int, int, int]] = {
    "gray": (87, 87, 87), "red": (173, 35, 35), "blue": (42, 75, 215), "green": (29, 105, 20),
    "brown": (129, 74, 25), "purple": (129, 38, 192), "cyan": (41, 208, 208), "yellow": (255, 238, 51),
}
SHAPES = ("cube", "sphere", "cylinder")
MATERIALS = ("rubber", "metal")
SIZES: Mapping[str, float] = {"large": 0.7, "small": 0.35}
ATTRIBUTES = {"color": tuple(COLORS), "shape": SHAPES, "material": MATERIALS, "size": tuple(SIZES)}
RELATIONS = ("left", "right", "front", "behind")
#: CLEVR's threshold: object j is "left of" object i when it is more than this far to the left
RELATION_EPS = 0.2
MIN_OBJECTS, MAX_OBJECTS = 3, 10
FLOOR = 3.0  # objects stand within [-FLOOR, FLOOR] on both ground axes
MIN_DIST = 0.25  # surface to surface
MARGIN = 0.4  # along the camera's left/right/front/behind: not offset, or offset at least this much

#: edit error codes the CLEVR arm adds to the core's
ERROR_CODES = {
    "spacing": "objects closer than CLEVR allows (0.25 apart, 0.4 along the camera's directions) or off the floor",
    "hidden": "an object with fewer visible pixels than a reader needs (occluded by others)",
    "out_of_frame": "an object outside the image, wholly or partly",
    "object_count": "a scene with fewer than three or more than ten objects",
    "relation_unseen": "a left/right/front/behind step of the question that the picture contradicts or leaves too "
                       "close to call",
    "degenerate": "a question CLEVR's generator would not ask: a relate step that changes nothing, or a comparison "
                  "whose wording fixes its answer",
    "material_unseen": "an answer that depends on a cube's material, which its flat faces do not show",
    "size_unseen": "a question that reads an object's size in a picture where some large object shows less than "
                   "1.4 times as big as some small one",
}
register_error_codes("clevr", ERROR_CODES)



@dataclass(frozen=True)
class Camera:
    """A pinhole camera: ``location``, ``rotation`` (Euler XYZ in degrees, Blender's
    convention: the camera looks down its local -Z), ``lens`` and ``sensor`` in mm
    (sensor width, fitted to the image width)."""

    location: tuple[float, float, float] = (7.36, -6.93, 4.96)
    rotation: tuple[float, float, float] = (63.6, 0.0, 46.7)
    lens: float = 35.0
    sensor: float = 32.0

    def __post_init__(self) -> None:
        for name in ("location", "rotation"):
            value = getattr(self, name)
            if not isinstance(value, (list, tuple)) or len(value) != 3 or not all(_finite(v) for v in value):
                raise ValueError(f"expected camera {name} as three finite numbers, got {value!r}")
            object.__setattr__(self, name, tuple(float(v) for v in value))
        for name in ("lens", "sensor"):
            if not _finite(getattr(self, name)) or getattr(self, name) <= 0:
                raise ValueError(f"expected camera {name} as a positive number, got {getattr(self, name)!r}")

    def matrix(self) -> np.ndarray:
        """The camera's rotation matrix (local to world)."""
        rx, ry, rz = (math.radians(a) for a in self.rotation)
        x = np.array([[1, 0, 0], [0, math.cos(rx), -math.sin(rx)], [0, math.sin(rx), math.cos(rx)]])
        y = np.array([[math.cos(ry), 0, math.sin(ry)], [0, 1, 0], [-math.sin(ry), 0, math.cos(ry)]])
        z = np.array([[math.cos(rz), -math.sin(rz), 0], [math.sin(rz), math.cos(rz), 0], [0, 0, 1]])
        return z @ y @ x

    def project(self, point: Any, width: int, height: int) -> tuple[float, float, float]:
        """Pixel coordinates (x right, y down) and depth of a world point."""
        local = self.matrix().T @ (np.asarray(point, dtype=float) - np.asarray(self.location))
        depth = -local[2]
        scale = self.lens / self.sensor * width
        return (width / 2.0 + scale * local[0] / depth, height / 2.0 - scale * local[1] / depth, float(depth))

    def to_dict(self) -> dict[str, Any]:
        return {"location": list(self.location), "rotation": list(self.rotation), "lens": self.lens,
                "sensor": self.sensor}


@dataclass(frozen=True)
class Lights:
    """Jitter of the three-point rig (key, fill, back): each light's offset in scene units
    from its base position, and one brightness factor."""

    key: tuple[float, float, float] = (0.0, 0.0, 0.0)
    fill: tuple[float, float, float] = (0.0, 0.0, 0.0)
    back: tuple[float, float, float] = (0.0, 0.0, 0.0)
    intensity: float = 1.0

    def __post_init__(self) -> None:
        for name in ("key", "fill", "back"):
            value = getattr(self, name)
            if (not isinstance(value, (list, tuple)) or len(value) != 3
                    or not all(_finite(v) and abs(v) <= 2 for v in value)):
                raise ValueError(f"expected light {name} jitter as three numbers within [-2, 2], got {value!r}")
            object.__setattr__(self, name, tuple(float(v) for v in value))
        if not _finite(self.intensity) or not 0.5 <= self.intensity <= 1.5:
            raise ValueError(f"expected light intensity within [0.5, 1.5], got {self.intensity!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"key": list(self.key), "fill": list(self.fill), "back": list(self.back), "intensity": self.intensity}


@dataclass(frozen=True)
class Obj:
    """One CLEVR object. ``x`` and ``y`` are its ground position; it stands on the ground,
    so its centre is at height ``radius``; ``rotation`` is in degrees about the vertical."""

    shape: str
    color: str
    material: str
    size: str
    x: float
    y: float
    rotation: float = 0.0

    def __post_init__(self) -> None:
        for name, values in ATTRIBUTES.items():
            if getattr(self, name) not in values:
                raise ValueError(f"expected {name} in {list(values)}, got {getattr(self, name)!r}")
        for name in ("x", "y", "rotation"):
            if not _finite(getattr(self, name)):
                raise ValueError(f"expected {name} as a finite number, got {getattr(self, name)!r}")
        object.__setattr__(self, "x", float(self.x))
        object.__setattr__(self, "y", float(self.y))
        object.__setattr__(self, "rotation", float(self.rotation) % 360.0)

    @property
    def radius(self) -> float:
        """The size's radius: spacing is measured with it."""
        return SIZES[self.size]

    @property
    def scale(self) -> float:
        """The drawn scale: CLEVR shrinks cubes by sqrt(2), so a cube is as wide as a sphere."""
        return self.radius / math.sqrt(2.0) if self.shape == "cube" else self.radius

    @property
    def coords(self) -> tuple[float, float, float]:
        """The object's centre; it stands on the floor."""
        return (self.x, self.y, self.scale)


@dataclass(frozen=True)
class Scene:
    """A CLEVR scene (see the module notes). Objects are addressed by index."""

    objects: tuple[Obj, ...]
    camera: Camera = field(default_factory=Camera)
    lights: Lights = field(default_factory=Lights)
    image_index: int = 0
    image_filename: str = "CLEVR_new_000000.png"
    split: str = "new"
    width: int = 480
    height: int = 320

    def __post_init__(self) -> None:
        if not isinstance(self.objects, (list, tuple)) or not all(isinstance(o, Obj) for o in self.objects):
            raise TypeError("expected objects as a list of Obj")
        object.__setattr__(self, "objects", tuple(self.objects))
        for name in ("width", "height"):
            v = getattr(self, name)
            if not is_int(v, 16, 4096):
                raise ValueError(f"expected {name} as an integer in [16, 4096], got {v!r}")

    # -- derived, as CLEVR computes it ----------------------------------------------------
    def directions(self) -> dict[str, tuple[float, float, float]]:
        """Unit vectors on the ground plane: where "behind", "left" ... point from this camera."""
        m = self.camera.matrix()
        behind, left = m @ np.array([0.0, 0.0, -1.0]), m @ np.array([-1.0, 0.0, 0.0])
        behind[2] = left[2] = 0.0
        behind, left = behind / np.linalg.norm(behind), left / np.linalg.norm(left)
        vectors = {"behind": behind, "front": -behind, "left": left, "right": -left,
                   "above": np.array([0.0, 0.0, 1.0]), "below": np.array([0.0, 0.0, -1.0])}
        return {k: tuple(round(float(c), 6) + 0.0 for c in v) for k, v in vectors.items()}  # + 0.0: no -0.0

    def relationships(self) -> dict[str, list[list[int]]]:
        """``relationships[rel][i]``: the objects that are ``rel`` of object ``i`` (CLEVR's
        rule: more than :data:`RELATION_EPS` along the direction)."""
        directions = self.directions()
        coords = np.array([o.coords for o in self.objects], dtype=float).reshape(-1, 3)
        out: dict[str, list[list[int]]] = {}
        for rel in RELATIONS:
            d = np.asarray(directions[rel])
            out[rel] = [
                [j for j in range(len(self.objects)) if j != i and float((coords[j] - coords[i]) @ d) > RELATION_EPS]
                for i in range(len(self.objects))
            ]
        return out

    def pixel_coords(self) -> list[list[float]]:
        return [[round(c, 4) for c in self.camera.project(o.coords, self.width, self.height)] for o in self.objects]

    # -- serialisation (CLEVR's scene JSON) ----------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        pixels = self.pixel_coords()
        return {
            "image_index": self.image_index,
            "image_filename": self.image_filename,
            "split": self.split,
            "objects": [{"shape": o.shape, "color": o.color, "material": o.material, "size": o.size,
                         "3d_coords": [round(c, 6) for c in o.coords], "rotation": round(o.rotation, 6),
                         "pixel_coords": pixels[i]} for i, o in enumerate(self.objects)],
            "directions": {k: list(v) for k, v in self.directions().items()},
            "relationships": self.relationships(),
            "camera": self.camera.to_dict(),
            "lights": self.lights.to_dict(),
            "image_size": [self.width, self.height],
        }

    def payloads(self) -> dict[str, bytes]:
        return {}

    def to_json(self) -> str:
        return canonical_json(self.to_dict())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], width: int | None = None, height: int | None = None) -> Scene:
        """A scene from CLEVR's JSON (our files, or the released ones: a released scene has no
        ``camera``; its camera's heading is taken from its ``directions``)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("objects"), list):
            raise ValueError("expected a scene object with an 'objects' list")
        objects = []
        for i, o in enumerate(data["objects"]):
            if not isinstance(o, Mapping):
                raise ValueError(f"expected objects[{i}] to be an object")
            coords = o.get("3d_coords")
            if not isinstance(coords, (list, tuple)) or len(coords) < 2:
                raise ValueError(f"expected objects[{i}]['3d_coords'] as [x, y, z]")
            objects.append(Obj(o.get("shape"), o.get("color"), o.get("material"), o.get("size"), coords[0], coords[1],
                               o.get("rotation", 0.0)))
        camera = _from_fields(Camera, data, "camera") if "camera" in data else camera_facing(data.get("directions"))
        lights = _from_fields(Lights, data, "lights") if "lights" in data else Lights()
        size = data.get("image_size") or [width or 480, height or 320]
        return cls(tuple(objects), camera, lights, int(data.get("image_index", 0)),
                   str(data.get("image_filename", "CLEVR_new_000000.png")), str(data.get("split", "new")),
                   int(width or size[0]), int(height or size[1]))

    def with_objects(self, objects: tuple[Obj, ...]) -> Scene:
        return replace(self, objects=tuple(objects))


def _from_fields(kind: Any, data: Mapping[str, Any], key: str) -> Any:
    fields = data[key]
    names = [f.name for f in dataclasses.fields(kind)]
    if not isinstance(fields, Mapping) or not set(fields) <= set(names):
        unknown = sorted(map(str, set(fields) - set(names))) if isinstance(fields, Mapping) else fields
        raise ValueError(f"expected {key!r} as an object with fields from {names}, got {unknown!r}")
    return kind(**fields)


def camera_facing(directions: Any) -> Camera:
    """The default camera turned about the vertical so that its ground-plane "behind" is
    the given one (released CLEVR scenes store directions, not cameras)."""
    base = Camera()
    if not isinstance(directions, Mapping) or "behind" not in directions:
        return base
    bx, by = float(directions["behind"][0]), float(directions["behind"][1])
    default_behind = Scene((), base).directions()["behind"]
    turn = math.degrees(math.atan2(by, bx) - math.atan2(default_behind[1], default_behind[0]))
    c, s = math.cos(math.radians(turn)), math.sin(math.radians(turn))
    x, y, z = base.location
    return Camera((x * c - y * s, x * s + y * c, z), (base.rotation[0], base.rotation[1], base.rotation[2] + turn),
                  base.lens, base.sensor)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# -- CLEVR's placement rules -----------------------------------------------------------------
def _cardinal(scene: Scene) -> list[np.ndarray]:
    directions = scene.directions()
    return [np.asarray(directions[k][:2]) for k in ("left", "right", "front", "behind")]


def pair_problem(a: Obj, b: Obj, cardinal: list[np.ndarray], names: tuple[str, str]) -> InvalidEdit | None:
    """Why two objects stand too close (CLEVR's distance and margin rules), or ``None``."""
    gap = math.hypot(a.x - b.x, a.y - b.y) - a.radius - b.radius
    if gap < MIN_DIST:
        return InvalidEdit("spacing", f"{names[0]} and {names[1]} are {max(gap, 0):.2f} apart, closer than "
                           f"{MIN_DIST:g}; move one of them")
    offset = np.array([b.x - a.x, b.y - a.y])
    for d in cardinal:
        margin = float(offset @ d)
        if 0 < margin < MARGIN:
            return InvalidEdit("spacing", f"{names[0]} and {names[1]} are only {margin:.2f} apart along a camera "
                               f"direction (at least {MARGIN:g}, so left/right/front/behind are clear); move one of "
                               f"them")
    return None


def placement_problem(scene: Scene) -> InvalidEdit | None:
    """Why the scene breaks CLEVR's placement rules, or ``None``."""
    n = len(scene.objects)
    if not MIN_OBJECTS <= n <= MAX_OBJECTS:
        return InvalidEdit("object_count", f"a scene holds {MIN_OBJECTS}-{MAX_OBJECTS} objects, this edit leaves {n}")
    cardinal = _cardinal(scene)
    for i, a in enumerate(scene.objects):
        if abs(a.x) > FLOOR or abs(a.y) > FLOOR:
            return InvalidEdit("spacing", f"object {i} is off the floor (|x| and |y| at most {FLOOR:g})")
        for j in range(i + 1, n):
            problem = pair_problem(a, scene.objects[j], cardinal, (f"objects {i}", f"{j}"))
            if problem is not None:
                return problem
    return None


def free_spot(scene: Scene, size: str, rng: np.random.Generator, tries: int = 24,
              ignore: int | None = None) -> tuple[float, float] | None:
    """A floor position where an object of ``size`` keeps the placement rules with every
    object but ``ignore``."""
    cardinal = _cardinal(scene)
    others = [o for k, o in enumerate(scene.objects) if k != ignore]
    for _ in range(tries):
        x, y = (round(float(v), 3) for v in rng.uniform(-FLOOR, FLOOR, size=2))
        probe = Obj("sphere", "gray", "rubber", size, x, y)
        if all(pair_problem(probe, o, cardinal, ("", "")) is None for o in others):
            return x, y
    return None


# -- what a reader sees of an object's size ------------------------------------------------
def _fibonacci(n: int) -> np.ndarray:
    k = np.arange(n) + 0.5
    z = 1.0 - 2.0 * k / n
    r = np.sqrt(1.0 - z * z)
    turn = math.pi * (1.0 + 5.0 ** 0.5) * k
    return np.stack([r * np.cos(turn), r * np.sin(turn), z], axis=1)


_CIRCLE = np.linspace(0.0, 2.0 * math.pi, 64, endpoint=False)
#: each shape's outline points in its own frame (the renderer's meshes: radius 1, from -1 to 1)
OUTLINES: Mapping[str, np.ndarray] = {
    "sphere": _fibonacci(400),
    "cylinder": np.concatenate([np.stack([np.cos(_CIRCLE), np.sin(_CIRCLE), np.full_like(_CIRCLE, z)], axis=1)
                                for z in (-1.0, 1.0)]),
    "cube": np.array([[x, y, z] for x in (-1.0, 1.0) for y in (-1.0, 1.0) for z in (-1.0, 1.0)]),
}


def outline(obj: Obj) -> np.ndarray:
    """World points on ``obj``'s surface whose projections bound its silhouette."""
    turn = math.radians(obj.rotation)
    rotation = np.array([[math.cos(turn), -math.sin(turn), 0.0], [math.sin(turn), math.cos(turn), 0.0],
                         [0.0, 0.0, 1.0]])
    return (OUTLINES[obj.shape] * obj.scale) @ rotation.T + np.asarray(obj.coords)


def project_points(scene: Scene, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pixel coordinates (``n x 2``) and depths of world ``points``, as
    :meth:`Camera.project` computes them one by one."""
    camera = scene.camera
    local = (np.asarray(points, dtype=float) - np.asarray(camera.location)) @ camera.matrix()
    depth = -local[:, 2]
    focal = camera.lens / camera.sensor * scene.width
    return np.stack([scene.width / 2.0 + focal * local[:, 0] / depth,
                     scene.height / 2.0 - focal * local[:, 1] / depth], axis=1), depth


def convex_hull(points: np.ndarray) -> np.ndarray:
    """The convex hull of 2-D points, counter-clockwise in image coordinates (Andrew's
    monotone chain)."""
    pts = sorted(set(map(tuple, np.round(points, 4).tolist())))
    if len(pts) < 3:
        return np.asarray(pts, dtype=float).reshape(-1, 2)

    def turn(o: Sequence[float], a: Sequence[float], b: Sequence[float]) -> float:
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower: list[tuple[float, float]] = []
    upper: list[tuple[float, float]] = []
    for p in pts:
        while len(lower) >= 2 and turn(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and turn(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return np.asarray(lower[:-1] + upper[:-1], dtype=float)


#: how much bigger every large object must show than every small one for a reader to tell
#: the sizes from the picture. sqrt(2) is the midpoint, on the log scale sizes are judged
#: on, between "the same" (1) and CLEVR's true ratio (2); and at equal depth the least
#: separated pair in :func:`apparent_sizes` (a large cube turned 45 degrees against a small
#: cylinder, measured: 1.50) clears it, so it refuses only scenes whose depths eat the gap
SIZE_SEPARATION = 1.4


def apparent_sizes(scene: Scene) -> list[float]:
    """What a reader sees of each object's size, in pixels at the scene's resolution: the
    square root of its whole silhouette's area (the convex hull of its outline projected
    through the camera; objects are convex). Whole, not visible: occlusion and the frame's
    edge cut what shows of an object, not how big it looks, and a reader judges size from
    the part shown. The root of the area rather than the height or width: it varies least
    between shapes of one size (at one depth a large object shows 1.50-2.74 times a small
    one whatever the shapes; heights 1.43-2.82). 0.0 for an object reaching behind the
    camera. Agrees with the renderer's mask pass of each object alone within a few per cent
    (``tests/test_size_words.py``)."""
    from scipy.spatial import ConvexHull  # Qhull: 30 times the pure-Python hull's speed on a sphere's outline

    sizes = []
    for obj in scene.objects:
        xy, depth = project_points(scene, outline(obj))
        sizes.append(0.0 if (depth <= 0).any() else math.sqrt(ConvexHull(xy).volume))  # a 2-D hull's volume: area
    return sizes


def size_problem(scene: Scene, sizes: Sequence[float] | None = None) -> str | None:
    """Why a reader could not tell the scene's large objects from its small ones, or
    ``None``: some large object shows less than :data:`SIZE_SEPARATION` times as big as
    some small one (:func:`apparent_sizes`, or ``sizes`` when given). A scene of one size
    has nothing to confuse."""
    sizes = apparent_sizes(scene) if sizes is None else sizes
    large = [k for k, o in enumerate(scene.objects) if o.size == "large"]
    small = [k for k, o in enumerate(scene.objects) if o.size == "small"]
    if not large or not small:
        return None
    a, b = min(large, key=lambda k: sizes[k]), max(small, key=lambda k: sizes[k])
    if sizes[a] >= SIZE_SEPARATION * sizes[b]:
        return None
    name = (lambda k: f"object {k} (a {scene.objects[k].size} {scene.objects[k].color} {scene.objects[k].shape})")
    return (f"{name(a)} shows {sizes[a]:.1f} px across and {name(b)} {sizes[b]:.1f} px, so a reader cannot tell "
            f"large from small (every large object must show at least {SIZE_SEPARATION:g} times every small one)")


# -- JSON records -------------------------------------------------------------------------
class ProgramNode(TypedDict):
    """One node of a CLEVR functional program (the released question files' spelling)."""

    function: str
    #: indices of the earlier nodes whose outputs this node takes
    inputs: list[int]
    #: attribute values and relations the node is given (``["red"]`` for ``filter_color``)
    value_inputs: list[str]


class _ClevrRule(TypedDict):
    kind: Literal["program"]
    #: the node list; the last node's output is the answer
    program: list[ProgramNode]
    question: str


class ClevrRule(_ClevrRule, total=False):
    """A CLEVR sample's label rule: the answer is the program's result on the scene."""

    #: the question template and family a generated question came from (none for questions
    #: read from CLEVR's files)
    template: str
    family: str
