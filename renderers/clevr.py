"""CLEVR renderer: scenes drawn by Blender (``bpy``), headless on the CPU, in a worker process.

The scene is built in code (ground plane, camera, three-point area lights, rubber and metal
materials, bevelled cube, sphere and cylinder, all shaded smooth); no ``.blend`` file. Metal reflects a
sky that brightens overhead (glossy rays only), and a metal's colour is its reflectance at
the colour's display value, so metal faces show which way they point and dark metals stay
readable. Engines: Cycles (``samples``, ``denoise``) and Workbench (a fast preview in the
objects' colours; it draws metal and rubber alike). Both draw the same image for the same
scene and seed, in any process, up to a few pixels. Workbench gives the same bytes in fresh
processes, but after a long history of live updates a pixel or three can come out 1 of 255
apart (measured: 1 row of 64 in a generation run). Cycles does not promise the same bytes:
from one fresh process to the next, a pixel on a rounding boundary can come out one step
apart (measured with denoise off and the light tree off: one pixel of 76,800 in 2-5 of 10
processes, also with one render thread and a fixed hash seed), and now and then one sample's
path takes another turn (measured: one pixel 2 of 255 apart in 1 row of 64).
OpenImageDenoise adds about a dozen pixels 1 apart per image, so it is off by default.
``pixel_tolerance`` is 1 for Workbench and one sample's worth (255 / samples, 16 at 16
samples) for Cycles, on at most 0.1% of the pixels (``images.same_image``).

One Blender scene stays alive in the worker across renders: a request carries the whole
scene JSON, and the worker updates only what differs from the scene it drew last (an
object's mesh, material, placement; the camera; the lights). Rendering in a separate
process means a Blender crash costs one retried render, never the environment or the run,
and a render that hangs past ``timeout`` seconds is killed and its worker replaced.

Every render also draws a mask pass (Workbench, flat colours, no anti-aliasing, Standard
view transform) that gives each object's visible pixels: the facts the arm's visibility
checks read (pixel counts, boxes, whether an object touches the image edge).
"""

from __future__ import annotations

import atexit
import json
import math
import os
import tempfile
from dataclasses import dataclass
from typing import Any

import numpy as np

from vicogym.errors import GenerationError
from vicogym.structures.clevr import COLORS, Scene
from vicogym.validation import is_int

ENGINES = ("cycles", "workbench")


@dataclass(frozen=True)
class RenderSettings:
    """What the worker needs besides the scene. Changing any of these starts another worker."""

    engine: str = "cycles"
    samples: int = 16
    denoise: bool = False
    threads: int = 2

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"expected engine in {ENGINES}, got {self.engine!r}")
        if not is_int(self.samples, 1, 4096):
            raise ValueError(f"expected samples as an integer in [1, 4096], got {self.samples!r}")
        if not isinstance(self.denoise, bool):
            raise TypeError(f"expected denoise to be true or false, got {self.denoise!r}")
        if not is_int(self.threads, 1, 64):
            raise ValueError(f"expected threads as an integer in [1, 64], got {self.threads!r}")

    @property
    def pixel_tolerance(self) -> int:
        """How far (0-255) two renders of the same scene and seed may differ per channel (on
        at most 0.1% of the pixels): rounding for Workbench; for Cycles one sample's worth,
        since a sample whose path takes another turn moves its pixel by about 1/samples."""
        return max(1, math.ceil(255 / self.samples)) if self.engine == "cycles" else 1


class RenderFailed(GenerationError):
    """Blender could not draw the scene (it crashed twice, raised, or timed out)."""


#: what each engine's images cannot show, so that no question reads it
UNSHOWN = {"cycles": frozenset(), "workbench": frozenset({"material"})}


@dataclass(frozen=True)
class ClevrFacts:
    """One rendered scene: the image, and per object its visible pixel count, its box
    ``[x0, y0, x1, y1]`` (``None`` when unseen) and whether it touches the image edge."""

    image: np.ndarray
    visible: list[int]
    boxes: list[list[int] | None]
    at_edge: list[bool]


class ClevrRenderer:
    """The parent's side: sends scenes to a Blender worker and reads back what it drew."""

    def __init__(self, settings: RenderSettings, timeout: float = 120.0):
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            raise ValueError(f"expected timeout as positive seconds, got {timeout!r}")
        self.settings, self.timeout = settings, float(timeout)
        self.renders = 0
        self.restarts = 0

    def render(self, scene: Scene, seed: int, rebuild: bool = False) -> ClevrFacts:
        """Draw ``scene`` (``seed`` seeds Cycles' sampling). ``rebuild`` draws it in a fresh
        Blender scene instead of updating the live one (the benchmark's baseline)."""
        request = {"scene": scene.to_dict(), "size": [scene.width, scene.height], "seed": int(seed) % (2**31),
                   "rebuild": rebuild}
        reply = self._ask(request)
        self.renders += 1
        import cv2

        image = cv2.imdecode(np.frombuffer(reply["png"], np.uint8), cv2.IMREAD_COLOR)
        if image is None:
            raise RenderFailed("the worker returned an image that does not decode")
        return ClevrFacts(cv2.cvtColor(image, cv2.COLOR_BGR2RGB), reply["visible"], reply["boxes"], reply["at_edge"])

    def visibility(self, scene: Scene) -> ClevrFacts:
        """Only the mask pass (fast, whatever the engine): the objects' visible pixels, with
        an empty image. For screening scenes before drawing them for real."""
        reply = self._ask({"scene": scene.to_dict(), "size": [scene.width, scene.height], "seed": 0,
                           "rebuild": False, "masks_only": True})
        return ClevrFacts(np.zeros((scene.height, scene.width, 3), np.uint8), reply["visible"], reply["boxes"],
                           reply["at_edge"])

    def labels(self, scene: Scene) -> np.ndarray:
        """Each pixel's object (its index in ``scene.objects``), -1 where none is drawn: the
        mask pass, for reading one object's pixels out of a render."""
        reply = self._ask({"scene": scene.to_dict(), "size": [scene.width, scene.height], "seed": 0,
                           "rebuild": False, "masks_only": True, "labels": True})
        return np.frombuffer(reply["labels"], np.int16).reshape(scene.height, scene.width)

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        worker = _worker(self.settings)
        try:
            reply = worker.ask(request, self.timeout)
        except _WorkerDied:
            self.restarts += 1
            try:
                reply = _worker(self.settings).ask(request, self.timeout)  # one retry in a fresh worker
            except _WorkerDied as exc:
                raise RenderFailed(f"{exc} twice in a row, the second time in a fresh worker; check that "
                                   f"`python -m vicogym.renderers.clevr` runs here (bpy installed, memory "
                                   f"free), or lower the resolution") from None
        if reply.get("error"):
            raise RenderFailed(reply["error"])
        return reply


# -- the worker pool: one live Blender scene per settings, shared by every env in the process ----
class _WorkerDied(RuntimeError):
    pass


class _Worker:
    """A Blender worker: a fresh interpreter (``python -m vicogym.renderers.clevr``), so it
    needs nothing from the parent's main module, talking over a socket pair."""

    def __init__(self, settings: RenderSettings):
        import json
        import socket
        import subprocess
        import sys
        from multiprocessing.connection import Connection

        ours, theirs = socket.socketpair()
        command = [sys.executable, "-m", "vicogym.renderers.clevr", str(theirs.fileno()),
                   json.dumps(settings.__dict__), str(os.getpid())]
        self.process = subprocess.Popen(command, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        theirs.close()
        self.conn = Connection(ours.detach())

    def ask(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        try:
            self.conn.send(request)
            if not self.conn.poll(timeout):
                self.stop()
                raise RenderFailed(f"Blender did not finish the render within {timeout:g} s; the worker was "
                                   f"replaced (raise the timeout, or lower samples or the resolution)")
            return self.conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError, OSError) as exc:
            self.stop()
            raise _WorkerDied(f"the Blender worker died ({type(exc).__name__})") from None

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        self.conn.close()


_WORKERS: dict[RenderSettings, _Worker] = {}


def _worker(settings: RenderSettings) -> _Worker:
    worker = _WORKERS.get(settings)
    if worker is None or not worker.alive():
        worker = _WORKERS[settings] = _Worker(settings)
    return worker


@atexit.register
def stop_workers() -> None:
    """Stop every Blender worker this process started."""
    for worker in _WORKERS.values():
        worker.stop()
    _WORKERS.clear()


# -- inside the worker process (the only place that imports bpy) -------------------------------
KEY, FILL, BACK = (6.44, -2.95, 10.0), (-4.67, -4.0, 3.0), (-1.19, 4.6, 6.0)
LIGHT_ENERGY = {"key": 700.0, "fill": 150.0, "back": 400.0}
GROUND_RGB = (0.35, 0.35, 0.35)
#: Workbench's studio light draws the floor darker than Cycles does: a lighter one, so that
#: gray, brown, blue and purple objects stand out from it as they do under Cycles
WORKBENCH_GROUND_RGB = (0.8, 0.8, 0.8)
#: Workbench shades objects darker than Cycles too (gray rubber at 51 of 255 against 78, read
#: as black): it is given each colour as (display value) ** 1.5 rather than linear (** 2.2)
WORKBENCH_GAMMA = 1.5
#: the floor's side: wide enough that its edge stays behind the horizon (at 60 m a high
#: camera showed the dark world in the top corners, as an arc under Cycles), and no wider:
#: at 2 km its triangles' float precision made denoised Cycles renders differ between
#: processes on 0.5% of the pixels
GROUND_SIZE = 400.0
BACKGROUND_RGB = (0.05, 0.05, 0.05)
#: the sky that metal reflects (glossy rays only): dark at the horizon, bright overhead, so a
#: metal face shows which way it points and gray metal reads as silver, not black
SKY_HORIZON, SKY_ZENITH = 0.03, 1.0
SKY_FULL = 0.35  # the sky is at its brightest from 20 degrees above the horizon up (z = sin 20)
#: what metal reflects of the floor: this share of its colour. A cube's upright faces mirror
#: the floor in front of them, and at the floor's full colour a metal cube read as a lighter
#: rubber cube (the spread of brightness over its pixels 1.3 times rubber's); at half its
#: colour, a metal cube's sides are darker than its top and its rounded edges, as polished
#: metal's are, its spread is over 1.6 times rubber's, its colour shows, and gray metal still
#: reads as silver
GROUND_IN_REFLECTIONS = 0.5
#: the cube's rounded edges (a share of its half side) and their segments; shaded smooth with
#: hardened normals, so the faces stay flat and a metal edge catches the bright sky overhead
CUBE_BEVEL, CUBE_BEVEL_SEGMENTS = 0.12, 5


def _serve(conn: Any, settings: RenderSettings, parent: int) -> None:
    from vicogym.processes import die_with_parent

    die_with_parent(parent)
    studio = _Studio(settings)
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply = studio.draw(request)
        except Exception as exc:  # reported to the parent, which rejects the edit
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        conn.send(reply)


def _linear(channel: float) -> float:
    """sRGB (0-1) to Blender's linear colour."""
    return channel / 12.92 if channel <= 0.04045 else ((channel + 0.055) / 1.055) ** 2.4


def _srgb8(linear: float) -> int:
    value = linear * 12.92 if linear <= 0.0031308 else 1.055 * linear ** (1 / 2.4) - 0.055
    return int(round(max(0.0, min(1.0, value)) * 255))


#: flat colours of the mask pass: index 0 is the ground, 1.. the objects (well apart in 8-bit sRGB)
MASK_LINEAR = [(0.0, 0.0, 0.0), (0.5, 0.5, 0.5)] + [
    (_linear(r / 255), _linear(g / 255), _linear(b / 255)) for r, g, b in
    ((255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0), (255, 0, 255), (0, 255, 255), (255, 128, 0),
     (128, 0, 255), (0, 128, 64), (128, 255, 128))]


_PALETTE = np.array([[_srgb8(c) for c in rgb] for rgb in MASK_LINEAR], dtype=np.int64)
_PACKED = (_PALETTE[:, 0] << 16) | (_PALETTE[:, 1] << 8) | _PALETTE[:, 2]
_ORDER = np.argsort(_PACKED)


def _mask_labels(mask: np.ndarray) -> np.ndarray:
    """Each pixel's index in :data:`MASK_LINEAR`: exact colours by lookup, any other (should
    an encoder round one) by the nearest palette colour."""
    rgb = mask.reshape(-1, 3).astype(np.int64)
    packed = (rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2]
    slot = np.searchsorted(_PACKED[_ORDER], packed).clip(0, len(_ORDER) - 1)
    labels = _ORDER[slot]
    stray = np.nonzero(_PACKED[labels] != packed)[0]
    if len(stray):
        labels[stray] = np.abs(rgb[stray, None, :] - _PALETTE[None, :, :]).sum(axis=2).argmin(axis=1)
    return labels.reshape(mask.shape[:2])


class _Studio:
    """The live Blender scene of one worker."""

    def __init__(self, settings: RenderSettings):
        import bpy

        self.bpy, self.settings = bpy, settings
        self.out = tempfile.mkdtemp(prefix="vicogym-blender-")
        self._build()

    # -- building ---------------------------------------------------------------------------
    def _build(self) -> None:
        bpy = self.bpy
        bpy.ops.wm.read_factory_settings(use_empty=True)
        scene = self.scene = bpy.context.scene
        scene.render.resolution_percentage = 100
        scene.render.image_settings.file_format = "PNG"
        scene.render.image_settings.color_mode = "RGB"
        scene.render.image_settings.color_depth = "8"
        scene.render.dither_intensity = 0.0
        scene.view_settings.view_transform = "Standard"
        scene.render.threads_mode = "FIXED"
        scene.render.threads = self.settings.threads
        world = bpy.data.worlds.new("world")
        world.color = BACKGROUND_RGB
        world.use_nodes = True
        self._sky(world.node_tree)
        # only glossy rays see the sky, and they find it by sampling the BSDF: a light map of
        # the world doubled the frame time and bought nothing
        world.cycles.sampling_method = "NONE"
        scene.world = world
        bpy.ops.mesh.primitive_plane_add(size=GROUND_SIZE, location=(0.0, 0.0, 0.0))
        self.ground = bpy.context.active_object
        ground = self._material("ground", GROUND_RGB, 0.0, 0.8, shown=WORKBENCH_GROUND_RGB)
        self._dim_in_reflections(ground.node_tree, GROUND_RGB, GROUND_IN_REFLECTIONS)
        self.ground.data.materials.append(ground)
        camera = bpy.data.objects.new("camera", bpy.data.cameras.new("camera"))
        scene.collection.objects.link(camera)
        scene.camera = self.camera = camera
        camera.data.sensor_fit = "HORIZONTAL"
        self.lights = {}
        for name, size in (("key", 1.0), ("fill", 2.0), ("back", 1.0)):
            light = bpy.data.lights.new(name, "AREA")
            light.size = size
            obj = bpy.data.objects.new(name, light)
            scene.collection.objects.link(obj)
            self.lights[name] = obj
        self.meshes = {}
        for shape in ("cube", "sphere", "cylinder"):
            if shape == "cube":
                bpy.ops.mesh.primitive_cube_add(size=2.0)
            elif shape == "sphere":
                bpy.ops.mesh.primitive_uv_sphere_add(radius=1.0, segments=48, ring_count=24)
            else:
                bpy.ops.mesh.primitive_cylinder_add(radius=1.0, depth=2.0, vertices=64)
            holder = bpy.context.active_object
            mesh = holder.data
            mesh.name = shape
            for polygon in mesh.polygons:
                polygon.use_smooth = True
            bpy.data.objects.remove(holder)
            mesh.use_fake_user = True
            mesh.materials.append(None)  # one slot, which each object fills with its own material
            self.meshes[shape] = mesh
        self.materials: dict[tuple[str, str], Any] = {}
        self.slots: list[Any] = []
        self.drawn: list[dict[str, Any]] = []
        self.mask_key: str | None = None
        self.masks: Any = None

    def _sky(self, tree: Any) -> None:
        """Camera and diffuse rays see the plain background; glossy rays see a vertical
        gradient (``SKY_HORIZON`` to ``SKY_ZENITH``), which is what makes metal look metal."""
        nodes, links = tree.nodes, tree.links
        coords, split = nodes.new("ShaderNodeTexCoord"), nodes.new("ShaderNodeSeparateXYZ")
        ramp, path, mix = nodes.new("ShaderNodeValToRGB"), nodes.new("ShaderNodeLightPath"), nodes.new("ShaderNodeMix")
        links.new(coords.outputs["Generated"], split.inputs["Vector"])
        links.new(split.outputs["Z"], ramp.inputs["Fac"])
        ramp.color_ramp.elements[0].position = 0.0  # a world's generated coordinates are the ray's direction
        ramp.color_ramp.elements[0].color = (SKY_HORIZON, SKY_HORIZON, SKY_HORIZON, 1.0)
        ramp.color_ramp.elements[1].position = SKY_FULL
        ramp.color_ramp.elements[1].color = (SKY_ZENITH, SKY_ZENITH, SKY_ZENITH, 1.0)
        mix.data_type = "RGBA"  # the colour sockets: Mix names its float, vector and colour sockets alike
        colour = {socket.identifier: socket for socket in (*mix.inputs, *mix.outputs)}
        links.new(path.outputs["Is Glossy Ray"], colour["Factor_Float"])
        colour["A_Color"].default_value = (*BACKGROUND_RGB, 1.0)
        links.new(ramp.outputs["Color"], colour["B_Color"])
        links.new(colour["Result_Color"], nodes["Background"].inputs["Color"])

    def _dim_in_reflections(self, tree: Any, rgb: tuple[float, float, float], share: float) -> None:
        """Glossy rays see the material at ``share`` of its colour (camera and diffuse rays at
        all of it): what metal reflects of the floor, see :data:`GROUND_IN_REFLECTIONS`."""
        nodes, links = tree.nodes, tree.links
        path, mix = nodes.new("ShaderNodeLightPath"), nodes.new("ShaderNodeMix")
        mix.data_type = "RGBA"
        colour = {socket.identifier: socket for socket in (*mix.inputs, *mix.outputs)}
        links.new(path.outputs["Is Glossy Ray"], colour["Factor_Float"])
        colour["A_Color"].default_value = (*rgb, 1.0)
        colour["B_Color"].default_value = (*(c * share for c in rgb), 1.0)
        links.new(colour["Result_Color"], nodes["Principled BSDF"].inputs["Base Color"])

    def _material(self, name: str, rgb: tuple[float, float, float], metallic: float, roughness: float,
                  shown: tuple[float, float, float] | None = None) -> Any:
        """A Principled material of base colour ``rgb``; Workbench shows ``shown`` (default
        ``rgb``)."""
        material = self.bpy.data.materials.new(name)
        material.use_nodes = True
        bsdf = material.node_tree.nodes["Principled BSDF"]
        bsdf.inputs["Base Color"].default_value = (*rgb, 1.0)
        bsdf.inputs["Metallic"].default_value = metallic
        bsdf.inputs["Roughness"].default_value = roughness
        material.diffuse_color = (*(shown or rgb), 1.0)
        return material

    def _object_material(self, color: str, material: str) -> Any:
        key = (color, material)
        if key not in self.materials:
            rgb = tuple(_linear(c / 255) for c in COLORS[color])
            shown = tuple((c / 255) ** WORKBENCH_GAMMA for c in COLORS[color])  # Workbench draws both alike
            if material == "metal":
                # a metal's colour is its reflectance: the display value, so dark metals stay readable
                self.materials[key] = self._material(f"{color}-metal", tuple(c / 255 for c in COLORS[color]), 1.0, 0.15,
                                                     shown=shown)
            else:
                self.materials[key] = self._material(f"{color}-rubber", rgb, 0.0, 0.9, shown=shown)
        return self.materials[key]

    def _slot(self, k: int) -> Any:
        while len(self.slots) <= k:
            obj = self.bpy.data.objects.new(f"object-{len(self.slots)}", self.meshes["sphere"])
            self.scene.collection.objects.link(obj)
            bevel = obj.modifiers.new("bevel", "BEVEL")
            bevel.width, bevel.segments = CUBE_BEVEL, CUBE_BEVEL_SEGMENTS
            bevel.harden_normals = True
            self.slots.append(obj)
            self.drawn.append({})
        return self.slots[k]

    # -- drawing ------------------------------------------------------------------------------
    def draw(self, request: dict[str, Any]) -> dict[str, Any]:
        if request.get("rebuild"):
            self._build()
        scene_json = request["scene"]
        objects = scene_json["objects"]
        for k, o in enumerate(objects):
            self._update(k, o)
        for obj in self.slots[len(objects):]:
            self.bpy.data.objects.remove(obj)
        del self.slots[len(objects):], self.drawn[len(objects):]
        self._place_camera(scene_json["camera"], request["size"])
        self._place_lights(scene_json["lights"])
        png = b"" if request.get("masks_only") else self._draw_image(request["seed"])
        # masks depend on geometry alone: a change of colour, material or light reuses them
        geometry = json.dumps([[o[k] for k in ("shape", "size", "3d_coords", "rotation")] for o in objects] +
                              [scene_json["camera"], request["size"]], sort_keys=True)
        if geometry != self.mask_key:
            self.masks, self.mask_key = self._draw_masks(len(objects)), geometry
        visible, boxes, at_edge, labels = self.masks
        reply = {"png": png, "visible": visible, "boxes": boxes, "at_edge": at_edge}
        if request.get("labels"):  # each pixel's object (0, 1 ...), -1 for the floor and the sky
            reply["labels"] = (labels.astype(np.int16) - 2).clip(-1).tobytes()
        return reply

    def _update(self, k: int, o: dict[str, Any]) -> None:
        obj, drawn = self._slot(k), self.drawn[k]
        if drawn.get("shape") != o["shape"]:
            obj.data = self.meshes[o["shape"]]
            obj.modifiers["bevel"].show_render = obj.modifiers["bevel"].show_viewport = o["shape"] == "cube"
        if (drawn.get("shape"), drawn.get("color"), drawn.get("material")) != (o["shape"], o["color"], o["material"]):
            # linked to the object, not to the mesh every object of this shape shares
            obj.material_slots[0].link = "OBJECT"
            obj.material_slots[0].material = self._object_material(o["color"], o["material"])
        x, y, z = o["3d_coords"]
        obj.location = (x, y, z)
        obj.scale = (z, z, z)  # z is the drawn scale: objects stand on the floor
        obj.rotation_euler = (0.0, 0.0, math.radians(o["rotation"]))
        self.drawn[k] = dict(o)

    def _place_camera(self, camera: dict[str, Any], size: list[int]) -> None:
        self.camera.location = camera["location"]
        self.camera.rotation_euler = [math.radians(a) for a in camera["rotation"]]
        self.camera.data.lens, self.camera.data.sensor_width = camera["lens"], camera["sensor"]
        self.scene.render.resolution_x, self.scene.render.resolution_y = size

    def _place_lights(self, lights: dict[str, Any]) -> None:
        for name, base in (("key", KEY), ("fill", FILL), ("back", BACK)):
            obj = self.lights[name]
            from mathutils import Vector

            obj.location = tuple(b + d for b, d in zip(base, lights[name]))
            # an area light shines down its local -Z: turn that to the scene's centre
            obj.rotation_euler = (-Vector(obj.location)).to_track_quat("-Z", "Y").to_euler()
            obj.data.energy = LIGHT_ENERGY[name] * lights["intensity"]

    def _render_to(self, name: str) -> str:
        path = os.path.join(self.out, name)
        self.scene.render.filepath = path
        self.bpy.ops.render.render(write_still=True)
        return path

    def _draw_image(self, seed: int) -> bytes:
        scene, settings = self.scene, self.settings
        if settings.engine == "cycles":
            scene.render.engine = "CYCLES"
            scene.cycles.device = "CPU"
            scene.cycles.samples = settings.samples
            scene.cycles.use_denoising = settings.denoise
            scene.cycles.seed = seed
            scene.cycles.use_adaptive_sampling = False
            # the light tree is built in parallel and not bit-reproducible (a pixel on a rounding
            # boundary flipped by 1 in a third of fresh processes); three lights need no tree
            scene.cycles.use_light_tree = False
        else:
            scene.render.engine = "BLENDER_WORKBENCH"
            scene.display.shading.light = "STUDIO"
            scene.display.shading.color_type = "MATERIAL"
            scene.display.render_aa = "8"
        self.ground.hide_render = False
        with open(self._render_to("image.png"), "rb") as handle:
            return handle.read()

    def _draw_masks(self, n: int) -> tuple[list[int], list[list[int] | None], list[bool], np.ndarray]:
        import cv2

        scene = self.scene
        scene.render.engine = "BLENDER_WORKBENCH"
        scene.display.shading.light = "FLAT"
        scene.display.shading.color_type = "OBJECT"
        scene.display.render_aa = "OFF"
        world_color = tuple(self.scene.world.color)
        self.scene.world.color = MASK_LINEAR[0]
        self.ground.color = (*MASK_LINEAR[1], 1.0)
        for k, obj in enumerate(self.slots[:n]):
            obj.color = (*MASK_LINEAR[2 + k], 1.0)
        mask = cv2.cvtColor(cv2.imread(self._render_to("mask.png"), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
        self.scene.world.color = world_color
        labels = _mask_labels(mask)
        counts = np.bincount(labels.ravel(), minlength=len(MASK_LINEAR))
        visible, boxes, at_edge = [], [], []
        for k in range(n):
            ys, xs = np.nonzero(labels == 2 + k) if counts[2 + k] else ((), ())
            visible.append(int(counts[2 + k]))
            if len(xs):
                boxes.append([int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1])
                h, w = labels.shape
                at_edge.append(bool(xs.min() == 0 or ys.min() == 0 or xs.max() == w - 1 or ys.max() == h - 1))
            else:
                boxes.append(None)
                at_edge.append(False)
        return visible, boxes, at_edge, labels


def _main() -> None:
    """``python -m vicogym.renderers.clevr FD SETTINGS PARENT``: serve renders on socket FD."""
    import json
    import sys
    from multiprocessing.connection import Connection

    fd, settings, parent = int(sys.argv[1]), RenderSettings(**json.loads(sys.argv[2])), int(sys.argv[3])
    _serve(Connection(fd), settings, parent)


if __name__ == "__main__":
    _main()
