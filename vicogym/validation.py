"""One way to do each small thing that every layer does: tell a whole number from a
bool, a number from NaN, a name from a near miss, and draw an item with a random
generator. The messages stay where the checks are (each names its setting); these are
the tests they apply. And one way to show back a value that came from outside (a model's
action, a row's field) without raising: :func:`brief` for a message, :func:`json_safe`
for a record, :func:`loads_json` to read JSON text."""

from __future__ import annotations

import difflib
import functools
import itertools
import json
import math
import reprlib
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

#: the largest seed a vicogym episode takes (NumPy's ``integers(2**63 - 1)``)
MAX_SEED = 2**63 - 1


def is_int(value: Any, low: float | None = None, high: float | None = None) -> bool:
    """``value`` is a whole number (an ``int``, never a ``bool``) within ``[low, high]``."""
    return (isinstance(value, int) and not isinstance(value, bool)
            and (low is None or value >= low) and (high is None or value <= high))


def is_number(value: Any, low: float | None = None, high: float | None = None, finite: bool = True) -> bool:
    """``value`` is an ``int`` or ``float`` (never a ``bool``), finite unless ``finite`` is
    false, within ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if finite and isinstance(value, float) and not math.isfinite(value):  # an int is finite however long
        return False
    return (low is None or value >= low) and (high is None or value <= high)


def did_you_mean(name: Any, known: Iterable[str], cutoff: float = 0.5, n: int = 1,
                 shown: Mapping[str, str] | None = None) -> str:
    """``"; did you mean 'x'?"`` for the known names closest to ``name`` (``" or "``
    between several; ``shown`` maps a compared form to the name to print), or ``""``
    when none is close."""
    close = difflib.get_close_matches(name if isinstance(name, str) else brief(name), list(known), n=n,
                                      cutoff=cutoff)
    shown = shown or {}
    return f"; did you mean {' or '.join(repr(shown.get(c, c)) for c in close)}?" if close else ""


def pick(rng: Any, items: Sequence[Any]) -> Any:
    """One of ``items``, drawn with ``rng`` (a ``numpy.random.Generator``)."""
    return items[int(rng.integers(len(items)))]


# -- values from outside, shown back without raising -----------------------------------------
#: what :func:`json_safe` keeps of a value: characters of a string, items of a list or
#: object, levels of nesting, and values in all
SHOWN_CHARS = 2000
SHOWN_ITEMS = 256
SHOWN_DEPTH = 16
SHOWN_NODES = 4096
#: an integer longer than this many bits is shown as its size (Python will not even turn
#: one of more than 4300 digits into text)
SHOWN_INT_BITS = 256


def int_size(value: int) -> str:
    """``"an integer of about N digits"``, for an integer too long to show."""
    return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"


def clean_text(text: str, limit: int | None = None) -> str:
    """``text`` cut to ``limit`` characters (a cut is marked with its length), lone
    surrogates replaced by U+FFFD: a string that encodes to UTF-8."""
    if limit is not None and len(text) > limit:
        text = text[:limit] + f"... ({len(text)} characters)"
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)


def json_safe(value: Any) -> Any:
    """``value`` (anything a caller or a model sent) as JSON data that ``json.dumps``
    writes without error, strict (``allow_nan=False``) and in UTF-8: strings cut to
    :data:`SHOWN_CHARS` and free of lone surrogates, lists and objects to
    :data:`SHOWN_ITEMS` items, :data:`SHOWN_DEPTH` levels and :data:`SHOWN_NODES` values;
    an integer too long to print, a number that is not finite, bytes or another object
    become a string saying what they were; object keys become strings. JSON data within
    the bounds comes back equal (tuples as lists)."""
    budget = [SHOWN_NODES]

    def walk(item: Any, depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            return "..."
        if item is None or isinstance(item, bool):
            return item
        if isinstance(item, int):
            return int(item) if item.bit_length() <= SHOWN_INT_BITS else f"<{int_size(item)}>"
        if isinstance(item, float):
            if math.isfinite(item):
                return float(item)
            return "<NaN>" if math.isnan(item) else ("<Infinity>" if item > 0 else "<-Infinity>")
        if isinstance(item, str):
            return clean_text(str(item), SHOWN_CHARS)
        if isinstance(item, (bytes, bytearray)):
            return f"<{len(item)} bytes: " + clean_text(bytes(item[:SHOWN_CHARS]).decode("utf-8", "replace")) + ">"
        if isinstance(item, (list, tuple, Mapping)) and depth >= SHOWN_DEPTH:
            return f"<nested more than {SHOWN_DEPTH} deep>"
        if isinstance(item, (list, tuple)):
            out = [walk(inner, depth + 1) for inner in item[:SHOWN_ITEMS]]
            if len(item) > SHOWN_ITEMS:
                out.append(f"... ({len(item)} items)")
            return out
        if isinstance(item, Mapping):
            try:
                pairs = list(itertools.islice(item.items(), SHOWN_ITEMS + 1))
            except Exception:  # a mapping that cannot be read is shown by its type
                return f"<{type(item).__name__}>"
            shown: dict[str, Any] = {}
            for key, inner in pairs[:SHOWN_ITEMS]:
                name = key if isinstance(key, str) else brief(key)
                shown[clean_text(name, SHOWN_CHARS)] = walk(inner, depth + 1)
            if len(pairs) > SHOWN_ITEMS:
                shown["..."] = "more items"
            return shown
        if hasattr(item, "item") and hasattr(item, "dtype") and getattr(item, "shape", None) == ():
            try:  # a numpy scalar
                return walk(item.item(), depth)
            except Exception:
                pass
        return f"<{type(item).__name__}>"

    return walk(value, 0)


class _Brief(reprlib.Repr):
    """``reprlib``'s bounded repr (levels, items, string lengths), with integers too long
    to print shown by their size."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxtuple, self.maxlist, self.maxdict, self.maxset = 4, 8, 8, 8, 8
        self.maxstring, self.maxlong, self.maxother = 60, 60, 60

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > SHOWN_INT_BITS:
            return f"<{int_size(x)}>"
        return super().repr_int(x, level)


_BRIEF = _Brief()


def brief(value: Any, limit: int = 60) -> str:
    """A short repr of ``value``, cut to ``limit`` characters, for a message; it never
    raises (not on an integer of 5000 digits, a value nested 100,000 deep, or an object
    whose ``repr`` fails)."""
    try:
        text = clean_text(_BRIEF.repr(value))
    except Exception:  # reprlib guards objects' reprs; anything else is named by its type
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def loads_json(text: str | bytes | bytearray) -> tuple[Any, str | None]:
    """``(value, None)`` for JSON text, or ``(None, why)`` for text that is not JSON or that
    Python cannot read (nested too deeply, an integer of more than 4300 digits, bytes that
    are not UTF-8); it never raises. ``why`` reads after "the text is"."""
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"not JSON ({exc.msg} at position {exc.pos})"
    except RecursionError:
        return None, "nested too deeply to read"
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except ValueError as exc:  # an integer literal longer than Python converts
        if "digits" in str(exc):
            return None, "JSON with an integer too long to read (more than 4300 digits)"
        return None, f"unreadable ({brief(str(exc), 120)})"
    except TypeError:
        return None, f"a {type(text).__name__}, not JSON text"


def error_text(exc: BaseException, limit: int = 200) -> str:
    """``"TypeName: message"`` of an exception, cut to ``limit`` characters; it never
    raises (an exception's ``str`` may: one that holds an integer of 5000 digits)."""
    try:
        message = str(exc)
    except Exception:
        message = ""
    text = clean_text(f"{type(exc).__name__}: {message}" if message else type(exc).__name__)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def as_text(value: Any) -> str:
    """``value`` as text, whatever it is: a string itself, ``None`` empty, anything else its
    ``str`` (empty where that fails, as for an integer of 5000 digits: it holds no text)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return str(value)
    except Exception:
        return ""


def lone_surrogate(value: Any) -> str | None:
    """The first string (a key or a value) in JSON-like ``value`` that is no Unicode text
    (it holds half of a surrogate pair: it cannot be drawn, stored or encoded), or
    ``None``; nested values are walked without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return item
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return None


def load_config_file(path: Path) -> dict[str, Any]:
    """Generate settings from a TOML or JSON file (``env_kwargs`` as a table/object)."""
    if not path.is_file():
        raise ValueError(f"--config {path} is not a file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"--config {path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8"
        ) from None
    if path.suffix.lower() not in (".toml", ".json"):
        raise ValueError(f"--config {path}: expected a .toml or .json file")
    try:
        data = tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text)
    except RecursionError:
        raise ValueError(f"--config {path}: nested too deeply to read; flatten it") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"--config {path}: not valid TOML ({exc})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"--config {path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    except ValueError as exc:  # an integer of more than 4300 digits
        raise ValueError(f"--config {path}: a value Python will not read ({str(exc).split(';')[0][:80]}); write a "
                         f"shorter number") from None
    if not isinstance(data, dict):
        raise ValueError(f"--config {path}: expected a table of settings, got {type(data).__name__}")
    return data


@functools.cache
def collection_fields(cls: type) -> dict[str, str]:
    """The fields of the dataclass ``cls`` whose type is a list (a tuple or sequence) or a
    mapping, and nothing else but ``None``: name -> ``"list"`` or ``"object"`` (their JSON
    kind). A field that also takes a string or a number is none of them."""
    import dataclasses
    import types
    import typing

    hints = typing.get_type_hints(cls)
    kinds: dict[str, str] = {}
    for f in dataclasses.fields(cls):
        hint = hints.get(f.name, Any)
        union = typing.get_origin(hint) in (typing.Union, types.UnionType)
        found = set()
        for arg in (typing.get_args(hint) if union else (hint,)):
            origin = typing.get_origin(arg) or arg
            if arg is type(None):
                continue
            if isinstance(origin, type) and issubclass(origin, Mapping):
                found.add("object")
            elif isinstance(origin, type) and issubclass(origin, Sequence) and not issubclass(origin, (str, bytes)):
                found.add("list")
            else:
                found.add("other")
        if len(found) == 1 and "other" not in found:
            kinds[f.name] = found.pop()
    return kinds


def _example(kind: str, value: Any, default: Any) -> str:
    """A value of ``kind`` (``list`` or ``object``) that shows the syntax: ``value`` made a
    list (a word, or words with commas), else the default, else a placeholder."""
    if kind == "list" and isinstance(value, str) and value.strip():
        words = [word.strip() for word in value.split(",") if word.strip()]
        return json.dumps([v if isinstance(v, (int, float)) and why is None else w
                           for w in words for v, why in [loads_json(w)]])
    if default:
        return json.dumps(list(default) if kind == "list" else dict(default))
    return '["VALUE"]' if kind == "list" else '{"NAME": "VALUE"}'


def check_collections(config: Any) -> None:
    """A ``TypeError`` that shows the syntax (a JSON list or object, with an example on the
    command line and in a TOML file) for the first list or mapping setting of the dataclass
    ``config`` given as something else (``templates=lookup``)."""
    import dataclasses

    defaults = {f.name: f.default if f.default is not dataclasses.MISSING else
                (f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
                for f in dataclasses.fields(config)}
    for name, kind in collection_fields(type(config)).items():
        value = getattr(config, name)
        if value is None or isinstance(value, Mapping if kind == "object" else (list, tuple)):
            continue
        example = _example(kind, value, defaults[name])
        toml = f" ({name} = {example} in a TOML file)" if kind == "list" else ""
        raise TypeError(f"expected {name} as a JSON {kind}, such as --set '{name}={example}' on the command "
                        f"line{toml}, got {brief(value)}")
