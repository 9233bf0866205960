"""``vicogym/Evidence-v0``: reading visual evidence by acting on it (ViewCraft)."""

from __future__ import annotations

import copy
import json
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from vicogym.errors import GenerationError, InvalidEdit
from vicogym.evidence import interface
from vicogym.evidence.protocol import MAX_TEXT, contract_text, parse_action
from vicogym.programs.evidence import CONTRACT_TEXT, score_answer, score_task
from vicogym.registry import check_settings
from vicogym.renderers.evidence import LABEL_PX, EvidenceRenderer
from vicogym.sources.evidence import FAMILIES, TaskSource, family_module
from vicogym.spaces import TextSpace, to_charset
from vicogym.structures.evidence import (
    HIDDEN_LEVELS,
    Note,
    Task,
    Tile,
    View,
    crop_view,
    point_to_unit,
    region_to_unit,
    sheet_view,
    support,
    whole_view,
)
from vicogym.validation import MAX_SEED, as_text, brief, did_you_mean, error_text, is_int, json_safe

#: geometry columns of ``obs["geometry"]``, one row per sent image (-1 where none)
GEOMETRY = ("view", "unit", "x0", "y0", "x1", "y1", "scale", "width", "height")
#: the largest value a geometry cell holds (unit pixels, scales)
GEOMETRY_MAX = 1.0e6
#: how many units a thumbnail sheet holds at most
SHEET_UNITS = 20
STARTS = ("task", "all")
#: the smallest zoom region, in pixels of the unit it is cut from
MIN_REGION_PX = 4
#: how many drawn tasks in a row may fail their checks before reset gives up
MAX_DRAWS = 32
#: a family's extra package -> the pip extra that installs it
PIP_EXTRAS = {"bpy": "clevr"}


@dataclass(frozen=True)
class EvidenceConfig:
    """Settings of :class:`EvidenceEnv`. JSON-serialisable."""

    #: task families (``forms``, ``slides``, ``multichart``, ``clevr_detail``,
    #: ``clevr_sequence``, ``all``), data sets (``funsd:FOLDER``, ``jsonl:FILE``), or a list
    tasks: Any = "forms"
    #: the executor ``env.unwrapped.play()`` runs (``simulated``, ``direct``,
    #: ``openai:MODEL@URL``); ``direct`` sends the whole input at reset
    executor: str | None = None
    #: what is sent at reset: the task's own start (``task``) or every unit (``all``)
    start: str = "task"
    family_settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: settings of the region renderers, by renderer (``clevr``: ``threads``, ``timeout``)
    render_settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: a skill's interface expression (:mod:`vicogym.evidence.interface`): which units
    #: are sent at reset and how every view is drawn; ``{}``: the task's own start, plain
    #: views
    interface: Mapping[str, Any] = field(default_factory=dict)
    max_steps: int = 16
    #: images per request: the newest this many views are sent (and may be zoomed)
    max_images: int = 6
    max_crops: int = 8
    max_notes: int = 8
    max_regions: int = 2
    #: a view's longest side, in pixels (a unit is fitted into it); at least 256, what a
    #: thumbnail sheet of 20 units under their labels needs
    view_size: int = 768
    max_question_chars: int = 2048
    max_history_chars: int = 8192

    def __post_init__(self) -> None:
        for name, low, high in (("max_steps", 1, 256), ("max_images", 1, 16), ("max_crops", 0, 256),
                                ("max_notes", 0, 256), ("max_regions", 1, 8), ("view_size", 256, 4096),
                                ("max_question_chars", 16, 1 << 16), ("max_history_chars", 16, 1 << 20)):
            v = getattr(self, name)
            if not is_int(v, low, high):
                raise ValueError(f"expected {name} as a whole number in [{low}, {high}], got {v!r}")
        if self.start not in STARTS:
            raise ValueError(f"expected start in {STARTS}, got {self.start!r}")
        if self.executor is not None and not isinstance(self.executor, str):
            raise ValueError(f"expected executor as a spec string (simulated, direct, openai:MODEL@URL), got "
                             f"{self.executor!r}")
        for name in ("family_settings", "render_settings"):
            value = getattr(self, name)
            if not isinstance(value, Mapping) or not all(isinstance(v, Mapping) for v in value.values()):
                raise ValueError(f"expected {name} as {{name: {{setting: value}}}}, got {value!r}")
        from vicogym.renderers.evidence import REGION_RENDERERS

        renderers = {m.rsplit(".", 1)[-1] for m in REGION_RENDERERS.values()}
        for name in self.render_settings:
            if name not in renderers:
                hint = did_you_mean(name, renderers)
                raise ValueError(f"render_settings names {name!r}, which is no region renderer{hint} (renderers: "
                                 f"{', '.join(sorted(renderers))})")
        tasks = self.tasks
        object.__setattr__(self, "tasks", list(tasks) if isinstance(tasks, (list, tuple)) else tasks)
        object.__setattr__(self, "interface", interface.validate(self.interface))

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class EvidenceEnv(gym.Env):
    """
    ## Description
    One episode is one task: a question over a pool of visual units (a form page, the
    slides of a deck, charts, CLEVR frames, photos). The agent (the executor being trained
    or evaluated) reads the evidence by acting on it, one JSON action per step
    (:mod:`vicogym.evidence.protocol`): ``zoom`` into at most ``max_regions`` regions of a
    sent image (a new view cut from the *original* unit, re-drawn at the higher scale for
    units the package draws), ``note`` points as numbered rings burned into later views,
    ``view`` more units of the pool, ``compose`` units into one labelled sheet, and
    ``answer``.

    ## Action Space
    ``Text``: one JSON object (a dict is accepted too), e.g. ``{"action": "zoom",
    "image": 0, "regions": [{"x0": 0.1, "y0": 0.2, "x1": 0.4, "y1": 0.3}]}``.

    ## Observation Space
    ``Dict`` of
    - ``question``: ``Text`` (the question and its answer contract);
    - ``images``: ``Box(0, 255, (max_images, view_size, view_size, 3), uint8)``: the
      newest ``max_images`` views, oldest first, each at the top-left of its slot on white;
    - ``geometry``: ``Box(-1, 1e6, (max_images, 9), float32)``, per slot ``view, unit, x0,
      y0, x1, y1, scale, width, height``: the view's id (what ``image`` names), the unit
      and crop box (unit pixels) of its first tile, view pixels per unit pixel, and the
      view's size (-1 in empty slots; a sheet's ``unit`` is -1);
    - ``n_images``: ``Discrete(max_images + 1)``, the filled slots;
    - ``history``: ``Text``, the actions so far as JSON lines (the newest that fit);
    - ``budget``: ``Box(0, 2**31 - 1, (4,), int64)``: steps, crops and notes left, and
      ``max_images``.

    ## Rewards
    At ``answer``: the task's own score in [0, 1] (ANLS for form fields, relaxed accuracy
    for chart values, the option letter, VQA short answers). Running out of steps
    truncates the episode with 0. Every other step: 0.

    ## Starting State
    ``reset(seed=...)`` draws a task (``options={"task": Task or dict, "payloads": ...}``
    plays a given one; ``options={"index": i}`` task ``i`` of a data set) and sends its
    start: the first unit, a thumbnail sheet of the pool, or (``start="all"``, the Direct
    baseline) every unit at once. A skill's ``interface`` expression
    (:mod:`vicogym.evidence.interface`) may choose other units to send first, add crops of
    them, and draws every view with its presentation (upscaling, a grid, timestamps, ring
    and label styles); it never changes the task drawn.

    ## Episode End
    Terminated by ``answer``; truncated after ``max_steps`` steps. A step after the end
    changes nothing (not even the step count) and answers the error ``episode_over`` with
    reward 0 and the ending's own ``terminated`` / ``truncated`` (Gymnasium leaves the case
    open; the trainers' adapters answer it the same way without stepping).

    ## Arguments
    See :class:`EvidenceConfig`.

    ## Version History
    - v0: first version.

    An invalid action, or one over a budget, uses a step and changes nothing else (it is
    recorded in ``history`` with its ``error`` code, as every step is): ``info["error"]`` is
    ``{code, message, op, field}`` with a code of
    :data:`vicogym.evidence.protocol.ERROR_CODES` (or ``malformed``, ``bad_field``,
    ``bad_value``; ``unhandled`` for a failure below the protocol, a bug worth reporting).
    Nothing an action holds makes ``step`` raise.

    ``info`` always carries the **evidence support** of the views sent so
    far (``support``: per evidence item the detail shown in view pixels and whether it was
    legible; exact, from geometry; over every view sent in the episode, those that have
    left the request included, since the executor saw them and its replies, notes and
    conversation may carry what it read), the same over the current request's views
    alone (``support_now``: what the executor can still look at), whether the task's
    start hides its answer (``hidden``: :meth:`hidden_report`'s measurement, for a family
    that promises it), the sent views' geometry and provenance (``views``),
    the step and the task's id and family; at the end ``score``, ``answer`` and
    ``outcome`` (``answered``, ``out_of_steps``).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 1}
    env_id: ClassVar[str] = "vicogym/Evidence-v0"
    version: ClassVar[int] = 0
    kind: ClassVar[str] = "agent"
    config_class: ClassVar[type] = EvidenceConfig
    smoke_settings: ClassVar[dict[str, Any]] = {"view_size": 256, "max_images": 4}

    def __init__(self, render_mode: str | None = None, config: EvidenceConfig | None = None, **kwargs: Any):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"expected render_mode in {self.metadata['render_modes']} or None, got {render_mode!r}")
        check_settings(self.env_id, kwargs, [f.name for f in fields(EvidenceConfig)])
        self.render_mode = render_mode
        self.config = replace(config, **kwargs) if config is not None else EvidenceConfig(**kwargs)
        c = self.config
        self.source = TaskSource(c.tasks, c.family_settings, c.view_size)
        from vicogym.arm import require_module

        for module in sorted(self.source.extras()):
            require_module(module, PIP_EXTRAS.get(module, module), f"{self.env_id} with tasks={c.tasks!r}")
        known = set(FAMILIES) | {t.family for tasks in self.source._datasets.values() for t in tasks}
        for name in interface.families_named(c.interface):
            if name not in known:
                raise ValueError(f"the interface expression names the task family {name!r}, which no task here has"
                                 f"{did_you_mean(name, known)} (families: {', '.join(sorted(known))})")
        self.renderer = EvidenceRenderer(c.render_settings)
        self.present = interface.style(c.interface)
        self.style = interface.view_style(self.present)
        n, s = c.max_images, c.view_size
        self.observation_space = spaces.Dict({
            "question": TextSpace(c.max_question_chars),
            "images": spaces.Box(0, 255, shape=(n, s, s, 3), dtype=np.uint8),
            "geometry": spaces.Box(-1.0, GEOMETRY_MAX, shape=(n, len(GEOMETRY)), dtype=np.float32),
            "n_images": spaces.Discrete(n + 1),
            "history": TextSpace(c.max_history_chars),
            "budget": spaces.Box(0, 2**31 - 1, shape=(4,), dtype=np.int64),
        })
        self.action_space = TextSpace(4096)
        self._executor: Any = None
        self.task: Task | None = None
        self.payloads: dict[str, bytes] = {}
        self._clear()

    # -- state ---------------------------------------------------------------------------
    def _clear(self) -> None:
        self.views: list[View] = []
        self.pixels: dict[int, np.ndarray] = {}
        self.notes: list[Note] = []
        self.history: list[dict[str, Any]] = []
        self.steps = 0
        self.crops = 0
        self._done = True
        self._ending = (False, False)

    @property
    def start(self) -> str:
        """What reset sends: ``all`` for Direct, else the task's own start."""
        if self.config.start == "all" or (self.config.executor or "").split(":", 1)[0] == "direct":
            return "all"
        return "task"

    def visible(self) -> list[View]:
        """The views of the next request: the newest ``max_images``."""
        return self.views[-self.config.max_images:]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = set(options) - {"task", "payloads", "index", "episode"}
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}; use 'task' (+ 'payloads') or 'index'")
        if "task" in options:
            task = options["task"]
            task = Task.from_dict(task) if isinstance(task, Mapping) else task
            if not isinstance(task, Task):
                raise ValueError("expected options['task'] as a Task or its dict")
            payloads = dict(options.get("payloads") or {})
            self.renderer.add_payloads(payloads)
            if not payloads:
                task, payloads = self.renderer.prepare(task)
        else:
            if "index" in options:
                size = self.source.size()
                index = options["index"]
                if size is None or not is_int(index, 0, size - 1):
                    raise ValueError(f"options['index'] picks a task of a data set; expected a whole number in "
                                     f"[0, {(size or 1) - 1}] with data-set tasks only, got {index!r}")
                drawn = self.source.task(index)
                task, payloads = self.renderer.prepare(drawn)
            else:
                task, payloads = self._draw()
        self.task, self.payloads = task, payloads
        self._clear()
        self._done = False
        for view in self._start_views(task):
            self._send(view)
        return self._observation(), self._info()

    def _draw(self) -> tuple[Task, dict[str, bytes]]:
        """A drawn task that passes its checks with what was drawn (a family's source
        cannot see its render; a chart whose label runs under its legend is drawn again)."""
        from vicogym.checks.evidence import check_task

        problems = []
        for _ in range(MAX_DRAWS):
            seed = int(self.np_random.integers(MAX_SEED))
            drawn = self.source.draw(np.random.default_rng(seed))
            task, payloads = self.renderer.prepare(drawn)
            problem = check_task(task, self._facts(task))
            if problem is None and task.family in FAMILIES and getattr(family_module(task.family), "HIDES", False):
                report = self.hidden_report(task, seed)
                task = replace(task, meta={**task.meta, "hidden": report})
                if not report["hidden"]:
                    problem = (f"its start view shows the answer: the start drawn for another answer "
                               f"({report['counterfactual']}) differs by {report['levels']} levels, over "
                               f"{report['bound']}")
            if problem is None:
                return task, payloads
            problems.append(problem)
        raise GenerationError(f"{MAX_DRAWS} drawn tasks in a row failed their checks (the last: {problems[-1]}); "
                              f"check the family settings {dict(self.config.family_settings)}")

    def hidden_report(self, task: Task, seed: int) -> dict[str, Any] | None:
        """Whether ``task``'s own start (plain, at this environment's ``view_size``) hides
        its answer, measured: the start is drawn again for each of the family's
        counterfactuals (the same task with another answer: another value of the same kind
        and length, another option checked, ...; drawn from ``seed``) and compared pixel
        for pixel (the tiles of the units it changes: the others draw the same pixels). It
        hides the answer when one draws within :data:`HIDDEN_LEVELS` of it everywhere:
        ``{"hidden", "levels" (the least largest difference found), "bound",
        "counterfactual" (what was changed), "tried", "seed", "view_size"}``; ``None`` for a
        task whose family draws no counterfactuals (a loaded data set's images). A family
        that promises a hidden start (``HIDES``) has every drawn task measured so, and one
        that is not hidden drawn again; the others are measured on request."""
        if task.family not in FAMILIES or not hasattr(family_module(task.family), "counterfactuals"):
            return None
        tiles = [t for v in self._start_views(task, plain=True) for t in v.tiles]
        base: dict[int, np.ndarray] = {}
        best: tuple[int, str] | None = None
        others = family_module(task.family).counterfactuals(task, np.random.default_rng([seed, 1]))
        for tried, other in enumerate(others, 1):  # noqa: B007 (tried is reported after the loop)
            other, _ = self.renderer.prepare(other)
            # a tile of a unit the counterfactual leaves as it was draws the same pixels
            levels = 0
            for k, tile in enumerate(tiles):
                if other.units[tile.unit] == task.units[tile.unit]:
                    continue
                if k not in base:
                    base[k] = self.renderer.draw_tile(task.units[tile.unit], tile).astype(np.int16)
                drawn = self.renderer.draw_tile(other.units[tile.unit], tile).astype(np.int16)
                levels = max(levels, int(np.abs(drawn - base[k]).max()))
            if best is None or levels < best[0]:
                best = (levels, str(other.meta.get("counterfactual", "")))
            if levels <= HIDDEN_LEVELS:
                break
        if best is None:
            return {"hidden": False, "levels": None, "bound": HIDDEN_LEVELS, "counterfactual": None, "tried": 0,
                    "seed": seed, "view_size": self.config.view_size}
        return {"hidden": best[0] <= HIDDEN_LEVELS, "levels": best[0], "bound": HIDDEN_LEVELS,
                "counterfactual": best[1], "tried": tried, "seed": seed, "view_size": self.config.view_size}

    def _facts(self, task: Task) -> Any:
        return getattr(self.renderer.region_renderer(task.units[0].kind), "facts", None)

    def _start_views(self, task: Task, plain: bool = False) -> list[View]:
        """What reset sends for ``task``: Direct's every unit, a skill's choice, or the
        task's own start (its units no larger than ``task.start_scale``); ``plain``: the
        task's own start with no skill's presentation (what the hidden check compares)."""
        c, made = self.config, {"step": 0, "action": "start"}
        direct = self.start == "all" and not plain
        present = interface.style({}) if plain else self.present
        style = {} if plain else self.style
        plan = None if direct or plain else interface.start_plan(c.interface, task)
        how = "all" if direct else task.start
        n = len(task.units)
        own = plan is None or plan["units"] is None
        cap = task.start_scale if own and not direct else None
        if not own:
            chosen = plan["units"]
        else:
            chosen = [0] if how == "first" or n == 1 else list(range(n)) if how == "all" else None

        def sheet(view_id: int, units: list[int]) -> View:
            return self._sheet(view_id, units, made, task=task, present=present, style=style, max_scale=cap)

        if chosen is None:
            views = [sheet(0, list(range(min(n, SHEET_UNITS))))]
        elif len(chosen) <= c.max_images:
            views = [whole_view(k, i, task.units[i], c.view_size, (), made, style, cap) for k, i in enumerate(chosen)]
        else:
            per = -(-len(chosen) // c.max_images)
            views = [sheet(k, chosen[j:j + per]) for k, j in enumerate(range(0, len(chosen), per))]
        rule = plan["crops"] if plan is not None else None
        if rule is not None:
            whole = [v.tiles[0].unit for v in views if len(v.tiles) == 1]
            for i in whole:
                unit = task.units[i]
                for box in interface.crop_boxes(unit.width, unit.height, rule["rows"], rule["cols"],
                                                rule.get("overlap", 0.1)):
                    if len(views) >= c.max_images:
                        break
                    views.append(crop_view(len(views), i, unit, box, c.view_size, (),
                                           {**made, "crops": [rule["rows"], rule["cols"]]}, present["upscale"],
                                           style))
        return views

    def _sheet(self, view_id: int, chosen: list[int], made: Mapping[str, Any], cols: int | None = None,
               notes: tuple[Note, ...] = (), task: Task | None = None, present: Mapping[str, Any] | None = None,
               style: Mapping[str, Any] | None = None, max_scale: float | None = None) -> View:
        """A labelled sheet of units ``chosen`` of ``task`` (the episode's), labelled as the
        presentation says."""
        task, present = task or self.task, present or self.present
        labels = present["labels"]
        cols = cols or present["sheet_cols"] or _cols(len(chosen))
        return sheet_view(view_id, [(u, task.units[u]) for u in chosen], cols, self.config.view_size,
                          0 if labels == "none" else LABEL_PX, notes, made, labels,
                          self.style if style is None else style, max_scale)

    def _send(self, view: View) -> None:
        self._keep(view, self._drawn(view))

    def _drawn(self, view: View) -> np.ndarray:
        """The pixels of ``view`` of the current task (nothing kept)."""
        return self.renderer.draw(view, self.task.units)

    def _keep(self, view: View, pixels: np.ndarray) -> None:
        self.views.append(view)
        self.pixels[view.id] = pixels
        if len(self.views) > self.config.max_images:  # only what a request can still hold is kept drawn
            self.pixels.pop(self.views[-self.config.max_images - 1].id, None)

    def view_pixels(self, view_id: int) -> np.ndarray:
        """The pixels of a sent view still in the request."""
        return self.pixels[view_id]

    # -- the protocol --------------------------------------------------------------------
    @staticmethod
    def score_response(response: str, ground_truth: str, extra_info: Mapping[str, Any] | None = None,
                       **kwargs: Any) -> float:
        """A stored task row's reward for ``response`` (what the verl reward calls): the
        score the answer tool recorded in the trajectory (``extra_info["evidence_score"]``,
        set by :mod:`vicogym.trainers.verl_agent`'s tools), else the answer extracted from the text
        (:func:`vicogym.clients.extract_answer`, ``extractor`` as given) scored by the task's scorer
        against the row's ground truth (JSON: ``answer``, ``golds``, ``scorer``, ``options``).
        Any response gets a score (an answer the answer tool would refuse, longer than
        :data:`~vicogym.evidence.protocol.MAX_TEXT` characters, scores 0.0); a ground truth
        or recorded score that is not what the rows hold raises
        :class:`vicogym.scoring.RowError`."""
        from vicogym.clients import extract_answer
        from vicogym.scoring import row_error

        recorded = extra_info.get("evidence_score") if isinstance(extra_info, Mapping) else None
        if recorded is not None:
            if isinstance(recorded, bool) or not isinstance(recorded, numbers.Real) or not 0 <= recorded <= 1:
                raise row_error(EvidenceEnv.env_id, "extra_info.evidence_score (the answer tool's score) is no "
                                "number in [0, 1]", recorded)
            return float(recorded)
        truth = _ground_truth(ground_truth)
        answer = extract_answer(as_text(response), kwargs.get("extractor", "auto"))
        if len(answer) > MAX_TEXT:
            return 0.0
        return score_answer(truth["scorer"], answer, truth["answer"], truth["golds"], len(truth["options"]))

    def step(self, action: Any):
        """One action (see the class's docstring). An action that is not valid, or that
        passes a budget, is rejected with a typed ``info["error"]`` and changes nothing but
        the step count: it uses a step and is recorded in ``history`` (``error``: its code),
        as every action is; nothing an action holds (an integer of 5000 digits, NaN, nesting
        100,000 deep, bytes, objects) makes ``step`` raise. A step after the episode ended
        changes nothing at all and is answered with the error ``episode_over`` (reward 0,
        the ending's own ``terminated`` and ``truncated``). ``RuntimeError`` only before the
        first ``reset`` (``gym.make``'s order check raises before that)."""
        if self.task is None:
            raise RuntimeError("no task yet; call reset() before step()")
        if self._done:
            info = self._info()
            info["error"] = InvalidEdit("episode_over", "the episode has ended; call reset() before step()").to_dict()
            return self._observation(), 0.0, *self._ending, info
        step = self.steps + 1
        record: dict[str, Any] = {"step": step, "action": json_safe(action)}
        reward, terminated, error = 0.0, False, None
        extra: dict[str, Any] = {}
        new_views: list[tuple[View, np.ndarray]] = []
        new_notes: list[Note] = []
        crops = 0
        try:
            parsed = parse_action(action, self.config.max_regions)
            record["action"] = json_safe(parsed)  # regions as lists, as JSON reads them
            if parsed["action"] == "answer":
                reward = float(score_task(self.task, parsed["answer"]))
                terminated = True
                extra = {"score": reward, "answer": self.task.answer, "outcome": "answered",
                         "response": parsed["answer"]}
            else:
                views, new_notes = self._plan(parsed, step)
                new_views = [(view, self._drawn(view)) for view in views]  # drawn before anything is kept
                crops = sum(v.made_by.get("action") == "zoom" for v in views)
                record["views"] = [v.id for v in views]
        except Exception as exc:  # nothing is kept: the action is rejected, the state as it was
            if not isinstance(exc, InvalidEdit):  # a bug worth reporting, not the agent's to pay for with a crash
                exc = InvalidEdit("unhandled", f"{error_text(exc)} on this action")
            reward, terminated, extra, new_views, new_notes, crops = 0.0, False, {}, [], [], 0
            error = exc.to_dict()
            record = {"step": step, "action": record["action"], "error": exc.code}
        # commit: the step, its record and what the action made, together
        self.steps = step
        self.history.append(record)
        self.notes.extend(new_notes)
        for view, pixels in new_views:
            self._keep(view, pixels)
        self.crops += crops
        truncated = not terminated and self.steps >= self.config.max_steps
        if truncated:
            extra = {"score": 0.0, "answer": self.task.answer, "outcome": "out_of_steps", "response": None}
        self._done = terminated or truncated
        self._ending = (terminated, truncated)
        info = self._info()
        info.update(extra)
        if error is not None:
            info["error"] = error
        return self._observation(), float(reward), terminated, truncated, info

    def _image(self, number: int, action: str, field: str = "image") -> View:
        shown = {v.id: v for v in self.visible()}
        if number not in shown:
            raise InvalidEdit("unknown_image", f"image {brief(number)} is not in this request; the images sent are "
                              f"{sorted(shown)}", op=action, field=field)
        return shown[number]

    def _units(self, units: list[int], action: str) -> None:
        n = len(self.task.units)
        bad = [u for u in units if u >= n]
        if bad:
            raise InvalidEdit("unknown_unit", f"unit {brief(bad[0])} is not in the task's pool of {n} (units 0-"
                              f"{n - 1})",
                              op=action, field="units")

    def _plan(self, parsed: Mapping[str, Any], step: int) -> tuple[list[View], list[Note]]:
        """The views and notes ``parsed`` makes at step ``step``, or :class:`InvalidEdit`;
        nothing changed either way. Action ``name`` of the protocol's table
        (:data:`~vicogym.evidence.protocol.ACTION_TABLE`) is planned by ``_plan_<name>``
        (``answer`` ends the episode in :meth:`step` instead)."""
        name = parsed["action"]
        next_id = self.views[-1].id + 1 if self.views else 0
        return getattr(self, f"_plan_{name}")(parsed, next_id, {"step": step, "action": name})

    def _plan_zoom(self, parsed: Mapping[str, Any], next_id: int, made: dict[str, Any]
                   ) -> tuple[list[View], list[Note]]:
        c, name, units = self.config, parsed["action"], self.task.units
        source = self._image(parsed["image"], name)
        if self.crops + len(parsed["regions"]) > c.max_crops:
            raise InvalidEdit("crop_budget", f"{len(parsed['regions'])} more zoom views would pass max_crops="
                              f"{c.max_crops} ({c.max_crops - self.crops} left); answer or view whole units",
                              op=name, field="regions")
        views = []
        for k, region in enumerate(parsed["regions"]):
            try:
                tile, crop = region_to_unit(source, region)
            except ValueError as exc:
                raise InvalidEdit("bad_region", f"regions[{k}]: {exc}", op=name, field=f"regions[{k}]") from None
            w, h = crop[2] - crop[0], crop[3] - crop[1]
            if w < MIN_REGION_PX or h < MIN_REGION_PX:
                raise InvalidEdit("bad_region", f"regions[{k}] covers {w:.2g} x {h:.2g} pixels of unit "
                                  f"{tile.unit}; a zoom needs at least {MIN_REGION_PX} x {MIN_REGION_PX}",
                                  op=name, field=f"regions[{k}]")
            views.append(crop_view(next_id + k, tile.unit, units[tile.unit], crop, c.view_size, self.notes,
                                   {**made, "from": source.id, "region": list(region), "note": parsed["note"]},
                                   self.present["upscale"], self.style))
        return views, []

    def _plan_note(self, parsed: Mapping[str, Any], next_id: int, made: dict[str, Any]
                   ) -> tuple[list[View], list[Note]]:
        c, name = self.config, parsed["action"]
        if len(self.notes) + len(parsed["notes"]) > c.max_notes:
            raise InvalidEdit("note_budget", f"{len(parsed['notes'])} more notes would pass max_notes="
                              f"{c.max_notes} ({c.max_notes - len(self.notes)} left)", op=name, field="notes")
        notes = []
        for k, note in enumerate(parsed["notes"]):
            view = self._image(note["image"], name, f"notes[{k}].image")
            where = point_to_unit(view, *note["at"])
            if where is None:
                raise InvalidEdit("bad_region", f"notes[{k}].at lies on no image of view {view.id}", op=name,
                                  field=f"notes[{k}].at")
            notes.append(Note(len(self.notes) + k, where[0], where[1], note["text"]))
        return [], notes

    def _plan_view(self, parsed: Mapping[str, Any], next_id: int, made: dict[str, Any]
                   ) -> tuple[list[View], list[Note]]:
        c, name, units = self.config, parsed["action"], self.task.units
        self._units(parsed["units"], name)
        if len(parsed["units"]) > c.max_images:
            raise InvalidEdit("image_budget", f"{len(parsed['units'])} units in one view; a request holds "
                              f"{c.max_images} images (compose them into a sheet)", op=name, field="units")
        return [whole_view(next_id + k, u, units[u], c.view_size, self.notes, made, self.style)
                for k, u in enumerate(parsed["units"])], []

    def _plan_compose(self, parsed: Mapping[str, Any], next_id: int, made: dict[str, Any]
                      ) -> tuple[list[View], list[Note]]:
        name, chosen = parsed["action"], parsed["units"]
        self._units(chosen, name)
        if len(chosen) > SHEET_UNITS:
            raise InvalidEdit("image_budget", f"a sheet holds at most {SHEET_UNITS} units, got {len(chosen)}",
                              op=name, field="units")
        cols = parsed.get("cols") or _cols(len(chosen))
        try:
            sheet = self._sheet(next_id, chosen, {**made, "units": chosen, "cols": cols}, cols, tuple(self.notes))
        except ValueError as exc:
            raise InvalidEdit("image_budget", str(exc), op=name, field="cols") from None
        return [sheet], []

    # -- what the agent sees ---------------------------------------------------------------
    def question_text(self) -> str:
        task = self.task
        text = task.question
        if task.options:
            text += "\n" + "\n".join(f"{chr(65 + i)}. {o}" for i, o in enumerate(task.options))
        return text + "\n" + CONTRACT_TEXT[task.contract]

    def _observation(self) -> dict[str, Any]:
        c = self.config
        n, s = c.max_images, c.view_size
        images = np.full((n, s, s, 3), 255, np.uint8)
        geometry = np.full((n, len(GEOMETRY)), -1.0, np.float32)
        shown = self.visible()
        for k, view in enumerate(shown):
            pixels = self.pixels[view.id]
            images[k, : pixels.shape[0], : pixels.shape[1]] = pixels
            tile = view.tiles[0]
            unit = tile.unit if len(view.tiles) == 1 else -1
            crop = tile.crop if len(view.tiles) == 1 else (-1, -1, -1, -1)
            scale = tile.scale if len(view.tiles) == 1 else -1
            geometry[k] = (view.id, unit, *crop, scale, view.width, view.height)
        lines, total = [], 0
        for record in reversed(self.history):
            line = json.dumps(record, sort_keys=True, ensure_ascii=False)
            if total + len(line) + 1 > c.max_history_chars:
                break
            lines.append(line)
            total += len(line) + 1
        budget = np.array([max(0, c.max_steps - self.steps), max(0, c.max_crops - self.crops),
                           max(0, c.max_notes - len(self.notes)), c.max_images], np.int64)
        return {"question": to_charset(self.question_text()[: c.max_question_chars]), "images": images,
                "geometry": geometry, "n_images": len(shown),
                "history": to_charset("\n".join(reversed(lines))), "budget": budget}

    def _info(self) -> dict[str, Any]:
        task = self.task
        return {"task_id": task.id, "family": task.family, "step": self.steps,
                "hidden": copy.deepcopy(task.meta.get("hidden")),
                "support": support(task.evidence, self.views), "support_now": support(task.evidence, self.visible()),
                "views": [v.to_dict() for v in self.visible()], "contract": task.contract}

    def request(self) -> dict[str, Any]:
        """What an executor is sent now: the question, the protocol, the images of the
        request (native size, with their geometry) and the budgets."""
        c = self.config
        return {"question": self.question_text(), "protocol": contract_text(c.max_regions),
                "contract": CONTRACT_TEXT[self.task.contract],
                "images": [{"id": v.id, "pixels": self.pixels[v.id], "view": v.to_dict()} for v in self.visible()],
                "units": [{"index": i, "kind": u.kind, "title": u.title, "width": u.width, "height": u.height,
                           "max_scale": u.max_scale} for i, u in enumerate(self.task.units)],
                "view_size": c.view_size,
                "history": list(self.history),
                "budget": self.budget()}

    def budget(self) -> dict[str, int]:
        """What is left: steps, crops (zooms) and notes, and how many of the newest images
        can be named."""
        c = self.config
        return {"steps": c.max_steps - self.steps, "crops": c.max_crops - self.crops,
                "notes": c.max_notes - len(self.notes), "images": c.max_images}

    # -- replay and verification -----------------------------------------------------------
    def unit_pixels(self, index: int) -> np.ndarray:
        """Unit ``index`` of the current task whole, at full resolution (scale 1)."""
        unit = self.task.units[index]
        view = View(-1, unit.width, unit.height, (Tile(index, unit.frame, 1.0),))
        return self.renderer.draw(view, self.task.units)

    def draw_view(self, task: Mapping[str, Any] | Task, view: Mapping[str, Any], payloads: Mapping[str, bytes] = {}
                  ) -> np.ndarray:
        """The pixels of a view recorded in a trace, rebuilt from the trace alone."""
        task = Task.from_dict(task) if isinstance(task, Mapping) else task
        self.renderer.add_payloads(payloads)
        return self.renderer.draw(View.from_dict(view), task.units)

    def score(self, task: Mapping[str, Any] | Task, response: str) -> float:
        """``task``'s score of ``response`` (what ``answer`` is rewarded with)."""
        return score_task(Task.from_dict(task) if isinstance(task, Mapping) else task, response)

    def check_task(self, task: Mapping[str, Any] | Task) -> str | None:
        """Why a stored task's answer is not the one its family's programs derive (or its
        evidence is not legible at full detail); ``None`` when it holds."""
        from vicogym.checks.evidence import check_task

        task = Task.from_dict(task) if isinstance(task, Mapping) else task
        return check_task(task, self._facts(task))

    def render(self):
        if not self.views:
            return None
        return self.pixels[self.views[-1].id].copy()

    @property
    def executor(self) -> Any:
        """The configured executor (built on first use)."""
        if self._executor is None:
            if self.config.executor is None:
                raise ValueError("no executor configured; make the environment with executor='simulated', "
                                 "'direct' or 'openai:MODEL@URL'")
            from vicogym.evidence.executors import make_executor

            self._executor = make_executor(self.config.executor)
        return self._executor

    def play(self, seed: int | None = None, skill: Any = None, options: Mapping[str, Any] | None = None
             ) -> dict[str, Any]:
        """One episode with the configured executor; its trace (see
        :func:`vicogym.evidence.episodes.play`)."""
        from vicogym.evidence.episodes import play

        return play(self, self.executor, seed=seed, skill=skill, options=options)

    def close(self) -> None:
        self.renderer.close()


def _cols(n: int) -> int:
    return max(1, int(np.ceil(np.sqrt(n))))


def _ground_truth(ground_truth: Any) -> dict[str, Any]:
    """An Evidence-v0 row's ground truth, checked: ``answer`` (text), ``scorer`` (one of
    :data:`~vicogym.structures.evidence.SCORERS`), ``golds`` and ``options`` (lists of
    text); :class:`vicogym.scoring.RowError` otherwise."""
    from vicogym.scoring import ground_truth_json, row_error
    from vicogym.structures.evidence import SCORERS

    what = "answer, golds, scorer and options (rows of `vicogym generate vicogym/Evidence-v0`)"
    truth = ground_truth_json(EvidenceEnv.env_id, ground_truth, what)
    if truth.get("scorer") not in SCORERS:
        raise row_error(EvidenceEnv.env_id, f"ground truth names no scorer of {', '.join(SCORERS)}",
                        truth.get("scorer"))
    if not isinstance(truth.get("answer"), str):
        raise row_error(EvidenceEnv.env_id, "ground truth's answer is no text", truth.get("answer"))
    for name in ("golds", "options"):
        value = truth.get(name, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise row_error(EvidenceEnv.env_id, f"ground truth's {name} is no list of text", value)
    return {"answer": truth["answer"], "scorer": truth["scorer"], "golds": truth.get("golds", []),
            "options": truth.get("options", [])}
