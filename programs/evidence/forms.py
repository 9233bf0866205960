"""FUNSD field-value QA, as pure programs: which value answers which field label on a
form page (:func:`pair_fields`). A read value is scored by ANLS
(:func:`vicogym.answers.anls`, DocVQA's metric, as the ``anls`` package computes it).

The pairing is the paper's conversion of FUNSD to field-value QA, read off the page's
entities (FUNSD's ``form`` records: ``id``, ``box`` [x0, y0, x1, y1], ``text``,
``label`` in question/answer/header/other, ``linking`` [[a, b], ...]):

1. **Labels.** Every ``question`` entity with text is a field label. Consecutive
   question entities stacked vertically form one **compound** label (a label wrapped
   over two or more lines, as FUNSD annotators often split it): the lower one starts
   within half a line height of the upper one's left edge, the gap between them is at
   most :data:`STACK_GAP` line heights, no answer lies between them (none on the upper
   line's own row to its right, none in the gap), and they do not link to different
   answers. The label's text is the lines' texts joined by one space, top to bottom.
2. **Linked value.** The field's value is every ``answer`` entity linked to any of its
   label's entities, in reading order (top to bottom, then left to right), joined by one
   space: a multi-line value keeps all its lines.
3. **Nearest value** (no link). Otherwise the value is the vertically nearest answer
   entity that no question links to: nearest by the distance between the two boxes'
   vertical centres. Candidates are those that follow the label in reading order (their
   centre is not above the label's top, and they do not lie wholly left of it): a value
   precedes its label on no form this conversion targets, and an answer above a label
   with no value (a signature line under an address) is another field's. **Tie rule:** every
   candidate within :data:`TIE_SHARE` of a label line height of the nearest counts as
   tied (same row); among tied ones the horizontally nearest wins (the gap between the
   boxes' x-ranges, 0 when they overlap), then the vertically nearer, then the lower
   entity id. Unclaimed answers are first grouped into values of one or more lines: a
   line **continues** the one above it when it is stacked right under it (left edges
   within half a line height, gap at most :data:`STACK_GAP` line heights) and shares no
   row with a label to its left; a value is chosen by its first line and keeps all its
   lines. A value goes to one label only: when two labels choose the same one, the
   nearer label keeps it (vertical distance, horizontal gap, then the lower id of its
   first entity) and the other chooses again among the rest, so a label with no value
   of its own (a signature line) does not take its neighbour's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Box = tuple[float, float, float, float]

ENTITY_LABELS = ("question", "answer", "header", "other")
#: the largest gap (in label line heights) between two stacked lines of one label or value
STACK_GAP = 0.6
#: answers whose vertical distance is within this share of a line height of the nearest tie
TIE_SHARE = 0.25


@dataclass(frozen=True)
class Entity:
    """One FUNSD entity: its ``id``, ``box``, ``text``, ``label`` and the ids it links to."""

    id: int
    box: Box
    text: str
    label: str
    links: frozenset[int] = frozenset()

    @property
    def height(self) -> float:
        return max(1.0, self.box[3] - self.box[1])

    @property
    def cy(self) -> float:
        return (self.box[1] + self.box[3]) / 2


@dataclass(frozen=True)
class FieldPair:
    """One field of a page: its label's entities (``questions``, top to bottom) and text,
    its value's entities (``answers``, reading order) and text, the boxes of both, and
    how the value was found (``linked`` or ``nearest``; ``none`` when the page has no
    answer for it)."""

    questions: tuple[int, ...]
    label: str
    answers: tuple[int, ...]
    value: str
    label_box: Box
    value_box: Box | None
    how: str

    def to_dict(self) -> dict[str, Any]:
        return {"questions": list(self.questions), "label": self.label, "answers": list(self.answers),
                "value": self.value, "label_box": list(self.label_box),
                "value_box": list(self.value_box) if self.value_box else None, "how": self.how}


def entities_of(records: Iterable[Mapping[str, Any]]) -> list[Entity]:
    """FUNSD ``form`` records as :class:`Entity` s (``ValueError`` naming the record and
    field when one is malformed). Links name the other entity of each ``[a, b]`` pair."""
    out = []
    for k, r in enumerate(records):
        if not isinstance(r, Mapping):
            raise ValueError(f"entity {k}: expected a mapping, got {type(r).__name__}")
        ident = r.get("id")
        if isinstance(ident, bool) or not isinstance(ident, int):
            raise ValueError(f"entity {k}: expected 'id' as an integer, got {ident!r}")
        box = r.get("box")
        if (not isinstance(box, (list, tuple)) or len(box) != 4
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in box)
                or box[2] < box[0] or box[3] < box[1]):
            raise ValueError(f"entity {ident}: expected 'box' as [x0, y0, x1, y1] with x0 <= x1, y0 <= y1, got "
                             f"{box!r}")
        text, label = r.get("text", ""), r.get("label")
        if not isinstance(text, str):
            raise ValueError(f"entity {ident}: expected 'text' as a string, got {text!r}")
        if label not in ENTITY_LABELS:
            raise ValueError(f"entity {ident}: expected 'label' in {ENTITY_LABELS}, got {label!r}")
        links = set()
        for pair in r.get("linking", ()) or ():
            if (not isinstance(pair, (list, tuple)) or len(pair) != 2
                    or not all(isinstance(v, int) and not isinstance(v, bool) for v in pair)):
                raise ValueError(f"entity {ident}: expected 'linking' as [[id, id], ...], got {pair!r}")
            links.update(v for v in pair if v != ident)
        out.append(Entity(ident, tuple(float(v) for v in box), text, label, frozenset(links)))
    if len({e.id for e in out}) != len(out):
        raise ValueError("entity ids repeat on the page")
    return out


def _union(boxes: Sequence[Box]) -> Box:
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


def _x_gap(a: Box, b: Box) -> float:
    return max(0.0, max(a[0], b[0]) - min(a[2], b[2]))


def _same_row(a: Box, b: Box) -> bool:
    """The boxes' vertical ranges overlap by at least half the shorter one."""
    overlap = min(a[3], b[3]) - max(a[1], b[1])
    return overlap >= 0.5 * min(a[3] - a[1], b[3] - b[1])


def _reading_order(items: Iterable[Entity]) -> list[Entity]:
    return sorted(items, key=lambda e: (e.box[1], e.box[0], e.id))


def _stacked(upper: Entity, lower: Entity) -> float | None:
    """The gap between ``upper`` and ``lower`` when ``lower`` is the next line under it
    (left edges within half a line, the gap at most :data:`STACK_GAP` lines), else None."""
    h = min(upper.height, lower.height)
    gap = lower.box[1] - upper.box[3]
    if lower.cy <= upper.cy or abs(lower.box[0] - upper.box[0]) > max(2.0, 0.5 * h):
        return None
    if gap < -0.25 * h or gap > STACK_GAP * h:
        return None
    return gap


def _own_row_answer(q: Entity, answers: Sequence[Entity], questions: Sequence[Entity]) -> bool:
    """Whether an answer sits on ``q``'s row to its right with no other question between."""
    for a in answers:
        if not _same_row(q.box, a.box) or a.box[0] < q.box[0]:
            continue
        if not any(s.id != q.id and _same_row(s.box, q.box) and s.box[0] >= q.box[2] - 1 and s.box[2] <= a.box[0] + 1
                   for s in questions):
            return True
    return False


def _compounds(questions: list[Entity], answers: list[Entity], by_id: Mapping[int, Entity]) -> list[list[Entity]]:
    """Question entities grouped into labels (one list per label, top to bottom)."""
    linked = {q.id: {i for i in q.links if i in by_id and by_id[i].label == "answer"} for q in questions}
    below: dict[int, Entity] = {}
    taken: set[int] = set()
    for q in _reading_order(questions):
        if _own_row_answer(q, answers, questions):
            continue
        best = None
        for r in questions:
            gap = _stacked(q, r)
            if gap is None or r.id in taken:
                continue
            if linked[q.id] and linked[r.id] and linked[q.id] != linked[r.id]:
                continue
            x0, x1 = min(q.box[0], r.box[0]), max(q.box[2], r.box[2])
            if any(q.box[3] - 1 < a.cy < r.box[1] + 1 and a.box[0] < x1 and a.box[2] > x0 for a in answers):
                continue
            if best is None or gap < best[0] or (gap == best[0] and r.id < best[1].id):
                best = (gap, r)
        if best is not None:
            below[q.id] = best[1]
            taken.add(best[1].id)
    groups = []
    for q in _reading_order(questions):
        if q.id in taken:
            continue
        chain = [q]
        while chain[-1].id in below:
            chain.append(below[chain[-1].id])
        groups.append(chain)
    return groups


def pair_fields(records: Iterable[Mapping[str, Any]] | Sequence[Entity]) -> list[FieldPair]:
    """The page's fields (label, value) in reading order of their labels, from its FUNSD
    entities (records or :class:`Entity` s); see the module's rules. A field left
    without an answer has ``how="none"`` and an empty value."""
    items = list(records)
    entities = items if all(isinstance(e, Entity) for e in items) else entities_of(items)
    by_id = {e.id: e for e in entities}
    questions = [e for e in entities if e.label == "question" and e.text.strip()]
    answers = [e for e in entities if e.label == "answer" and e.text.strip()]
    claimed = {a.id for a in answers if any(by_id.get(i) is not None and by_id[i].label == "question"
                                            for i in a.links)}
    claimed |= {i for q in questions for i in q.links if i in by_id and by_id[i].label == "answer"}
    free = [a for a in answers if a.id not in claimed]
    chains = _compounds(questions, answers, by_id)
    values: dict[int, tuple[list[Entity], str]] = {}
    unlinked = []
    for k, chain in enumerate(chains):
        ids = {i for q in chain for i in q.links} | {a.id for a in answers if any(q.id in a.links for q in chain)}
        linked = _reading_order(a for a in answers if a.id in ids)
        if linked:
            values[k] = (linked, "linked")
        else:
            unlinked.append(k)
    blocks = {block[0].id: block for block in _blocks(free, questions)}
    firsts = _assign_nearest({k: chains[k] for k in unlinked}, [blocks[i][0] for i in blocks])
    for k in unlinked:
        values[k] = (blocks[firsts[k].id], "nearest") if k in firsts else ([], "none")
    fields = []
    for k, chain in enumerate(chains):
        chosen, how = values[k]
        fields.append(FieldPair(tuple(q.id for q in chain), " ".join(q.text.strip() for q in chain),
                                tuple(a.id for a in chosen), " ".join(a.text.strip() for a in chosen),
                                _union([q.box for q in chain]), _union([a.box for a in chosen]) if chosen else None,
                                how))
    return fields


def _nearness(chain: Sequence[Entity], a: Entity) -> tuple[float, float]:
    """How near answer ``a`` is to a label: the distance between the vertical centres,
    then the horizontal gap."""
    box = _union([q.box for q in chain])
    return abs(a.cy - (box[1] + box[3]) / 2), _x_gap(a.box, box)


def _choose(chain: Sequence[Entity], candidates: Sequence[Entity]) -> Entity | None:
    """The label's nearest answer among ``candidates`` by the module's rule: of those
    that follow the label, the vertically nearest, ties within a quarter line broken by
    the horizontal gap, then the vertical distance, then the id."""
    box = _union([q.box for q in chain])
    h = min(q.height for q in chain)
    pool = [a for a in candidates if a.cy >= box[1] - 0.25 * h and a.box[2] > box[0]]
    if not pool:
        return None
    near = {a.id: _nearness(chain, a) for a in pool}
    least = min(v[0] for v in near.values())
    tied = [a for a in pool if near[a.id][0] <= least + TIE_SHARE * h]
    return min(tied, key=lambda a: (near[a.id][1], near[a.id][0], a.id))


def _claim(chain: Sequence[Entity], a: Entity) -> tuple[float, float, int]:
    """How strong a label's claim on answer ``a`` is (smaller is stronger)."""
    return (*_nearness(chain, a), chain[0].id)


def _assign_nearest(chains: Mapping[int, Sequence[Entity]], free: Sequence[Entity]) -> dict[int, Entity]:
    """Each unlinked label's nearest free answer, no answer given to two labels: when two
    labels choose the same answer, the nearer label (vertical distance, horizontal gap,
    then its first entity's id) keeps it and the other chooses again among the rest."""
    holder: dict[int, tuple[tuple[float, float, int], int]] = {}
    given: dict[int, Entity] = {}
    pending = sorted(chains)
    while pending:
        k = pending.pop(0)
        chain = chains[k]
        candidates = [a for a in free if a.id not in holder or _claim(chain, a) < holder[a.id][0]]
        choice = _choose(chain, candidates)
        if choice is None:
            continue
        if choice.id in holder:
            loser = holder[choice.id][1]
            del given[loser]
            pending.append(loser)
        holder[choice.id] = (_claim(chain, choice), k)
        given[k] = choice
    return given


def _blocks(free: Sequence[Entity], questions: Sequence[Entity]) -> list[list[Entity]]:
    """Free answers grouped into values of one or more lines: a line continues the one
    right above it when it is stacked under it (left edges within half a line, the gap at
    most :data:`STACK_GAP` lines) and shares no row with a label to its left."""
    nxt: dict[int, Entity] = {}
    taken: set[int] = set()
    for last in _reading_order(free):
        best = None
        for a in free:
            if a.id in taken or _stacked(last, a) is None:
                continue
            if any(_same_row(q.box, a.box) and q.box[2] <= a.box[0] + 1 for q in questions):
                continue
            if best is None or (a.box[1], a.id) < (best.box[1], best.id):
                best = a
        if best is not None:
            nxt[last.id] = best
            taken.add(best.id)
    out = []
    for head in _reading_order(a for a in free if a.id not in taken):
        block = [head]
        while block[-1].id in nxt:
            block.append(nxt[block[-1].id])
        out.append(block)
    return out


def field_label(text: str) -> str:
    """A label as a question names it: trimmed, without its trailing colon."""
    return " ".join(str(text).split()).rstrip(" :").strip()
