"""A second method for the geometry arm: every answer re-derived numerically from the JSON.

The geometry arm answers its questions exactly, in a field of surds. This module checks
those answers by a separate road: it reads the figure's JSON (its construction steps and
what is drawn) and the question's rule, places every point with ``mpmath`` at 50 digits
(trigonometry and the law of sines, not the exact arithmetic), measures what the rule asks,
and compares the result with the stored answer string read by its own small parser. It
imports nothing from the arm's structure or programs.

Agreement means: an exact answer (``12``, ``5/2``, ``2√3``, ``9 - 3√3``, ``3√2/2``, ``4π``,
``3π/2``) equals the value here within 1e-9 (relative or absolute); a decimal with two
places equals the value here rounded half up to two places; a count, ``Yes``/``No`` and a
choice's letter are equal.

Run as a script it draws episodes of ``vicogym/Geometry-v0`` and checks each answer and
the answer after one random edit::

    python tests/geometry_rederive.py --seeds 200 --start 900000
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import mpmath

DIGITS = 50
#: below this a length, cross product or difference is zero (values are known to 50 digits)
TOL = mpmath.mpf("1e-30")
#: how close an exact answer must come (relative, or absolute for small values)
AGREE = 1e-9
LETTERS = "ABCD"
#: an answer written as a decimal with two places
_DECIMAL = re.compile(r"-?\d+\.\d\d")


class Unsolvable(Exception):
    """A figure or question this method cannot evaluate (the reason is the message)."""


# -- reading numbers -------------------------------------------------------------------------
_TOKENS = re.compile(r"\s*(?:(\d+(?:\.\d+)?)|(sqrt|√|π|pi)|([-+*/()]))")


def read_number(text: Any) -> mpmath.mpf:
    """The value of a number as the figure's JSON or an answer writes it: ``6``, ``2.5``,
    ``5/2``, ``2√3``, ``2*sqrt(3)``, ``√6/4 + √2/4``, ``9 - 3√3``, ``3√2π/4``, ``3π/2``
    (products may be implicit; ``√`` takes the number or bracket right after it)."""
    if isinstance(text, bool):
        raise Unsolvable(f"not a number: {text!r}")
    if isinstance(text, (int, float)):
        return mpmath.mpf(text)
    s = str(text).strip()
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(s):
        m = _TOKENS.match(s, pos)
        if not m or m.end() == pos:
            if s[pos:].strip() == "":
                break
            raise Unsolvable(f"cannot read {text!r} at {s[pos:]!r}")
        if m.group(1):
            tokens.append(("num", m.group(1)))
        elif m.group(2):
            tokens.append(("fn", "pi" if m.group(2) in ("π", "pi") else "sqrt"))
        else:
            tokens.append(("op", m.group(3)))
        pos = m.end()
    value, i = _sum(tokens, 0)
    if i != len(tokens):
        raise Unsolvable(f"cannot read {text!r}: unexpected {tokens[i][1]!r}")
    return value


def _sum(tokens: list[tuple[str, str]], i: int) -> tuple[mpmath.mpf, int]:
    value, i = _product(tokens, i)
    while i < len(tokens) and tokens[i] in (("op", "+"), ("op", "-")):
        sign = tokens[i][1]
        rhs, i = _product(tokens, i + 1)
        value = value + rhs if sign == "+" else value - rhs
    return value, i


def _product(tokens: list[tuple[str, str]], i: int) -> tuple[mpmath.mpf, int]:
    value, i = _signed(tokens, i)
    while i < len(tokens):
        token = tokens[i]
        if token in (("op", "*"), ("op", "/")):
            rhs, i = _signed(tokens, i + 1)
            if token[1] == "/" and rhs == 0:
                raise Unsolvable("division by zero")
            value = value * rhs if token[1] == "*" else value / rhs
        elif token[0] in ("num", "fn") or token == ("op", "("):
            rhs, i = _signed(tokens, i)
            value = value * rhs
        else:
            break
    return value, i


def _signed(tokens: list[tuple[str, str]], i: int) -> tuple[mpmath.mpf, int]:
    if i >= len(tokens):
        raise Unsolvable("the number ends early")
    kind, text = tokens[i]
    if (kind, text) == ("op", "-"):
        value, i = _signed(tokens, i + 1)
        return -value, i
    if (kind, text) == ("op", "+"):
        return _signed(tokens, i + 1)
    if kind == "num":
        return mpmath.mpf(text), i + 1
    if (kind, text) == ("fn", "pi"):
        return +mpmath.pi, i + 1
    if (kind, text) == ("fn", "sqrt"):
        arg, i = _signed(tokens, i + 1)
        if arg < 0:
            raise Unsolvable("square root of a negative number")
        return mpmath.sqrt(arg), i
    if (kind, text) == ("op", "("):
        value, i = _sum(tokens, i + 1)
        if i >= len(tokens) or tokens[i] != ("op", ")"):
            raise Unsolvable("unbalanced bracket")
        return value, i + 1
    raise Unsolvable(f"unexpected {text!r}")


# -- vectors -------------------------------------------------------------------------------
Vec = tuple[mpmath.mpf, mpmath.mpf]


def _sub(p: Vec, q: Vec) -> Vec:
    return p[0] - q[0], p[1] - q[1]


def _norm(v: Vec) -> mpmath.mpf:
    return mpmath.sqrt(v[0] ** 2 + v[1] ** 2)


def _dist(p: Vec, q: Vec) -> mpmath.mpf:
    return _norm(_sub(p, q))


def _heading(v: Vec) -> mpmath.mpf:
    """The direction of ``v`` in radians."""
    if _norm(v) < TOL:
        raise Unsolvable("a direction from a point to itself")
    return mpmath.atan2(v[1], v[0])


def _toward(p: Vec, radians: mpmath.mpf, length: mpmath.mpf) -> Vec:
    return p[0] + length * mpmath.cos(radians), p[1] + length * mpmath.sin(radians)


def _cross(o: Vec, p: Vec, q: Vec) -> mpmath.mpf:
    return (p[0] - o[0]) * (q[1] - o[1]) - (p[1] - o[1]) * (q[0] - o[0])


def _dot(u: Vec, v: Vec) -> mpmath.mpf:
    return u[0] * v[0] + u[1] * v[1]


def _meet(a: Vec, b: Vec, c: Vec, d: Vec) -> Vec | None:
    """Where line AB meets line CD (Cramer's rule), or ``None`` for parallel lines."""
    a1, b1 = b[1] - a[1], a[0] - b[0]
    c1 = a1 * a[0] + b1 * a[1]
    a2, b2 = d[1] - c[1], c[0] - d[0]
    c2 = a2 * c[0] + b2 * c[1]
    det = a1 * b2 - a2 * b1
    scale = max(_norm(_sub(b, a)) * _norm(_sub(d, c)), TOL)
    if abs(det) < TOL * scale:
        return None
    return (c1 * b2 - c2 * b1) / det, (a1 * c2 - a2 * c1) / det


def _deg(x: Any) -> mpmath.mpf:
    return mpmath.radians(read_number(x))


# -- placing the figure -----------------------------------------------------------------------
class Placed:
    """Every point's coordinates and every circle's centre name and radius."""

    def __init__(self) -> None:
        self.points: dict[str, Vec] = {}
        self.circles: dict[str, tuple[str, mpmath.mpf]] = {}

    def pt(self, name: str) -> Vec:
        if name not in self.points:
            raise Unsolvable(f"no point {name!r}")
        return self.points[name]

    def circle(self, name: str) -> tuple[Vec, mpmath.mpf]:
        if name not in self.circles:
            raise Unsolvable(f"no circle {name!r}")
        centre, r = self.circles[name]
        return self.points[centre], r


def _polar(s: Mapping[str, Any], fig: Placed) -> Vec:
    base = fig.pt(s["from"])
    turn = _deg(s["angle"])
    if s.get("ref") is not None:
        turn += _heading(_sub(fig.pt(s["ref"]), base))
    return _toward(base, turn, read_number(s["length"]))


def _sss(s: Mapping[str, Any], fig: Placed) -> Vec:
    a, b = (fig.pt(n) for n in s["from"])
    la, lb = (read_number(v) for v in s["lengths"])
    d = _dist(a, b)
    if la + lb <= d or la + d <= lb or lb + d <= la:
        raise Unsolvable("sss: the triangle inequality fails")
    at_a = mpmath.acos((la ** 2 + d ** 2 - lb ** 2) / (2 * la * d))  # law of cosines
    return _toward(a, _heading(_sub(b, a)) + int(s["side"]) * at_a, la)


def _asa(s: Mapping[str, Any], fig: Placed) -> Vec:
    a, b = (fig.pt(n) for n in s["from"])
    alpha, beta = (_deg(v) for v in s["angles"])
    if alpha + beta >= mpmath.pi:
        raise Unsolvable("asa: the base angles sum to 180 degrees or more")
    ap = _dist(a, b) * mpmath.sin(beta) / mpmath.sin(alpha + beta)  # law of sines
    return _toward(a, _heading(_sub(b, a)) + int(s["side"]) * alpha, ap)


def _foot(s: Mapping[str, Any], fig: Placed) -> Vec:
    p, (a, b) = fig.pt(s["from"]), (fig.pt(n) for n in s["to"])
    ab = _sub(b, a)
    t = _dot(_sub(p, a), ab) / _dot(ab, ab)
    return a[0] + t * ab[0], a[1] + t * ab[1]


def _intersect(s: Mapping[str, Any], fig: Placed) -> Vec:
    (a, b), (c, d) = ([fig.pt(n) for n in line] for line in s["lines"])
    x = _meet(a, b, c, d)
    if x is None:
        raise Unsolvable("intersect: the lines are parallel")
    return x


def _parallel(s: Mapping[str, Any], fig: Placed) -> Vec:
    a, b = (fig.pt(n) for n in s["to"])
    return _toward(fig.pt(s["through"]), _heading(_sub(b, a)), read_number(s["length"]))


def _on_circle(s: Mapping[str, Any], fig: Placed) -> Vec:
    centre, r = fig.circle(s["circle"])
    return _toward(centre, _heading(_sub(fig.pt(s["ref"]), centre)) + _deg(s["angle"]), r)


def _tangent(s: Mapping[str, Any], fig: Placed) -> Vec:
    """The point of contact T of a tangent from P: T lies on the circle where angle OTP is
    right, so angle TOP = acos(r / |OP|); ``side`` +1 turns OT counter-clockwise from OP."""
    centre, r = fig.circle(s["circle"])
    p = fig.pt(s["from"])
    d = _dist(centre, p)
    if d <= r:
        raise Unsolvable("tangent: the point is not outside the circle")
    return _toward(centre, _heading(_sub(p, centre)) + int(s["side"]) * mpmath.acos(r / d), r)


def _triangle_circle(s: Mapping[str, Any], fig: Placed) -> None:
    a, b, c = (fig.pt(n) for n in s["of"])
    twice = _cross(a, b, c)
    if abs(twice) < TOL:
        raise Unsolvable(f"{s['op']}: the three points are collinear")
    if s["op"] == "incircle":
        la, lb, lc = _dist(b, c), _dist(a, c), _dist(a, b)
        per = la + lb + lc
        centre = ((la * a[0] + lb * b[0] + lc * c[0]) / per, (la * a[1] + lb * b[1] + lc * c[1]) / per)
        radius = abs(twice) / per  # area / semi-perimeter
    else:  # circumcircle: where the perpendicular bisectors of AB and AC meet
        mab, mac = ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2), ((a[0] + c[0]) / 2, (a[1] + c[1]) / 2)
        ab, ac = _sub(b, a), _sub(c, a)
        centre = _meet(mab, (mab[0] - ab[1], mab[1] + ab[0]), mac, (mac[0] - ac[1], mac[1] + ac[0]))
        if centre is None:
            raise Unsolvable("circumcircle: no centre")
        radius = _dist(centre, a)
    fig.points[s["center"]] = centre
    fig.circles[s["circle"]] = (s["center"], radius)


_POINT_OPS = {"polar": _polar, "sss": _sss, "asa": _asa, "foot": _foot, "intersect": _intersect,
              "parallel": _parallel, "on_circle": _on_circle, "tangent": _tangent}


def place(steps: Sequence[Mapping[str, Any]]) -> Placed:
    """Carry out the construction steps numerically."""
    fig = Placed()
    for i, s in enumerate(steps):
        op = s.get("op")
        try:
            if op == "origin":
                fig.points[s["point"]] = (mpmath.mpf(0), mpmath.mpf(0))
            elif op == "midpoint":
                a, b = (fig.pt(n) for n in s["of"])
                fig.points[s["point"]] = ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)
            elif op == "circle":
                fig.circles[s["circle"]] = (s["center"], _dist(fig.pt(s["center"]), fig.pt(s["through"])))
            elif op in ("incircle", "circumcircle"):
                _triangle_circle(s, fig)
            elif op in _POINT_OPS:
                fig.points[s["point"]] = _POINT_OPS[op](s, fig)
            else:
                raise Unsolvable(f"unknown op {op!r}")
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
            raise Unsolvable(f"steps[{i}] ({op}): {exc!r}") from None
    return fig


# -- measuring -------------------------------------------------------------------------------
def angle_deg(fig: Placed, x: str, y: str, z: str) -> mpmath.mpf:
    """The angle XYZ in degrees, in [0, 180]."""
    u, v = _sub(fig.pt(x), fig.pt(y)), _sub(fig.pt(z), fig.pt(y))
    if _norm(u) < TOL or _norm(v) < TOL:
        raise Unsolvable(f"angle {x}{y}{z} has a side of length 0")
    return mpmath.degrees(mpmath.atan2(abs(u[0] * v[1] - u[1] * v[0]), _dot(u, v)))


def shoelace(fig: Placed, names: Sequence[str]) -> mpmath.mpf:
    pts = [fig.pt(n) for n in names]
    total = mpmath.mpf(0)
    for p, q in zip(pts, pts[1:] + pts[:1]):
        total += p[0] * q[1] - p[1] * q[0]
    return abs(total) / 2


def measure(fig: Placed, draw: Sequence[Sequence[str]], kind: str, t: Mapping[str, Any]) -> Any:
    """The value a question of family ``kind`` with target ``t`` asks: a number, or ``Yes``/
    ``No``, or a count."""
    if kind == "angle":
        return angle_deg(fig, *t["at"])
    if kind == "length":
        a, b = t["of"]
        return _dist(fig.pt(a), fig.pt(b))
    if kind == "perimeter":
        names = list(t["of"])
        return mpmath.fsum(_dist(fig.pt(p), fig.pt(q)) for p, q in zip(names, names[1:] + names[:1]))
    if kind == "area":
        if "circle" in t:
            return mpmath.pi * fig.circle(t["circle"])[1] ** 2
        return shoelace(fig, t["of"])
    if kind == "ratio":
        num, den = (measure(fig, draw, q["kind"], q["target"]) for q in t["of"])
        if abs(den) < TOL:
            raise Unsolvable("ratio over zero")
        return num / den
    if kind == "arc":
        r = fig.circle(t["circle"])[1]
        p, q = t["between"]
        theta = mpmath.radians(angle_deg(fig, p, fig.circles[t["circle"]][0], q))  # the minor arc's central angle
        return r * r * theta / 2 if t["measure"] == "sector" else r * theta
    if kind == "count":
        return count_triangles(fig, draw)
    if kind == "relation":
        return "Yes" if relation(fig, t["relation"], t["a"], t["b"]) else "No"
    raise Unsolvable(f"unknown family {kind!r}")


def relation(fig: Placed, rel: str, a: Sequence[str], b: Sequence[str]) -> bool:
    p, q, r, s = (fig.pt(n) for n in (*a, *b))
    u, v = _sub(q, p), _sub(s, r)
    scale = _norm(u) * _norm(v)
    if rel == "parallel":
        return abs(u[0] * v[1] - u[1] * v[0]) < TOL * scale
    if rel == "perpendicular":
        return abs(_dot(u, v)) < TOL * scale
    if rel == "equal":
        return abs(_norm(u) - _norm(v)) < TOL * max(_norm(u), 1)
    raise Unsolvable(f"unknown relation {rel!r}")


def _lies_on(kind: str, a: Vec, b: Vec, p: Vec) -> bool:
    """Whether ``p`` lies on the drawn segment, ray (from A through B) or line AB."""
    ab = _sub(b, a)
    length = _norm(ab)
    if abs(_cross(a, b, p)) > TOL * max(length, 1):
        return False
    if kind == "line":
        return True
    along = _dot(_sub(p, a), ab) / length  # signed distance from A along AB
    if kind == "ray":
        return along > -TOL
    return -TOL < along < length + TOL


def count_triangles(fig: Placed, draw: Sequence[Sequence[str]]) -> int:
    """Triangles with corners among the named points on drawn straight elements and the
    crossings of two drawn straight elements, each side along one drawn straight element."""
    straight = [(e[0], fig.pt(e[1]), fig.pt(e[2])) for e in draw if e[0] in ("segment", "ray", "line")]
    corners: list[Vec] = []

    def add(p: Vec) -> None:
        if all(_dist(p, q) > TOL for q in corners):
            corners.append(p)

    for p in fig.points.values():
        if any(_lies_on(k, a, b, p) for k, a, b in straight):
            add(p)
    for (k1, a, b), (k2, c, d) in itertools.combinations(straight, 2):
        x = _meet(a, b, c, d)
        if x is not None and _lies_on(k1, a, b, x) and _lies_on(k2, c, d, x):
            add(x)
    along = [{i for i, p in enumerate(corners) if _lies_on(k, a, b, p)} for k, a, b in straight]

    def joined(i: int, j: int) -> bool:
        return any(i in members and j in members for members in along)

    n = 0
    for i, j, k in itertools.combinations(range(len(corners)), 3):
        if joined(i, j) and joined(j, k) and joined(i, k):
            p, q, r = corners[i], corners[j], corners[k]
            if abs(_cross(p, q, r)) > TOL * max(_dist(p, q) * _dist(p, r), 1):
                n += 1
    return n


# -- choices ---------------------------------------------------------------------------------
_CHOICES = re.compile(r"Choices:\s*A\.\s*(.+?)\s+B\.\s*(.+?)\s+C\.\s*(.+?)\s+D\.\s*(.+?)\.\s*(?:Answer\b|$)")


def listed_choices(question: str) -> list[str]:
    m = _CHOICES.search(question or "")
    if not m:
        raise Unsolvable(f"no 'Choices: A. .. B. .. C. .. D. ..' in the question {question!r}")
    return list(m.groups())


def close(a: mpmath.mpf, b: mpmath.mpf) -> bool:
    return abs(a - b) <= AGREE * max(1, abs(a), abs(b))


def pick_choice(value: mpmath.mpf, question: str) -> tuple[str, str]:
    """The letter of the one listed choice equal to ``value`` (an exact choice within 1e-9,
    a choice with two decimal places when ``value`` rounds to it), and what each choice is."""
    texts = listed_choices(question)
    values = [read_number(t) for t in texts]
    hits = [LETTERS[i] for i, (t, v) in enumerate(zip(texts, values))
            if (half_up(value) == t.strip() if _DECIMAL.fullmatch(t.strip()) else close(v, value))]
    shown = ", ".join(f"{LETTERS[i]}={t}≈{mpmath.nstr(v, 8)}" for i, (t, v) in enumerate(zip(texts, values)))
    if len(hits) != 1:
        raise Unsolvable(f"{len(hits)} choices equal {mpmath.nstr(value, 12)} ({shown})")
    return hits[0], shown


# -- comparing -----------------------------------------------------------------------------


def half_up(value: mpmath.mpf) -> str:
    """``value`` rounded half up (away from zero at a half) to two places, as text."""
    hundredths = int(mpmath.floor(abs(value) * 100 + mpmath.mpf("0.5")))
    sign = "-" if value < 0 and hundredths else ""
    return f"{sign}{hundredths // 100}.{hundredths % 100:02d}"


def _agree(mine: Any, answer: str) -> tuple[bool, str, str]:
    """Whether a computed value agrees with the stored answer: (ok, mine as text, detail)."""
    if isinstance(mine, str):  # Yes/No or a letter
        return mine == answer, mine, ""
    if isinstance(mine, int):
        return answer.strip() == str(mine), str(mine), ""
    if _DECIMAL.fullmatch(answer.strip()):
        text = half_up(mine)
        frac = abs(mine) * 100 - mpmath.floor(abs(mine) * 100)
        note = " (within 1e-20 of a rounding boundary)" if abs(frac - mpmath.mpf("0.5")) < mpmath.mpf("1e-20") else ""
        return text == answer.strip(), text, f"value {mpmath.nstr(mine, 20)}{note}"
    try:
        stored = read_number(answer)
    except Unsolvable as exc:
        return False, mpmath.nstr(mine, 15), f"the stored answer is unreadable: {exc}"
    return close(stored, mine), mpmath.nstr(mine, 15), f"stored {answer!r} ≈ {mpmath.nstr(stored, 15)}"


def rederive(structure_json: str, rule: Mapping[str, Any], answer: str,
             question: str | None = None) -> tuple[bool, str, str]:
    """Re-derive the answer of ``rule`` on the figure ``structure_json`` and compare it with
    ``answer``: ``(ok, mine, detail)``. A choice question's choices are read from
    ``rule["question"]`` or else ``question``."""
    with mpmath.workdps(DIGITS):
        try:
            data = json.loads(structure_json) if isinstance(structure_json, str) else dict(structure_json)
            fig = place(data["steps"])
            draw = [list(e) for e in data.get("draw", [])]
            kind, t = rule["kind"], rule["target"]
            detail = ""
            if kind == "choice":
                inner = t["inner"]
                value = measure(fig, draw, inner["kind"], inner["target"])
                mine, detail = pick_choice(value, rule.get("question") or question or "")
            else:
                mine = measure(fig, draw, kind, t)
        except Unsolvable as exc:
            return False, "?", f"cannot re-derive: {exc}"
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
            return False, "?", f"cannot re-derive: {exc!r}"
        ok, text, more = _agree(mine, str(answer))
        return ok, text, "; ".join(x for x in (detail, more) if x)


# -- the command line ------------------------------------------------------------------------
def _case(env: Any, obs: Mapping[str, Any], info: Mapping[str, Any], where: str) -> dict[str, Any]:
    sample = env.unwrapped.sample
    rule = info.get("label") or sample.label_rule
    question = getattr(sample, "question", None) or obs.get("question")
    structure = obs["structure"] if "\ufffd" not in obs["structure"] else sample.structure.canonical()
    return {"where": where, "structure": structure, "rule": rule, "answer": info["answer"], "question": question}


def episodes(seeds: int, start: int) -> Iterator[dict[str, Any]]:
    """The cases of ``seeds`` episodes of vicogym/Geometry-v0 from seed ``start``: each
    episode's first sample and, when one random edit is valid, the edited sample (``where``,
    ``structure``, ``rule``, ``answer``, ``question``)."""
    import gymnasium

    import vicogym  # noqa: F401  (registers the environments)
    from vicogym.errors import GenerationError

    env = gymnasium.make("vicogym/Geometry-v0")
    try:
        for episode, seed in enumerate(range(start, start + seeds)):
            # the episode's index balances the run: the source cycles levels 1-5 and presentations by it
            try:
                obs, info = env.reset(seed=seed, options={"episode": episode})
            except GenerationError as exc:  # no sample to check: said, not counted as a disagreement
                yield {"where": f"seed {seed}", "skipped": f"reset drew no sample: {exc}"}
                continue
            yield _case(env, obs, info, f"seed {seed}")
            obs, _, _, _, info = env.step(env.unwrapped.sample_edit())
            if info["valid"]:
                yield _case(env, obs, info, f"seed {seed} after an edit")
    finally:
        env.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Re-derive vicogym/Geometry-v0's answers numerically.")
    parser.add_argument("--seeds", type=int, default=200, help="episodes to draw")
    parser.add_argument("--start", type=int, default=900000, help="the first seed")
    args = parser.parse_args(argv)
    import gymnasium

    import vicogym  # noqa: F401  (registers the environments)

    if "vicogym/Geometry-v0" not in gymnasium.registry:
        print("vicogym/Geometry-v0 is not registered: this checkout has no geometry environment (envs/geometry.py)",
              file=sys.stderr)
        return 2
    tally: Counter = Counter()
    failures: list[str] = []
    skipped: list[str] = []
    for case in episodes(args.seeds, args.start):
        if "skipped" in case:
            skipped.append(f"{case['where']}: {case['skipped']}")
            continue
        ok, mine, detail = rederive(case["structure"], case["rule"], case["answer"], case["question"])
        family = case["rule"].get("kind", "?")
        tally[(family, "checked")] += 1
        tally[(family, "agreed")] += ok
        if not ok:
            failures.append(f"{case['where']} {family}: stored {case['answer']!r}, re-derived {mine!r} ({detail})\n"
                            f"  rule {json.dumps(case['rule'], ensure_ascii=False)}\n"
                            f"  question {case['question']!r}\n  structure {case['structure']}")
    for family in sorted({f for f, _ in tally}):
        print(f"{family:10s} {tally[(family, 'agreed')]:5d} agreed / {tally[(family, 'checked')]:5d} checked")
    agreed = sum(v for (_, k), v in tally.items() if k == "agreed")
    checked = sum(v for (_, k), v in tally.items() if k == "checked")
    print(f"{'total':10s} {agreed:5d} agreed / {checked:5d} checked ({args.seeds} episodes, "
          f"{len(skipped)} drew no sample, {checked - args.seeds + len(skipped)} valid edits)")
    for line in skipped:
        print("NO SAMPLE", line)
    for line in failures:
        print("DISAGREE", line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
