"""A skill: what decides which views an executor gets and how it reads them.

A skill is a folder with ``reader.md`` (the reader text an executor is given with every
request: how to look, what to zoom, how to answer) and, optionally, ``interface.json``
(``{"directives": [...]}``: named interface behaviours, see :data:`DIRECTIVES`). The
executor sends the reader text to a model as it is; the simulated executor follows the
directives named in the interface or phrased in the reader text (:func:`directives`).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from vicogym.errors import RunError

#: the directives the simulated executor follows, and phrases of a reader text that name
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
}


@dataclass(frozen=True)
class Skill:
    reader: str = ""
    interface: tuple[str, ...] = ()
    name: str = "none"

    @property
    def directives(self) -> frozenset[str]:
        return directives(self.reader, self.interface)

    def digest(self) -> str:
        text = json.dumps({"reader": self.reader, "interface": list(self.interface)}, sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "reader": self.reader, "interface": list(self.interface), "sha256": self.digest()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Skill":
        return cls(d.get("reader", ""), tuple(d.get("interface", ())), d.get("name", "none"))


def directives(reader: str, interface: Any = ()) -> frozenset[str]:
    """The directives a reader text phrases or an interface names."""
    text = re.sub(r"\s+", " ", str(reader or "")).lower()
    found = {name for name, phrases in DIRECTIVES.items() if any(p in text for p in phrases)}
    return frozenset(found | {d for d in interface if d in DIRECTIVES})


def load_skill(folder: str | Path | None) -> Skill:
    """The skill in ``folder`` (``None``: no skill, an empty reader text)."""
    if folder is None:
        return Skill()
    path = Path(folder)
    if not path.is_dir():
        raise RunError(f"the skill folder {path} does not exist; give a folder holding reader.md, or leave --skill out")
    reader_path = path / "reader.md"
    if not reader_path.is_file():
        raise RunError(f"{path} is not a skill folder: it has no reader.md (the reader text); write one, or leave "
                       "--skill out")
    try:
        reader = reader_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RunError(f"{reader_path} cannot be read as UTF-8 text ({exc})") from None
    interface: tuple[str, ...] = ()
    iface_path = path / "interface.json"
    if iface_path.exists():
        try:
            data = json.loads(iface_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise RunError(f"{iface_path} is not JSON ({exc}); expected {{\"directives\": [...]}}") from None
        names = data.get("directives") if isinstance(data, dict) else None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise RunError(f"{iface_path}: expected {{\"directives\": [names]}}, got {data!r}")
        unknown = [n for n in names if n not in DIRECTIVES]
        if unknown:
            raise RunError(f"{iface_path}: unknown directive {unknown[0]!r} (known: {', '.join(DIRECTIVES)})")
        interface = tuple(names)
    return Skill(reader, interface, path.name)
