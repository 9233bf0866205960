"""Plain-data types shared by every arm: structures, edits, seeds, renders, samples,
provenance, step results, and the JSON records they travel as (:class:`StepInfo`,
:class:`ErrorRecord`, :class:`TraceEntry`, :data:`EditDict`, :data:`LabelRule`).

The records are typed dicts (``TypedDict``): the values stay plain dicts, stored as JSON;
their types say which keys they hold. A key a record may lack is declared in a ``total=False``
class of its own (``NotRequired`` is not seen at runtime under postponed annotations);
``tests/test_types.py`` checks real values against every record type."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypedDict, runtime_checkable

import numpy as np

from vicogym.errors import InvalidEdit
from vicogym.validation import brief, lone_surrogate

#: an arm's label rule: a JSON object whose ``"kind"`` says how the answer follows from the
#: structure, the rest being that kind's own keys. Each arm types its rules beside its
#: structure: :data:`vicogym.structures.chart.ChartRule`, :class:`vicogym.structures.clevr.ClevrRule`,
#: :class:`vicogym.structures.natural.ProtectedRule`
LabelRule = Mapping[str, Any]


class ErrorRecord(TypedDict):
    """A rejected edit as ``info["error"]`` carries it (:meth:`vicogym.errors.InvalidEdit.to_dict`)."""

    #: one of :data:`vicogym.errors.EDIT_ERROR_CODES`
    code: str
    message: str
    #: the op it is located at (``"ops[2] set_cell"``), or ``None`` for the whole edit
    op: str | None
    #: the op's field at fault, or ``None``
    field: str | None


class EditOps(TypedDict):
    """An edit as a list of ops (each ``{"op": name, ...fields}``)."""

    ops: list[dict[str, Any]]


class EditReplace(TypedDict):
    """An edit as a whole replacement structure."""

    replace: Mapping[str, Any]


#: an edit as JSON (:meth:`Edit.to_dict`): ops or a replacement
EditDict = EditOps | EditReplace


class TraceEntry(TypedDict):
    """One accepted step of an episode, as ``info["edit_trace"]`` lists them."""

    turn: int
    edit: EditDict
    #: the sample's answer after the edit
    answer: str
    #: the actor's pass rate on the edited sample
    pass_rate: float


class _StepInfo(TypedDict):
    #: whether the edit was accepted (a reset's info: ``True``)
    valid: bool
    #: why the edit was rejected, or ``None``
    error: ErrorRecord | None
    #: the current sample's answer (``None`` before the first reset)
    answer: str | None
    #: the current sample's label rule kind (``label["kind"]``)
    label_rule: str | None
    #: the current sample's whole label rule, as JSON data
    label: dict[str, Any] | None
    #: the actor's pass rate on the current sample, and on the one before the last edit
    pass_rate: float | None
    pass_rate_before: float | None
    #: whether ``pass_rate`` lies in the sweet zone
    sweet: bool
    #: the answers the actor gave while probing (empty when it was not probed)
    actor_answers: list[str]
    #: edit turns used so far
    turn: int
    #: whether this step was the rewriter's ``stop``
    stopped: bool
    #: every accepted step of the episode so far
    edit_trace: list[TraceEntry]
    #: the current sample (not JSON: drop it before storing the info)
    sample: Sample | None
    #: seconds per stage of the step (``edit``, ``relabel``, ``render``, ``checks``, ``actor``, ``total``)
    timings: dict[str, float]


class StepInfo(_StepInfo, total=False):
    """The ``info`` an edit environment's ``reset`` and ``step`` return
    (:class:`vicogym.envs.base.VicoEnv`)."""

    #: at reset only: the seed draws rejected before this one, by error code
    seed_rejections: dict[str, int]


def canonical_json(data: Any) -> str:
    """The one canonical text of JSON data: sorted keys, no spaces, Unicode kept."""
    return json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)


@runtime_checkable
class Structure(Protocol):
    """What an arm edits. Its JSON part has one canonical text (:func:`canonical_json` of
    ``to_dict()``); binary parts (an image, masks) travel beside it as named payloads, so
    a structure round-trips through ``(text, payloads)`` without pickling."""

    def to_dict(self) -> dict[str, Any]: ...

    def payloads(self) -> Mapping[str, bytes]: ...


@dataclass(frozen=True)
class Edit:
    """A rewriter's edit: a list of ops (each a JSON object with an ``"op"`` name), or a
    whole replacement structure (``replace``), which the arm validates by diff.

    Accepted spellings (:meth:`parse`): ``{"ops": [...]}``, ``{"replace": {...}}``, a bare
    op ``{"op": ...}``, a bare list of ops, or any of those as a JSON string.
    """

    ops: tuple[Mapping[str, Any], ...] = ()
    replace: Mapping[str, Any] | None = None

    @property
    def is_stop(self) -> bool:
        return self.replace is None and len(self.ops) == 1 and self.ops[0].get("op") == "stop"

    def to_dict(self) -> EditDict:
        if self.replace is not None:
            return {"replace": self.replace}
        return {"ops": [dict(op) for op in self.ops]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True)

    @classmethod
    def parse(cls, edit: Any) -> Edit:
        if isinstance(edit, Edit):
            return edit
        if isinstance(edit, (str, bytes)):
            edit = _loads(edit)
        else:
            _check_json_data(edit)
        if isinstance(edit, list):
            edit = {"ops": edit}
        if isinstance(edit, Mapping) and "op" in edit:
            edit = {"ops": [edit]}
        if not isinstance(edit, Mapping):
            raise InvalidEdit("malformed", f"expected a JSON object or list of ops, got {type(edit).__name__}")
        keys = set(edit)
        if keys == {"replace"}:
            if not isinstance(edit["replace"], Mapping):
                raise InvalidEdit("malformed", "expected 'replace' to be a structure object", field="replace")
            _check_text(edit["replace"], "replace", "replace")
            return cls(replace=dict(edit["replace"]))
        if keys != {"ops"}:
            raise InvalidEdit("malformed", f"expected exactly one key, 'ops' or 'replace', got {sorted(keys)}")
        ops = edit["ops"]
        if not isinstance(ops, list) or not ops:
            raise InvalidEdit("malformed", "expected 'ops' to be a non-empty list", field="ops")
        for i, op in enumerate(ops):
            if not isinstance(op, Mapping) or not isinstance(op.get("op"), str):
                raise InvalidEdit("malformed", f"expected ops[{i}] to be an object with a string 'op'", field="op")
            name = op["op"] if len(op["op"]) <= 30 else short_repr(op["op"], 30)
            for key, value in op.items():
                _check_text([key, value], f"ops[{i}] {name}", key)
            if op["op"] == "stop" and len(op) > 1:
                extra = sorted(set(op) - {"op"})
                raise InvalidEdit("bad_field", f"stop takes no fields, got {short_repr(extra)}; send exactly "
                                  '{"op": "stop"}', field=extra[0]).at(f"ops[{i}] stop")
        return cls(ops=tuple(dict(op) for op in ops))


def short_repr(value: Any, limit: int = 60) -> str:
    """``repr`` of a value, cut to ``limit`` characters (error messages stay readable)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    try:
        text = repr(value)
    except Exception:  # an integer of more than 4300 digits inside, nesting too deep, a repr that raises
        return brief(value, limit)
    return text if len(text) <= limit else text[: limit - 3] + "..."


OpFields = Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]


def check_op_fields(op: Mapping[str, Any], op_fields: OpFields) -> None:
    """``InvalidEdit`` unless ``op`` names an op of ``op_fields`` (op -> (required,
    optional) fields) with every required field and no unknown one; an op whose fields are
    all optional needs at least one."""
    name = op["op"]
    if name not in op_fields:
        raise InvalidEdit("unknown_op", f"unknown op {short_repr(name)}; expected one of {sorted(op_fields)}",
                          field="op")
    required, optional = op_fields[name]
    given = set(op) - {"op"}
    missing = [f for f in required if f not in given]
    if missing:
        raise InvalidEdit("bad_field", f"missing field {missing[0]!r}; {name} needs {list(required)}", field=missing[0])
    unknown = sorted(given - set(required) - set(optional))
    if unknown:
        raise InvalidEdit("bad_field", f"unknown field {short_repr(unknown[0])}; {name} takes "
                          f"{list(required) + list(optional)}", field=unknown[0])
    if not required and optional and not given:
        raise InvalidEdit("bad_field", f"{name} needs at least one of {list(optional)}", field="op")


def edit_schema(op_fields: OpFields | None, field_schemas: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The JSON Schema of an arm's edits (``{"ops": [...]}``) from its op table (op ->
    (required, optional) fields) and the schemas of its fields (a field without one takes
    any JSON value; the arm's editors check it)."""
    field_schemas = field_schemas or {}
    if not op_fields:
        item: dict[str, Any] = {"type": "object", "required": ["op"], "properties": {"op": {"type": "string"}}}
    else:
        item = {
            "oneOf": [
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["op", *required],
                    "properties": {
                        "op": {"const": name},
                        **{f: dict(field_schemas.get(f, {})) for f in (*required, *optional)},
                    },
                }
                for name, (required, optional) in sorted(op_fields.items())
            ]
        }
    return {"type": "object", "additionalProperties": False, "required": ["ops"],
            "properties": {"ops": {"type": "array", "minItems": 1, "items": item}}}


def fold_ops(edit: Edit, state: Any, step: Callable[[Any, Mapping[str, Any]], Any],
             op_fields: OpFields) -> tuple[Any, bool]:
    """``state`` after ``step`` has taken each of ``edit``'s ops in order (each checked
    against ``op_fields`` first), and whether the edit was a lone ``stop`` (then ``state``
    comes back untouched). An ``InvalidEdit`` is located at its op (``ops[2] set_cell``);
    ``stop`` beside other ops is malformed."""
    for i, op in enumerate(edit.ops):
        name = op.get("op")
        where = f"ops[{i}] {name if isinstance(name, str) and len(name) <= 30 else short_repr(name, 30)}"
        try:
            check_op_fields(op, op_fields)
            if name == "stop":
                if len(edit.ops) != 1:
                    raise InvalidEdit("malformed", "stop must be the only op of its edit", field="op")
                return state, True
            state = step(state, op)
        except InvalidEdit as exc:
            raise exc.at(where) from None
    return state, False


#: how deeply an edit's JSON may nest (an edit is a list of flat ops; a table of rows nests 4 deep)
MAX_EDIT_DEPTH = 64


def _check_json_data(value: Any) -> None:
    """``InvalidEdit`` unless ``value`` is JSON data as ``json.loads`` would give it:
    objects with string keys, lists, strings, numbers, booleans and null, nested at most
    :data:`MAX_EDIT_DEPTH` deep (walked without recursion). A number that is no finite
    value is the arm's to refuse, at its field; a string that is no Unicode text (a lone
    surrogate) is refused at its op and field (:func:`_check_text`)."""
    stack: list[tuple[Any, int, str]] = [(value, 0, "edit")]
    while stack:
        item, depth, where = stack.pop()
        if depth > MAX_EDIT_DEPTH:
            raise InvalidEdit("malformed", f"edit is nested more than {MAX_EDIT_DEPTH} deep; send a flat "
                              '{"ops": [...]} object')
        if isinstance(item, Mapping):
            for key, inner in item.items():
                if not isinstance(key, str):
                    raise InvalidEdit("malformed", f"{where} has the key {short_repr(key)} of type "
                                      f"{type(key).__name__}; JSON object keys are strings")
                stack.append((inner, depth + 1, f"{where}[{short_repr(key, 30)}]"))
        elif isinstance(item, (list, tuple)):
            stack.extend((inner, depth + 1, f"{where}[{i}]") for i, inner in enumerate(item))
        elif item is not None and not isinstance(item, (bool, int, float, str)):
            raise InvalidEdit("malformed", f"{where} is a {type(item).__name__}, which is not JSON data")


def _check_text(value: Any, op: str, field: str) -> None:
    """``bad_value`` at ``op``'s ``field`` when a string in ``value`` holds a lone surrogate
    (no Unicode text: it cannot be drawn, stored or encoded)."""
    item = lone_surrogate(value)
    if item is not None:
        raise InvalidEdit("bad_value", f"{field} holds a lone surrogate ({short_repr(item, 30)}), which is "
                          "not Unicode text; send valid UTF-8", op=op, field=field)


def _loads(text: str | bytes) -> Any:
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidEdit("malformed", f"edit bytes are not UTF-8 (byte {exc.start} is {text[exc.start]:#04x}); "
                              "send the edit as UTF-8 JSON text") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidEdit("malformed", f"edit is not valid JSON ({exc.msg} at position {exc.pos})") from None
    except RecursionError:
        raise InvalidEdit("malformed",
                          'edit is nested too deeply to parse; send a flat {"ops": [...]} object') from None
    except ValueError as exc:  # e.g. an integer literal longer than Python converts
        raise InvalidEdit("malformed", f"edit could not be parsed ({exc})") from None
    _check_json_data(data)
    return data


@dataclass(frozen=True)
class Seed:
    """A seed sample as a source draws it, before rendering."""

    structure: Any
    question: str
    answer: str
    label_rule: LabelRule
    source: str
    source_id: str
    #: what the sample says of the world, where its arm says (see :attr:`Provenance.facts`)
    facts: str = ""


@dataclass(frozen=True)
class Render:
    """What a renderer returns: the image (RGB ``uint8``, native size) and the facts the
    arm's checks and difficulty features read (boxes, colours, masks)."""

    image: np.ndarray
    facts: Any = None


#: the instruction after every question: answers are short, so the scorers can read them
SHORT_ANSWER = "\nAnswer with a single word or number."


@dataclass(frozen=True)
class ExportHints:
    """How an arm's samples are phrased for trainers: the verl ``ability`` and the text
    appended to the question in prompts."""

    ability: str
    prompt_suffix: str = ""


class _ProvenanceDict(TypedDict):
    source: str
    source_id: str
    index: int
    seed: int
    env_id: str
    env_version: int
    package_version: str


class ProvenanceDict(_ProvenanceDict, total=False):
    """:class:`Provenance` as JSON (:meth:`Provenance.to_dict`)."""

    #: check name -> ``"ran"`` or why not; only when the arm reports any
    checks: dict[str, str]
    #: what the sample says of the world; only when the arm says
    facts: str


@dataclass(frozen=True)
class Provenance:
    """Where a sample came from, enough to regenerate it."""

    source: str
    source_id: str
    index: int
    seed: int
    env_id: str
    env_version: int
    package_version: str
    #: checks beyond the render's facts that the arm ran on the sample, or did not and why
    #: (``(("reader", "ran"),)``; see :meth:`vicogym.arm.Arm.checks_run`); none for most arms
    checks: tuple[tuple[str, str], ...] = ()
    #: what the sample says of the world, where its arm says: the chart arm's ``real`` (a
    #: real table as published), ``chart`` (the question asks of the chart, whose values
    #: edits may have changed), ``unmarked`` (edited real values, the question as written) or
    #: ``invented`` (a procedural table); ``""`` where the arm says nothing
    facts: str = ""

    def to_dict(self) -> ProvenanceDict:
        d = dict(self.__dict__)
        if self.checks:
            d["checks"] = dict(self.checks)
        else:
            del d["checks"]
        if not self.facts:
            del d["facts"]
        return d


@dataclass(frozen=True, eq=False)
class Sample:
    """One verifiable visual question: the structure that determines the label, the
    question, its answer, the label rule that proves the answer, and the image (native
    size, as the actor sees it and as it is exported). Equal samples have equal pixels."""

    structure: Any
    question: str
    answer: str
    label_rule: LabelRule
    image: np.ndarray | None = None
    provenance: Provenance | None = None

    @property
    def rule_kind(self) -> str:
        return str(self.label_rule["kind"])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sample):
            return NotImplemented
        same_image = (self.image is None and other.image is None) or (
            self.image is not None and other.image is not None and np.array_equal(self.image, other.image))
        return same_image and (self.structure, self.question, self.answer, self.label_rule, self.provenance) == (
            other.structure, other.question, other.answer, other.label_rule, other.provenance)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class StepResult:
    """What ``env.step`` returns, as one object (``astuple`` gives Gymnasium's 5-tuple)."""

    observation: Mapping[str, Any]
    reward: float
    terminated: bool
    truncated: bool
    info: StepInfo

    def astuple(self) -> tuple:
        return self.observation, self.reward, self.terminated, self.truncated, dict(self.info)
