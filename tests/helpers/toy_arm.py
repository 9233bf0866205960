"""A toy arm that exists only in the tests: a row of coloured squares, "how many?".

It touches no file of the core or of the chart arm; registering it (in ``conftest.py``)
puts it through the registry-wide suite, generation and verification, which proves
that an arm is added by adding files.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from vicogym.answers import exact_match
from vicogym.arm import Arm
from vicogym.core import Edit, ExportHints, Render, Sample, Seed
from vicogym.envs.base import EnvConfig, VicoEnv
from vicogym.errors import GenerationError, InvalidEdit, register_error_codes
from vicogym.images import ImagePolicy

ERROR_CODES = {"too_many": "more squares than the canvas holds"}
register_error_codes("toy", ERROR_CODES)
COLORS = {"red": (220, 40, 40), "blue": (40, 60, 220), "green": (40, 170, 60)}
QUESTION = "How many squares are there?"
HEIGHT, WIDTH, SIDE, GAP = 24, 112, 8, 13


@dataclass(frozen=True)
class Squares:
    count: int
    color: str = "red"

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "color": self.color}

    def payloads(self) -> dict[str, bytes]:
        return {}


@dataclass(frozen=True)
class ToyConfig(EnvConfig):
    max_squares: int = 8


class ToyArm(Arm):
    name = "toy"
    export = ExportHints(ability="counting", prompt_suffix="\nAnswer with a number.")
    error_codes = ERROR_CODES

    @property
    def image_policy(self) -> ImagePolicy:
        return ImagePolicy("fixed", HEIGHT, WIDTH, fill=0)

    def decode(self, text: str, payloads: Mapping[str, bytes] | None = None) -> Squares:
        data = json.loads(text)
        return Squares(int(data["count"]), str(data["color"]))

    def draw_seed(self, rng: np.random.Generator, options: Mapping[str, Any]) -> Seed:
        n = int(rng.integers(1, self.config.max_squares + 1))
        color = sorted(COLORS)[int(rng.integers(len(COLORS)))]
        return Seed(Squares(n, color), QUESTION, str(n), {"kind": "count"}, "toy", f"toy-{n}-{color}")

    def apply(self, structure: Squares, edit: Edit, rule: Mapping[str, Any]) -> Squares:
        if edit.replace is not None:
            raise InvalidEdit("malformed", "the toy arm takes ops only", op="replace")
        count, color = structure.count, structure.color
        for i, op in enumerate(edit.ops):
            where = f"ops[{i}] {op['op']}"
            if op["op"] == "add":
                count += 1
            elif op["op"] == "remove":
                count -= 1
            elif op["op"] == "recolor":
                if not isinstance(op.get("color"), str) or op["color"] not in COLORS:
                    raise InvalidEdit("bad_value", f"color must be one of {sorted(COLORS)}", op=where, field="color")
                color = op["color"]
            elif op["op"] == "stop" and len(edit.ops) == 1:
                return structure
            else:
                raise InvalidEdit("unknown_op", "expected add, remove or recolor", op=where, field="op")
        if count < 1:
            raise InvalidEdit("bad_value", "at least one square must stay", field="count")
        if count > self.config.max_squares:
            raise InvalidEdit("too_many", f"at most {self.config.max_squares} squares fit", field="count")
        return Squares(count, color)

    def relabel(self, structure: Squares, rule: Mapping[str, Any]) -> str:
        if rule.get("kind") != "count":
            raise ValueError(f"expected a count rule, got {rule!r}")
        return str(structure.count)

    def check_question(self, question: str, rule: Mapping[str, Any], structure: Squares) -> str | None:
        return None if question == QUESTION else f"the toy arm asks {QUESTION!r}"

    def render(self, structure: Squares, rng: np.random.Generator) -> Render:
        image = np.zeros((HEIGHT, WIDTH, 3), dtype=np.uint8)
        boxes = []
        for i in range(structure.count):
            x, y = 3 + GAP * i, int(rng.integers(2, HEIGHT - SIDE - 2))  # jitter from the render seed
            image[y : y + SIDE, x : x + SIDE] = COLORS[structure.color]
            boxes.append((x, y, x + SIDE, y + SIDE))
        return Render(image, {"boxes": boxes})

    def actor_context(self, sample: Sample, render: Render) -> dict[str, Any]:
        return {"answer": sample.answer, "difficulty": 0.4 * sample.structure.count, "distractors": []}

    def score(self, prediction: str, target: str) -> float:
        return exact_match(prediction, target)

    def sample_edit(self, structure: Squares, rule: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        options = [{"op": "recolor", "color": c} for c in sorted(COLORS) if c != structure.color]
        if structure.count < self.config.max_squares:
            options.append({"op": "add"})
        if structure.count > 1:
            options.append({"op": "remove"})
        if not options:
            raise GenerationError("no toy edit applies")
        return {"ops": [options[int(rng.integers(len(options)))]]}


class ToyEnv(VicoEnv):
    """
    ## Description
    Count the squares. A test-only arm.

    ## Action Space
    Text: ``{"ops": [{"op": "add" | "remove" | "recolor", ...}]}``.

    ## Observation Space
    ``image`` (24 x 112, fixed policy), ``question``, ``structure``.

    ## Rewards
    The difficulty reward of the actor's pass rate.

    ## Starting State
    1 to ``max_squares`` squares of one colour.

    ## Episode End
    ``stop`` or ``max_turns``.

    ## Arguments
    ``max_squares`` (8).

    ## Version History
    - v0: the toy.
    """

    env_id = "vicogym/Toy-v0"
    config_class = ToyConfig
    arm_class = ToyArm


class NeedsExtraArm(ToyArm):
    extras = {"vicogym_no_such_module": "toyextra"}


class NeedsExtraEnv(ToyEnv):
    env_id = "vicogym/ToyExtra-v0"
    arm_class = NeedsExtraArm
