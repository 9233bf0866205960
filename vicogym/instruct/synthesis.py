"""``vicogym synthesize``: self-evolving synthesis of instruction-following samples (VISA).

Each round, for each image it draws:

1. **Perception** (once per image): the image's facts come from its structure (a chart's
   table, a CLEVR scene, a natural image's targets) or, for an image without one, from a
   perceiver model; types whose needs the facts lack, or that the facts cannot ground,
   are pruned. With probability ``discover`` a proposer model suggests a new type, which
   enters the registry only once its verifier passes in the sandbox.
2. **Planning**: ``k`` candidate constraint sets, each sampled with weights from memory
   (types accepted often weigh less, types the target model fails weigh more), kept
   mutually consistent (exclusive groups, overlapping bounds on one quantity, and a
   witness response built by the types' own edits that passes every code verifier), and
   composed into an instruction; the candidate farthest from its nearest neighbour in
   the pool of accepted instruction embeddings is kept.
3. **Execution**: the writer model answers the instruction.
4. **Reflection**: every constraint is verified (code verifiers; one batched judge call
   for judge-track ones); the diagnostics choose a recovery -- a local edit of the
   response, a rewrite of the instruction, or dropping the constraint that keeps failing
   -- for at most ``max_attempts`` attempts, stopping early when the score stops
   improving. A sample is accepted only when its response satisfies every constraint.
5. **Difficulty probing**: the target model answers ``probes`` times; difficulty is the
   share of constraints it fails, graded easy / medium / hard, with the failure profile
   per constraint.
6. **Memory update**: the round's samples go to a Parquet shard, then everything the
   round learnt is committed to SQLite in one transaction (:mod:`vicogym.instruct.memory`).

A round depends only on the run's seed, its number and the memory before it, so a killed
run resumes at the first uncommitted round and produces the same data.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

import vicogym
import vicogym.editors.instruct as type_edits
from vicogym.errors import GenerationError, InvalidEdit, RunError
from vicogym.processes import BACKEND_SETTINGS
from vicogym.programs.instruct import REGISTRY, pass_rate
from vicogym.validation import did_you_mean, is_int, pick

ENV_ID = "vicogym/Instruct-v0"
MEMORY_FILE = "memory.sqlite"
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".webp", ".bmp")
#: settings that change how a run runs, not what it makes (n: a run may be extended)
RUNTIME = ("out", "n", "concurrency", "progress", *BACKEND_SETTINGS)
RECOVERIES = ("response_edit", "instruction_rewrite", "simplify")


@dataclass(frozen=True)
class SynthesizeConfig:
    """Settings of a synthesis run. Models: ``simulated`` stand-ins by default, or
    ``openai:MODEL@URL`` (see :func:`vicogym.instruct.models.make_model`)."""

    out: str = "runs/instruct"
    n: int = 64
    seed: int = 0
    #: image sources: vicogym environment ids (their structures give the facts) or folders of images
    images: tuple[str, ...] = ("vicogym/Chart-v0", "vicogym/Natural-v0")
    #: settings for each image environment, by id (e.g. a smaller chart size)
    image_settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    per_round: int = 16
    max_rounds: int = 1000
    #: image draws per picture before one passes its arm's checks
    max_tries: int = 16
    candidates: int = 4
    min_constraints: int = 3
    max_constraints: int = 8
    #: visually grounded constraints each set starts with, where the image supports them
    grounded: int = 1
    max_attempts: int = 3
    probes: int = 4
    levels: tuple[float, float] = (0.15, 0.4)
    coverage_weight: float = 1.0
    failure_weight: float = 3.0
    discover: float = 0.0
    writer: Any = "simulated"
    target: Any = "simulated"
    judge: Any = "simulated"
    composer: Any = "template"
    embedder: Any = "hashing"
    perceiver: Any = "simulated"
    proposer: Any = "simulated"
    concurrency: int = 1
    progress: bool = True
    #: where samples are executed: ``local`` (this process, ``concurrency`` at a time) or
    #: ``ray`` (``workers`` Ray actors, on a local instance or the cluster at ``ray_address``)
    backend: str = "local"
    workers: int = 1
    ray_address: str | None = None
    ray_cpus: float = 1.0

    def __post_init__(self) -> None:
        from vicogym.processes import check_backend

        check_backend(self.backend, self.ray_address, ray_cpus=self.ray_cpus)
        for name, low in (("n", 1), ("per_round", 1), ("max_rounds", 1), ("max_tries", 1), ("candidates", 1),
                          ("workers", 1), ("min_constraints", 1), ("grounded", 0), ("max_constraints", 1),
                          ("max_attempts", 0), ("probes", 1), ("concurrency", 1)):
            value = getattr(self, name)
            if not is_int(value, low):
                raise ValueError(f"expected {name} to be an integer >= {low}, got {value!r}")
        if not is_int(self.seed, 0):
            raise ValueError(f"expected seed to be an integer >= 0, got {self.seed!r}")
        if self.min_constraints > self.max_constraints:
            raise ValueError(f"expected min_constraints <= max_constraints, got {self.min_constraints} > "
                             f"{self.max_constraints}")
        images = (self.images,) if isinstance(self.images, str) else tuple(self.images)
        if not images or not all(isinstance(i, str) and i for i in images):
            raise ValueError(f"expected images as environment ids or image folders, got {self.images!r}")
        object.__setattr__(self, "images", images)
        if not isinstance(self.image_settings, Mapping) or not all(
                isinstance(k, str) and isinstance(v, Mapping) for k, v in self.image_settings.items()):
            raise ValueError(f"expected image_settings as {{environment id: {{setting: value}}}}, for example "
                             f'{{"vicogym/CLEVR-v0": {{"engine": "workbench"}}}}, got {self.image_settings!r}')
        levels = tuple(self.levels)
        if len(levels) != 2 or not 0 <= levels[0] <= levels[1] <= 1:
            raise ValueError(f"expected levels as two thresholds 0 <= easy <= medium <= 1, got {self.levels!r}")
        object.__setattr__(self, "levels", levels)
        for name in ("discover", "coverage_weight", "failure_weight"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ValueError(f"expected {name} as a number >= 0, got {value!r}")
        if self.discover > 1:
            raise ValueError(f"expected discover as a probability in [0, 1], got {self.discover!r}")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> SynthesizeConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"synthesize has no setting {unknown[0]!r}{did_you_mean(unknown[0], sorted(known), 0.6)}")
        return cls(**data)

    def identity(self) -> dict[str, Any]:
        """What the data depends on (the memory refuses a resume that changes it)."""
        data = {k: v for k, v in asdict(self).items() if k not in RUNTIME}
        return json.loads(json.dumps(data, sort_keys=True, default=list))


# -- images and perception ------------------------------------------------------------------------
@dataclass(frozen=True)
class Picture:
    """An image with what is known of it."""

    image: np.ndarray
    facts: dict[str, Any]
    source: dict[str, Any]
    payloads: Mapping[str, bytes] = field(default_factory=dict)


class ImageSource:
    """Draws pictures from vicogym environments (with their structures' facts) and from
    folders of image files (facts from the perceiver)."""

    def __init__(self, config: SynthesizeConfig, perceiver: Any):
        self.config, self.perceiver = config, perceiver
        self.arms: dict[str, Any] = {}
        self.files: dict[str, list[Path]] = {}
        for spec in config.images:
            if spec.startswith("vicogym/"):
                from vicogym.registry import env_kind, make_arm

                if env_kind(spec) != "edit":
                    raise ValueError(f"{spec} draws no images of its own; give an environment with structures "
                                     f"(vicogym/Chart-v0, vicogym/CLEVR-v0, vicogym/Natural-v0) or a folder of images")

                arm = make_arm(spec, dict(config.image_settings.get(spec, {})))
                arm.open()
                self.arms[spec] = arm
            else:
                folder = Path(spec)
                if not folder.is_dir():
                    raise ValueError(f"expected each image source to be a vicogym environment id or a folder of "
                                     f"images, got {spec!r} (not a folder)")
                found = sorted(p for p in folder.rglob("*") if p.suffix.lower() in IMAGE_EXTENSIONS)
                if not found:
                    raise ValueError(f"image folder {spec} holds no {'/'.join(IMAGE_EXTENSIONS)} files")
                self.files[spec] = found

    def draw(self, rng: np.random.Generator) -> Picture:
        spec = pick(rng, self.config.images)
        if spec in self.arms:
            return self._from_arm(spec, rng)
        return self._from_file(spec, rng)

    def _from_arm(self, env_id: str, rng: np.random.Generator) -> Picture:
        """A seed of the arm whose render passes the arm's own answerability checks (what
        its questions need drawn, legible and unoccluded), within ``max_tries`` draws."""
        arm = self.arms[env_id]
        last: Any = None
        for _ in range(self.config.max_tries):
            seed = arm.draw_seed(rng, {})
            # what is stored is the structure's text: render what that text decodes to (a
            # float the text rounds would move an edge pixel and fail verify's re-render)
            structure = arm.decode(*arm.encode(seed.structure))
            try:
                render = arm.render_checked(structure, seed.label_rule)
                break
            except InvalidEdit as exc:
                last = exc
        else:
            raise GenerationError(
                f"no image of {env_id} passed its checks in {self.config.max_tries} draws (last: {last})"
            )
        facts = picture_facts(arm, structure, render)
        text, payloads = arm.encode(structure)
        return Picture(render.image, facts, {"env_id": env_id, "source_id": seed.source_id, "structure": text},
                       payloads)

    def _from_file(self, folder: str, rng: np.random.Generator) -> Picture:
        import cv2

        files = self.files[folder]
        path = pick(rng, files)
        data = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if data is None:
            raise ValueError(f"{path} is not a readable image; remove it from {folder}")
        image = cv2.cvtColor(data, cv2.COLOR_BGR2RGB)
        facts = {"source": "model", **self.perceiver.perceive(image, rng)}
        return Picture(image, facts, {"env_id": None, "source_id": str(path.relative_to(folder)), "structure": None})

    def close(self) -> None:
        for arm in self.arms.values():
            arm.close()


def picture_facts(arm: Any, structure: Any, render: Any) -> dict[str, Any]:
    """The facts of an arm's rendered structure, without the attributes its render engine
    cannot show."""
    import vicogym.sources.instruct as facts_of

    unshown = arm.config.unasked_attributes() if hasattr(arm.config, "unasked_attributes") else ()
    extract = getattr(facts_of, f"{arm.name}_facts")
    more: dict[str, Any] = {"unshown": unshown} if unshown else {}
    if arm.name == "natural":  # what the source's other records annotate on this photo is in it too
        record = structure.record
        more["others"] = [t for r in arm.source.records if r.image == record.image and r.id != record.id
                          for t in r.targets]
    return {"source": arm.name, **extract(structure, render.facts, **more)}


def supported_types(facts: Mapping[str, Any], discovered: Sequence[str] = ()) -> list[str]:
    """Perception's pruning: the seed types, and the ``discovered`` ones of this run, whose
    needs the facts meet (a type another run discovered in this process is not this
    run's to ask)."""
    present = {kind for kind in ("objects", "rows", "texts") if facts.get(kind)}
    return sorted(t for t, c in REGISTRY.items()
                  if (c.origin == "seed" or t in discovered) and set(c.needs) <= present)


# -- planning --------------------------------------------------------------------------------------
def type_weights(types: Sequence[str], coverage: Mapping[str, int], failures: Mapping[str, tuple[int, int]],
                 coverage_weight: float, failure_weight: float) -> np.ndarray:
    """Planning weights: ``(1 + mean coverage) / (1 + coverage)`` to the power
    ``coverage_weight`` (under-used types up), times ``1 + failure_weight * f`` with ``f``
    the target model's failure rate on the type (Beta(1, 1) prior: unprobed types at 0.5
    count as uncertain, not as easy)."""
    counts = np.array([coverage.get(t, 0) for t in types], dtype=float)
    mean = counts.mean() if len(counts) else 0.0
    weights = ((1 + mean) / (1 + counts)) ** coverage_weight
    rates = np.array([(failures.get(t, (0, 0))[1] + 1) / (failures.get(t, (0, 0))[0] + 2) for t in types])
    return weights * (1 + failure_weight * rates)


def conflicts(chosen: Sequence[Mapping[str, Any]], spec: Mapping[str, Any]) -> str | None:
    """Why ``spec`` cannot join ``chosen``: a type twice, a shared exclusive group, or
    disjoint bounds on one quantity; ``None`` when it can."""
    new = REGISTRY[spec["id"]]
    low_high = new.bounds(spec.get("params") or {})
    for other in chosen:
        contract = REGISTRY[other["id"]]
        if contract.id == new.id:
            return f"{new.id} twice"
        shared = set(contract.exclusive) & set(new.exclusive)
        if shared:
            return f"{contract.id} and {new.id} are both {sorted(shared)[0]}"
        if low_high and contract.measure == new.measure:
            bounds = contract.bounds(other.get("params") or {})
            if bounds and max(bounds[0], low_high[0]) > min(bounds[1], low_high[1]):
                return f"{contract.id} and {new.id} bound {new.measure} to disjoint ranges"
        problem = read_as_a_person_would(other, spec) or read_as_a_person_would(spec, other)
        if problem:
            return problem
    return None


#: types whose fixed text numbers the response's parts ("SECTION 1", "1.", "Step 1")
NUMBERED_TEXT = frozenset({"sections", "numbered_list", "numbered_steps"})
#: types whose parts a person writes as a sentence or more each
ONE_SENTENCE_EACH = frozenset({"paragraph_count", "sections", "numbered_steps"})


def read_as_a_person_would(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """Why a person would find ``a`` and ``b`` contradictory although the verifiers (which
    ignore case and read paragraphs as IFEval does) pass a witness: a case rule against text
    the other quotes in the other case ("all lowercase" and a postscript starting 'P.P.S'),
    or a word asked at the start (end) of every paragraph against fixed text the other puts
    there ("every paragraph starts with 'Market'" and 'SECTION 1' headings), or an answer
    in another language or script asked to carry English words ("German only" with a quoted
    English phrase), decimals asked of every number where the other numbers the parts
    ("SECTION 1.0"), or fewer sentences than the other asks for paragraphs or sections."""
    from vicogym.programs.instruct.contracts import CASE_RULES, EVERY_PARAGRAPH, FIXED_TEXT_AT

    if a["id"] in CASE_RULES:
        fits = CASE_RULES[a["id"]]
        for text in type_edits.quoted(b["id"], b.get("params") or {}):
            letters = "".join(ch for ch in text if ch.isalpha())
            if letters and not fits(letters):
                article = "an" if a["id"][0] in "aeiou" else "a"
                return (f"{a['id']} and {b['id']}: the instruction quotes {text!r}, which {article} {a['id']} answer "
                        "cannot copy")
    for end, rules in EVERY_PARAGRAPH.items():
        if a["id"] in rules and b["id"] in FIXED_TEXT_AT[end]:
            return f"{a['id']} and {b['id']}: {b['id']} puts fixed text at the {end} of a paragraph"
    if a["id"] == "number_precision" and (a.get("params") or {}).get("decimals", 0) > 0 and b["id"] in NUMBERED_TEXT:
        return (f"{a['id']} and {b['id']}: {b['id']} numbers its parts ('SECTION 1', '1.'), which a person reads as "
                "labels, not as numbers to write with decimals ('SECTION 1.0')")
    if a["id"] == "sentence_count" and b["id"] in ONE_SENTENCE_EACH:
        most = REGISTRY[a["id"]].bounds(a.get("params") or {})
        least = REGISTRY[b["id"]].bounds(b.get("params") or {})
        if most and least and least[0] > most[1]:
            return (f"{a['id']} and {b['id']}: at least {least[0]:g} {REGISTRY[b['id']].measure} of a sentence or "
                    f"more each cannot come in at most {most[1]:g} sentences")
    language = (a.get("params") or {}).get("language") if a["id"] == "language" else None
    script = (a.get("params") or {}).get("script") if a["id"] == "script" else None
    if (language is not None and language != "en") or (script is not None and script != "latin"):
        params = b.get("params") or {}
        english = type_edits.quoted(b["id"], params) + [str(w) for key in ("keywords", "keyword", "word", "text")
                                                         for w in (params.get(key) if isinstance(params.get(key), list)
                                                                   else [params.get(key)]) if w]
        if any(any(ch.isascii() and ch.isalpha() for ch in text) for text in english):
            return f"{a['id']} and {b['id']}: {b['id']} asks for English words in an answer in another language"
    return None


def witness(constraints: Sequence[Mapping[str, Any]], base: str, rng: np.random.Generator,
            passes: int = 4) -> str | None:
    """A response that satisfies every code-verified constraint, built by applying the
    types' satisfying edits in turn (up to ``passes`` sweeps): the proof that a set is
    jointly satisfiable. ``None`` when the edits do not converge."""
    code = [c for c in constraints if REGISTRY[c["id"]].track == "code" and c["id"] in type_edits.EDITS]
    response = base
    for _ in range(passes):
        failing = [c for c in code if not REGISTRY[c["id"]](response, **c.get("params", {})).passed]
        if not failing:
            return response
        for i in rng.permutation(len(failing)):  # another order each sweep: edits that undo each other settle
            spec = failing[int(i)]
            response = type_edits.satisfy(spec["id"], response, spec.get("params", {}), rng)
    return response if all(REGISTRY[c["id"]](response, **c.get("params", {})).passed for c in code) else None


def draw_params(type_id: str, facts: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any] | None:
    """Parameters for one type: grounded in the facts, drawn by the type's writer, or none
    for a discovered type that takes none; ``None`` when the type cannot be asked here."""
    contract = REGISTRY[type_id]
    if contract.ground is not None:
        return contract.ground(facts, rng)
    writer = type_edits.EDITS.get(type_id)
    if writer is not None and writer.draw is not None:
        return writer.draw(rng)
    required = set(contract.params) - set(contract.optional)
    return {} if not required else None


def plan_set(types: Sequence[str], weights: np.ndarray, facts: Mapping[str, Any], config: SynthesizeConfig,
             rng: np.random.Generator, base: str) -> list[dict[str, Any]]:
    """One consistent constraint set, sized within the configured bounds as far as the
    image allows, with ``config.grounded`` visually grounded constraints first when the
    image supports them. Types are drawn by weight and added one at a time, each only if
    the set stays consistent and still has a witness response (so the set is satisfiable
    by construction, not by hope)."""
    size = int(rng.integers(config.min_constraints, config.max_constraints + 1))
    weight = dict(zip(types, np.asarray(weights, dtype=float)))
    chosen: list[dict[str, Any]] = []

    def fill(pool: list[str], target: int) -> None:
        w = np.array([weight[t] for t in pool])
        while len(chosen) < target and pool:
            i = int(rng.choice(len(pool), p=w / w.sum()))
            type_id = pool.pop(i)
            w = np.delete(w, i)
            params = draw_params(type_id, facts, rng)
            if params is None or (REGISTRY[type_id].fit is not None and REGISTRY[type_id].fit(facts, params)):
                continue  # the image supports none, or a person could not sensibly follow it for this image
            spec = {"id": type_id, "params": params}
            if conflicts(chosen, spec) is None and witness([*chosen, spec], base, rng) is not None:
                chosen.append(spec)

    grounded = [t for t in types if REGISTRY[t].needs]
    fill(grounded, min(config.grounded, size))
    taken = {c["id"] for c in chosen}
    fill([t for t in types if t not in taken], size)
    if len(chosen) < min(config.min_constraints, len(types)):
        raise GenerationError(f"only {len(chosen)} mutually consistent constraints for an image with facts "
                              f"{sorted(k for k in facts if facts[k])}; lower min_constraints")
    return chosen


def nearest_distance(vector: np.ndarray, pool: np.ndarray) -> float:
    """Cosine distance to the nearest instruction in the pool (2.0 for an empty pool)."""
    if pool.size == 0:
        return 2.0
    return float(1.0 - np.max(pool @ vector))


def with_category(specs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{"id": s["id"], "params": dict(s.get("params") or {}), "category": REGISTRY[s["id"]].category,
             "track": REGISTRY[s["id"]].track} for s in specs]


# -- reflection ------------------------------------------------------------------------------------
def choose_recovery(failed: Sequence[Mapping[str, Any]], history: Sequence[Mapping[str, Any]],
                    constraints: Sequence[Mapping[str, Any]], min_constraints: int) -> tuple[str, str]:
    """The recovery the diagnostics call for, and the constraint it targets: a first failure
    gets a local response edit; a constraint still failing after an edit gets its
    instruction rewritten (stated explicitly); one that failed twice is dropped, if the
    set keeps its minimum size (else rewritten again)."""
    counts = Counter(v["id"] for attempt in history for v in attempt["failed"])
    worst = max(failed, key=lambda v: (counts[v["id"]], v["id"]))
    seen = counts[worst["id"]]
    if seen == 0:
        return "response_edit", worst["id"]
    if seen >= 2 and len(constraints) > min_constraints:
        return "simplify", worst["id"]
    return "instruction_rewrite", worst["id"]


class Synthesizer:
    """The loop's models, built from a config (one per process)."""

    def __init__(self, config: SynthesizeConfig):
        from vicogym.instruct.judge import make_judge
        from vicogym.instruct.models import make_model

        self.config = config
        self.writer = make_model("writer", config.writer)
        self.target = make_model("target", config.target)
        self.composer = make_model("composer", config.composer)
        self.embedder = make_model("embedder", config.embedder)
        self.perceiver = make_model("perceiver", config.perceiver)
        self.judge = make_judge(config.judge)
        self.proposer = None
        #: the proposals behind the discovered types this process knows (id -> record)
        self.records: dict[str, dict[str, Any]] = {}
        if config.discover > 0:
            from vicogym.instruct.discovery import make_proposer
            from vicogym.instruct.sandbox import check_sandbox

            check_sandbox()  # proposed code runs only behind the OS sandbox: none here, no discovery

            self.proposer = make_proposer(config.proposer)

    def registry_size(self) -> int:
        """This run's registry: the seed types and the types it discovered (another run's
        discoveries in the same process are not this run's)."""
        return sum(c.origin == "seed" for c in REGISTRY.values()) + len(self.records)

    def verify(self, response: str, constraints: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        from vicogym.instruct.judge import verify_sample

        verdicts = verify_sample(response, constraints, self.judge)
        return [{**v, "params": c["params"]} for v, c in zip(verdicts, constraints)]

    # -- planning ----------------------------------------------------------------------------
    def plan(self, picture: Picture, coverage: Mapping[str, int], failures: Mapping[str, tuple[int, int]],
             pool: np.ndarray, rng: np.random.Generator) -> dict[str, Any]:
        from vicogym.instruct.models import describe

        types = supported_types(picture.facts, list(self.records))
        weights = type_weights(types, coverage, failures, self.config.coverage_weight, self.config.failure_weight)
        base = describe(picture.facts)
        candidates = []
        for _ in range(self.config.candidates):
            constraints = with_category(plan_set(types, weights, picture.facts, self.config, rng, base))
            instruction = self.composer.compose(picture.facts, constraints, rng)
            candidates.append((constraints, instruction))
        vectors = self.embedder.embed([c[1] for c in candidates])
        distances = [nearest_distance(v, pool) for v in vectors]
        best = int(np.argmax(distances))
        return {"constraints": candidates[best][0], "instruction": candidates[best][1], "embedding": vectors[best],
                "distance": distances[best], "candidates": len(candidates)}

    # -- execution, reflection, probing ---------------------------------------------------------
    def execute(self, picture: Picture, plan: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        constraints = [dict(c) for c in plan["constraints"]]
        instruction = plan["instruction"]
        response = self.writer.respond(picture.image, instruction, constraints, picture.facts, rng)
        verdicts = self.verify(response, constraints)
        score = pass_rate(verdicts)
        history: list[dict[str, Any]] = []
        while score < 1.0 and len(history) < self.config.max_attempts:
            failed = [v for v in verdicts if not v["pass"]]
            recovery, target = choose_recovery(failed, history, constraints, self.config.min_constraints)
            history.append({"recovery": recovery, "target": target, "score": score,
                            "failed": [{"id": v["id"], "expected": v["expected"], "actual": v["actual"],
                                        "detail": v["detail"]} for v in failed]})
            if recovery == "response_edit":
                response = self.writer.revise(picture.image, instruction, response, failed, constraints, rng)
            else:
                if recovery == "simplify":
                    constraints = [c for c in constraints if c["id"] != target]
                instruction = self.composer.compose(picture.facts, constraints, rng, explicit=(target,))
                response = self.writer.respond(picture.image, instruction, constraints, picture.facts, rng)
            verdicts = self.verify(response, constraints)
            previous, score = score, pass_rate(verdicts)
            if score <= previous and score < 1.0:
                break  # no improvement: stop early
        result = {"constraints": constraints, "instruction": instruction, "response": response, "verdicts": verdicts,
                  "score": score, "attempts": len(history), "recoveries": history, "accepted": score == 1.0}
        if result["accepted"]:
            result.update(self.probe(picture, instruction, constraints, rng))
        return result

    def probe(self, picture: Picture, instruction: str, constraints: Sequence[Mapping[str, Any]],
              rng: np.random.Generator) -> dict[str, Any]:
        responses = self.target.respond(picture.image, instruction, constraints, picture.facts, self.config.probes, rng)
        per_response = [self.verify(r, constraints) for r in responses]
        scores = [pass_rate(v) for v in per_response]
        difficulty = float(np.mean([1.0 - p for p in scores]))
        easy, medium = self.config.levels
        level = "easy" if difficulty <= easy else "medium" if difficulty <= medium else "hard"
        profile = [{"id": c["id"], "failed": sum(not v[i]["pass"] for v in per_response) / len(per_response)}
                   for i, c in enumerate(constraints)]
        return {"difficulty": difficulty, "level": level, "profile": profile, "probe_scores": scores}

    # -- discovery -----------------------------------------------------------------------------
    def discover(self, picture: Picture, rng: np.random.Generator) -> tuple[dict[str, Any] | None, str | None]:
        """A proposed type for this image: its record once admitted, else the reason it was not."""
        from vicogym.instruct.discovery import Rejected, admit

        try:  # a reply that is no proposal is rejected like a flawed proposal; a dead server stops the run
            proposal = self.proposer.propose(picture.facts, sorted(REGISTRY), rng, image=picture.image)
            if proposal is None:
                return None, None
            admit(proposal, judge=self.judge)
        except Rejected as exc:
            return None, exc.code
        self.records[proposal.id] = proposal.to_dict()
        return proposal.to_dict(), None


def episode_rng(seed: int, round: int, position: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([seed, round, position]))


def row_schema():
    """The Arrow schema of a synthesis run's shards."""
    import pyarrow as pa

    from vicogym.runs.trainer_columns import images_type, payloads_type, shard_schema

    return shard_schema([
        ("id", pa.string()), ("env_id", pa.string()), ("round", pa.int64()), ("position", pa.int64()),
        ("images", images_type()), ("instruction", pa.string()), ("constraints", pa.string()),
        ("response", pa.string()), ("verdicts", pa.string()), ("attempts", pa.int64()), ("recoveries", pa.string()),
        ("difficulty", pa.float64()), ("level", pa.string()), ("profile", pa.string()),
        ("probe_scores", pa.list_(pa.float64())), ("facts", pa.string()), ("image_source", pa.string()),
        ("discovered", pa.string()), ("provenance", pa.string()), ("payloads", payloads_type()),
    ])


def sample_row(config: SynthesizeConfig, round: int, position: int, picture: Picture, result: Mapping[str, Any],
               index: int, records: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The stored row of one accepted sample (with verl's columns: the ground truth is the
    constraint list and, for the discovered types among them, each one's id and SHA-256:
    their code lives once in the run's ``types.json``, never in a row)."""
    from vicogym.instruct.discovery import Proposal

    row_id = f"instruct-s{config.seed}-r{round:05d}-{position:03d}"
    constraints = result["constraints"]
    named = dict.fromkeys(c["id"] for c in constraints if REGISTRY[c["id"]].origin == "discovered")
    discovered = [{"id": t, "sha256": Proposal.from_json(records[t]).sha256} for t in named]
    truth = json.dumps({"constraints": constraints, "types": discovered}, sort_keys=True, ensure_ascii=False)
    from vicogym.arm import payload_list
    from vicogym.runs.trainer_columns import IMAGE_TOKEN, image_column

    return {
        "id": row_id, "env_id": ENV_ID, "round": round, "position": position,
        "images": image_column(row_id, picture.image),
        "instruction": result["instruction"],
        "constraints": json.dumps(constraints, sort_keys=True, ensure_ascii=False),
        "response": result["response"],
        "verdicts": json.dumps(result["verdicts"], sort_keys=True, ensure_ascii=False),
        "attempts": result["attempts"],
        "recoveries": json.dumps(result["recoveries"], sort_keys=True, ensure_ascii=False),
        "difficulty": result["difficulty"], "level": result["level"],
        "profile": json.dumps(result["profile"], sort_keys=True),
        "probe_scores": list(result["probe_scores"]),
        "facts": json.dumps(picture.facts, sort_keys=True, ensure_ascii=False),
        "image_source": json.dumps(picture.source, sort_keys=True, ensure_ascii=False),
        "discovered": json.dumps(discovered, sort_keys=True),
        "payloads": payload_list(picture.payloads),
        "provenance": json.dumps({"seed": config.seed, "round": round, "position": position,
                                  "package_version": vicogym.__version__, "env_id": ENV_ID}, sort_keys=True),
        "data_source": ENV_ID,
        "prompt": [{"role": "user", "content": IMAGE_TOKEN + result["instruction"]}],
        "ability": "instruction_following",
        "reward_model": {"style": "rule", "ground_truth": truth},
        "extra_info": {"id": row_id, "index": index, "split": "train", "question": result["instruction"],
                       "answer": result["response"], "label_rule": "constraints"},
    }


# -- the run ---------------------------------------------------------------------------------------
#: the file of a run's admitted discovered types (their proposals: code, parameters, cases);
#: read back only by :func:`vicogym.instruct.run_folder.load_types`
TYPES_FILE = "types.json"
TYPES_FORMAT = 1


def write_types(folder: str | Path, records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Store a run's admitted types (memory's records) in ``types.json``, each with the
    SHA-256 its rows name it by; the manifest's entry for the file."""
    from vicogym.instruct.discovery import Proposal
    from vicogym.runs.rounds import write_json_atomic
    from vicogym.runs.shards import file_sha256

    folder = Path(folder)
    entries = []
    for record in records:
        proposal = Proposal.from_json({k: v for k, v in record.items() if k != "round"})
        entries.append({"id": proposal.id, "round": record.get("round"), "sha256": proposal.sha256,
                        "proposal": proposal.to_dict()})
    write_json_atomic(folder / TYPES_FILE, {"format": TYPES_FORMAT, "types": entries})
    return {"file": TYPES_FILE, "sha256": file_sha256(folder / TYPES_FILE),
            "types": [{"id": e["id"], "sha256": e["sha256"]} for e in entries]}


def load_discovered(records: Sequence[Mapping[str, Any]], judge: Any = None) -> dict[str, dict[str, Any]]:
    """Admit again, in this process, the types earlier rounds discovered (their code runs
    in the sandbox); the records by id. ``RunError`` when one no longer passes admission."""
    from vicogym.instruct.discovery import admit_all

    records = [{k: v for k, v in r.items() if k != "round"} for r in records]
    _, rejected = admit_all(records, judge=judge)
    if rejected:
        raise RunError(f"a discovered type of this run no longer passes admission: {rejected[0]}")
    return {r["id"]: dict(r) for r in records}


class _RaySynthWorker:
    """A Ray actor executing samples with its own models (built once)."""

    def __init__(self, config: SynthesizeConfig):
        self.synth = Synthesizer(config)

    def execute(self, records: Mapping[str, Mapping[str, Any]], picture: Picture, plan: Mapping[str, Any],
                rng: np.random.Generator) -> dict[str, Any]:
        missing = [r for r in records.values() if r["id"] not in self.synth.records]
        self.synth.records.update(load_discovered(missing, self.synth.judge))
        return self.synth.execute(picture, plan, rng)


def execute_all(config: SynthesizeConfig, synth: Synthesizer, plans: Sequence[Any], ray_pool: Any = None) -> list[Any]:
    """Execution, reflection and probing of a round's planned samples (``None`` for an
    image without a plan), in order. A sample's result depends only on its plan and its
    random stream, so threads or Ray actors give the same results as one by one."""
    if ray_pool is not None:
        actors = ray_pool.wait()
        refs = [None if item is None else actors[i % len(actors)].execute.remote(synth.records, *item)
                for i, item in enumerate(plans)]
        return [None if ref is None else ray_pool.ray.get(ref) for ref in refs]

    def work(item: Any) -> Any:
        return None if item is None else synth.execute(item[0], item[1], item[2])

    with ThreadPoolExecutor(config.concurrency) as pool:
        return list(pool.map(work, plans))


def run_round(config: SynthesizeConfig, synth: Synthesizer, source: ImageSource, memory: Any, round: int,
              first_index: int, ray_pool: Any = None
              ) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, tuple[int, int]], list[dict[str, Any]],
                         list[dict[str, Any]]]:
    """One round from the memory as it stands: rows, statistics, probe counts, sample
    records and discovered types (nothing written yet)."""
    coverage, failures, pool = memory.coverage(), memory.failure_rates(), memory.embeddings()
    stats: dict[str, Any] = {"images": config.per_round, "rejected": Counter(), "recoveries": Counter(),
                             "attempts": Counter(), "levels": Counter(), "discovery": Counter()}
    discovered: list[dict[str, Any]] = []
    plans = []
    for position in range(config.per_round):
        rng = episode_rng(config.seed, round, position)
        picture = source.draw(rng)
        if synth.proposer is not None and rng.random() < config.discover:
            record, reason = synth.discover(picture, rng)
            if record is not None:
                discovered.append({**record, "round": round})
            if record is not None or reason is not None:  # (neither: the proposer proposed nothing)
                stats["discovery"]["admitted" if record else f"rejected: {reason}"] += 1
        try:
            plan = synth.plan(picture, coverage, failures, pool, rng)
        except GenerationError:
            stats["rejected"]["no consistent plan"] += 1
            plans.append(None)
            continue
        pool = plan["embedding"][None, :] if pool.size == 0 else np.vstack([pool, plan["embedding"][None, :]])
        plans.append((picture, plan, rng))

    results = execute_all(config, synth, plans, ray_pool)
    rows, records = [], []
    probes: dict[str, tuple[int, int]] = {}  # type -> (probed responses, failed ones)
    for position, (item, result) in enumerate(zip(plans, results)):
        if item is None:
            continue
        for step in result["recoveries"]:
            stats["recoveries"][step["recovery"]] += 1
        if not result["accepted"]:
            stats["rejected"]["constraints still failing after recovery"] += 1
            continue
        picture, plan, _ = item
        stats["attempts"][str(result["attempts"])] += 1
        stats["levels"][result["level"]] += 1
        for entry in result["profile"]:
            trials, failed = probes.get(entry["id"], (0, 0))
            probes[entry["id"]] = (trials + config.probes, failed + int(entry["failed"] * config.probes + 0.5))
        rows.append(sample_row(config, round, position, picture, result, first_index + len(rows), synth.records))
        records.append({"id": rows[-1]["id"], "position": position, "instruction": result["instruction"],
                        "constraints": result["constraints"],
                        "categories": sorted({c["category"] for c in result["constraints"]}),
                        "attempts": result["attempts"], "difficulty": result["difficulty"], "level": result["level"],
                        "embedding": synth.embedder.embed([result["instruction"]])[0]
                        if result["instruction"] != plan["instruction"] else plan["embedding"]})
    stats = {k: dict(sorted(v.items())) if isinstance(v, Counter) else v for k, v in stats.items()}
    stats.update(accepted=len(rows), registry=synth.registry_size(), discovered_types=len(discovered))
    return rows, stats, probes, records, discovered


def synthesize(config: SynthesizeConfig, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run (or resume) synthesis until the memory holds at least ``config.n`` samples;
    returns the manifest written to ``manifest.json``."""
    from vicogym.instruct.memory import Memory
    from vicogym.runs.rounds import write_json_atomic
    from vicogym.runs.shards import LOCK_FILE, RunFolder, shard_path, write_shard

    synth = Synthesizer(config)  # models and image sources are checked before the folder is touched
    source = ImageSource(config, synth.perceiver)
    out = Path(config.out)
    folder = RunFolder(out)
    if out.is_dir() and any(e.name != LOCK_FILE for e in out.iterdir()) and not (out / MEMORY_FILE).is_file():
        raise RunError(f"{out} is not empty and holds no {MEMORY_FILE}: not a synthesize run; use a new or empty --out")
    folder.lock()
    memory = Memory(out / MEMORY_FILE)
    ray_pool = None
    try:
        if config.backend == "ray":
            from vicogym.processes import ray_actors

            ray_pool = ray_actors(_RaySynthWorker, config, config)
        memory.check_identity(config.identity())
        synth.records.update(load_discovered(memory.discovered(), synth.judge))
        types = write_types(out, memory.discovered())  # (again: a kill may have come between a commit and the file)
        for stale in out.glob("part-*.parquet"):  # shards of rounds that were written but never committed
            if int(stale.stem.split("-")[1]) >= memory.next_round():
                stale.unlink()
        done = sum(r["stats"]["accepted"] for r in memory.rounds())
        started = time.perf_counter()
        round = memory.next_round()
        while done < config.n:
            if round >= config.max_rounds:
                raise GenerationError(f"{done} samples after {round} rounds (max_rounds); loosen the constraints "
                                      f"or raise max_rounds")
            rows, stats, probes, records, discovered = run_round(config, synth, source, memory, round, done, ray_pool)
            entry = write_shard(out, round, rows, stats, row_schema()) if rows else None
            memory.commit_round(round, entry and entry["name"], entry and entry["sha256"], stats, records, probes,
                                discovered)
            if discovered:
                types = write_types(out, memory.discovered())
            done += len(rows)
            if log:
                log(f"round {round}: {len(rows)} accepted of {config.per_round} images, {done}/{config.n} samples, "
                    f"registry {synth.registry_size()} types")
            round += 1
        manifest = {"env_id": ENV_ID, "identity": config.identity(), "samples": done,
                    "rounds": memory.rounds(), "registry": synth.registry_size(), "types": types,
                    "shards": [shard_path(out, r["round"]).name for r in memory.rounds() if r["shard"]],
                    "seconds_this_call": int(time.perf_counter() - started + 0.5)}
        write_json_atomic(out / "manifest.json", manifest)
        return manifest
    finally:
        if ray_pool is not None:
            ray_pool.close()
        source.close()
        memory.close()
        folder.unlock()
