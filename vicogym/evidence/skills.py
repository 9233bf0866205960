"""A skill w = (θ, φ, ψ): what an executor is told about reading (θ), which evidence it
is sent (φ) and how that evidence is drawn (ψ), saved as a folder a person can read and
edit:

- ``reader.md`` (θ): the reader procedure, sent to the executor with every request (its
  shape: ViewCraft's Appendix I, what the domain holds, the steps, when to zoom, how to
  answer);
- ``answer_contract.md`` (θ): what the answer must look like, beyond the task's own
  contract line;
- ``view_contract.md`` (ψ): what the views are (what their marks, rows and grids mean);
- ``protocol.json`` (φ): the protocol contract's parameters, any of ``max_steps``,
  ``max_images``, ``max_crops``, ``max_notes``, ``max_regions`` (the environment's
  budgets for this skill);
- ``interface.json`` (φ, ψ): the interface expression, ``{"select": ..., "present": ...}``
  in the grammar :mod:`vicogym.evidence.interface` interprets (JSON, no code).

``reader.md`` must be there (it is what makes a folder a skill); any other missing file is
that field left empty, and a file whose name is close to one of these is refused as a
likely misspelling. The package names two skills of its own:
``initial`` (the starting skill evolution begins from: a plain reader, the task's own
start) and ``direct`` (the paper's Direct baseline: every unit at once, one step).

The simulated executor follows *directives* phrased in the text fields
(:data:`DIRECTIVES`, matched case-insensitively); a model reads the text as it is.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from vicogym.core import canonical_json
from vicogym.errors import RunError
from vicogym.evidence import interface as grammar
from vicogym.runs.rounds import write_bytes_atomic
from vicogym.validation import did_you_mean

#: the directives the simulated executor follows, and phrases of a skill's text that name
#: each (matched case-insensitively)
DIRECTIVES: Mapping[str, tuple[str, ...]] = {
    "zoom_evidence": ("zoom to the named field", "zoom into the evidence", "zoom to the evidence",
                      "zoom before answering", "zoom in on the region the question names"),
    "find_units": ("find the right slide", "view the unit", "open the slide", "look at every frame",
                   "view the frames", "find the unit"),
    "compose_frames": ("compose frames before comparing", "compose the frames", "compose before comparing",
                       "tile the frames"),
    "note_options": ("note each option's region", "note each option", "mark each option"),
    "answer_format": ("answer in the required format", "follow the answer contract", "answer with the letter only",
                      "answer exactly as written"),
    "grid_coordinates": ("use the grid", "read the grid coordinates", "place zoom regions on the grid"),
    "timestamps": ("read the timestamp", "use the timestamp rows", "order frames by their timestamps"),
}

#: the fields of a skill, by the part of w they belong to
FIELDS: Mapping[str, str] = {"reader": "theta", "answer_contract": "theta", "view_contract": "psi",
                             "protocol": "phi", "select": "phi", "present": "psi"}
#: the reader's fields (text-only evolution edits these)
TEXT_FIELDS = ("reader", "answer_contract")
#: the interface's fields (interface-only evolution edits these)
INTERFACE_FIELDS = ("view_contract", "protocol", "select", "present")
#: the fields whose edits change what is drawn and sent (the replay filter checks them)
VISUAL_FIELDS = ("protocol", "select", "present")
#: the budgets a skill's protocol may set, and their bounds (the environment's)
PROTOCOL_KEYS: Mapping[str, tuple[int, int]] = {"max_steps": (1, 256), "max_images": (1, 16), "max_crops": (0, 256),
                                                "max_notes": (0, 256), "max_regions": (1, 8)}
FILES = {"reader": "reader.md", "answer_contract": "answer_contract.md", "view_contract": "view_contract.md",
         "protocol": "protocol.json", "interface": "interface.json"}


@dataclass(frozen=True)
class Skill:
    reader: str = ""
    answer_contract: str = ""
    view_contract: str = ""
    protocol: Mapping[str, int] = field(default_factory=dict)
    interface: Mapping[str, Any] = field(default_factory=dict)
    name: str = "none"

    def __post_init__(self) -> None:
        for name in ("reader", "answer_contract", "view_contract"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"expected the skill's {name} as text, got {type(getattr(self, name)).__name__}")
        object.__setattr__(self, "protocol", check_protocol(self.protocol))
        object.__setattr__(self, "interface", grammar.validate(self.interface))

    @property
    def text(self) -> str:
        """Everything the executor is told in words: reader, answer and view contracts."""
        return "\n\n".join(t for t in (self.reader, self.view_contract, self.answer_contract) if t.strip())

    @property
    def directives(self) -> frozenset[str]:
        return directives(self.text)

    def get(self, name: str) -> Any:
        """Field ``name`` (:data:`FIELDS`): a text, the protocol, or a part of the
        interface expression (``select``, ``present``; ``{}`` when absent)."""
        if name in ("select", "present"):
            return json.loads(json.dumps(self.interface.get(name, {})))
        if name not in FIELDS:
            raise ValueError(f"no skill field {name!r} (fields: {', '.join(FIELDS)})")
        value = getattr(self, name)
        return dict(value) if isinstance(value, Mapping) else value

    def with_fields(self, **values: Any) -> Skill:
        """A copy with fields replaced (``select``/``present``: that part of the expression;
        an empty one is dropped)."""
        expression = json.loads(json.dumps(self.interface))
        plain = {}
        for name, value in values.items():
            if name in ("select", "present"):
                if value:
                    expression[name] = value
                else:
                    expression.pop(name, None)
            elif name in FIELDS:
                plain[name] = value
            else:
                raise ValueError(f"no skill field {name!r} (fields: {', '.join(FIELDS)})")
        return replace(self, interface=expression, **plain)

    def changed(self, other: Skill) -> list[str]:
        """The fields in which ``other`` differs from this skill, in :data:`FIELDS` order."""
        return [f for f in FIELDS if canonical_json(self.get(f)) != canonical_json(other.get(f))]

    def env_settings(self) -> dict[str, Any]:
        """The environment settings this skill sets: its interface and its budgets."""
        out: dict[str, Any] = dict(self.protocol)
        if self.interface:
            out["interface"] = json.loads(json.dumps(self.interface))
        return out

    def digest(self) -> str:
        return hashlib.sha256(canonical_json(self.content()).encode("utf-8")).hexdigest()

    def content(self) -> dict[str, Any]:
        return {"reader": self.reader, "answer_contract": self.answer_contract, "view_contract": self.view_contract,
                "protocol": dict(self.protocol), "interface": json.loads(json.dumps(self.interface))}

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, **self.content(), "sha256": self.digest()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Skill:
        return cls(d.get("reader", ""), d.get("answer_contract", ""), d.get("view_contract", ""),
                   d.get("protocol", {}), d.get("interface", {}), d.get("name", "none"))

    def files(self) -> dict[str, bytes]:
        """The folder's files, byte for byte (the same skill, the same bytes)."""
        out = {}
        for name, filename in FILES.items():
            value = self.content()[name]
            text = value if isinstance(value, str) else json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
            out[filename] = (text.rstrip("\n") + "\n").encode("utf-8") if text else b""
        return out

    def save(self, folder: str | Path) -> Path:
        """Write the skill as a folder (each file in one step: a reader of the folder sees
        the old file or the new one)."""
        path = Path(folder)
        path.mkdir(parents=True, exist_ok=True)
        for filename, data in self.files().items():
            write_bytes_atomic(path / filename, data)
        return path


def check_protocol(protocol: Any) -> dict[str, int]:
    if protocol is None:
        return {}
    if not isinstance(protocol, Mapping):
        raise ValueError(f"expected the protocol as {{budget: whole number}} ({', '.join(PROTOCOL_KEYS)}), got "
                         f"{protocol!r}")
    out = {}
    for key, value in protocol.items():
        if key not in PROTOCOL_KEYS:
            raise ValueError(f"the protocol names {key!r}, which is no budget (budgets: {', '.join(PROTOCOL_KEYS)})")
        low, high = PROTOCOL_KEYS[key]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"expected the protocol's {key} as a whole number in [{low}, {high}], got {value!r}")
        out[key] = value
    return dict(sorted(out.items()))


def directives(text: str) -> frozenset[str]:
    """The directives a skill's text phrases."""
    flat = re.sub(r"\s+", " ", str(text or "")).lower()
    return frozenset(name for name, phrases in DIRECTIVES.items() if any(p in flat for p in phrases))


INITIAL_READER = """# Reading procedure

What this domain holds: a question over a pool of visual units (form pages, slides,
charts, rendered scenes, frames). The images you are sent are views of those units;
their captions give each view's unit, crop and scale.

1. Read the question and the images you were sent.
2. Decide whether the images show what the question asks about.
3. Answer.
"""

DIRECT_READER = """# Reading procedure (Direct)

Every unit of the pool is in the images. Answer the question from them in one step.
"""

#: the package's own skills, by name
BUILTIN: Mapping[str, Skill] = {
    "initial": Skill(INITIAL_READER.strip(), name="initial"),
    "direct": Skill(DIRECT_READER.strip(), protocol={"max_steps": 1},
                    interface={"select": {"attach": [{"pick": "all"}]}}, name="direct"),
}


def load_skill(folder: str | Path | None) -> Skill:
    """The skill in ``folder`` (a built-in name, ``initial`` or ``direct``, or a folder;
    ``None``: no skill, an empty reader)."""
    if folder is None:
        return Skill()
    if str(folder) in BUILTIN and not Path(folder).is_dir():
        return BUILTIN[str(folder)]
    path = Path(folder)
    if not path.is_dir():
        raise RunError(f"the skill folder {path} does not exist; give a folder holding reader.md, a built-in skill "
                       f"({', '.join(BUILTIN)}), or leave --skill out")
    if not (path / FILES["reader"]).is_file():
        raise RunError(f"{path} is not a skill folder: it has no reader.md (the reader procedure); write one, or "
                       "leave --skill out")
    known = set(FILES.values())
    for entry in sorted(path.iterdir()):
        hint = did_you_mean(entry.name, known, cutoff=0.75).lstrip("; ").replace("'", "")
        if entry.name not in known and not entry.name.startswith(".") and hint:
            raise RunError(f"{entry} is no skill file: {hint} (a skill folder holds "
                           f"{', '.join(FILES.values())}; other files are left alone)")
    values: dict[str, Any] = {}
    for name, filename in FILES.items():
        file = path / filename
        if not file.exists():
            continue
        try:
            text = file.read_text(encoding="utf-8-sig")  # a byte-order mark some editors write is no text
        except (OSError, UnicodeDecodeError) as exc:
            raise RunError(f"{file} cannot be read as UTF-8 text ({exc})") from None
        if filename.endswith(".json"):
            try:
                values[name] = json.loads(text) if text.strip() else {}
            except json.JSONDecodeError as exc:
                raise RunError(f"{file} is not JSON ({exc}); see the skill format in docs/evidence.md") from None
        else:
            values[name] = text.rstrip("\n")
    try:
        return Skill(name=path.name, **values)
    except ValueError as exc:
        raise RunError(f"{path}: {exc}") from None
