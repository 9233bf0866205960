"""The models the instruction-synthesis loop calls, each with a simulated stand-in (the
default, no server needed) and an OpenAI-compatible client (vLLM and the like):

- a *writer* (the synthesis model): answers an instruction about an image, and revises
  its answer given the verifiers' diagnostics (reflection's local response edit);
- a *target* model, probed K times for the sample's difficulty;
- a *composer*: turns the constraint phrases into one instruction (templates by default);
- an *embedder*: instructions as unit vectors for the diversity pool (a hashing embedder
  by default, a local Hugging Face encoder when one is configured);
- a *perceiver*: what an image without a structure shows (``objects``, ``texts``).

Specs on the command line: ``simulated`` (or ``template`` / ``hashing``),
``openai:MODEL@URL``, and for the embedder a local model folder.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import vicogym.editors.instruct as type_edits
from vicogym.clients import _ChatClient, image_data_url, parse_spec
from vicogym.errors import ModelError
from vicogym.programs.instruct import REGISTRY
from vicogym.validation import pick

#: how often a simulated target of skill 1 breaks a constraint of each category (the
#: ordering VISA reports: counting, lexical and format fail most, style and conditional least)
CATEGORY_FAILURE = {"counting": 0.30, "lexical": 0.25, "format": 0.22, "structural": 0.18, "spatial": 0.22,
                    "attribute": 0.15, "object_grounded": 0.18, "ocr_grounded": 0.15, "style": 0.05, "causal": 0.06,
                    "conditional": 0.03}


def describe(facts: Mapping[str, Any]) -> str:
    """A plain description of what the facts say an image shows (the simulated models'
    starting point, so their answers talk about the image)."""
    parts = []
    objects = facts.get("objects") or []
    if objects:
        names = [str(o.get("name") or o.get("category")) for o in objects[:6]]
        many = f"{len(objects)} objects, among them" if len(objects) > 1 else "one object:"
        parts.append(f"The image shows {many} {', '.join(names)}.")
    rows = facts.get("rows") or []
    if rows:
        top = max(rows, key=lambda r: r["value"])
        parts.append(f"The chart compares {len(rows)} values; the largest is {top['label']} at {top['value']:g}.")
    texts = facts.get("texts") or []
    if texts:
        parts.append(f"It is labelled {texts[0]}.")
    if not parts:
        parts.append("The picture shows a scene with several things in it.")
    parts.append("Each part of the picture is clearly visible and easy to describe in a few words.")
    return " ".join(parts)


def _discovered_satisfy(type_id: str, response: str) -> str:
    """A discovered type has no writer: the stand-in appends its first passing example."""
    contract = REGISTRY[type_id]
    example = next(case.response for case in contract.cases if case.passed)
    return f"{response}\n\n{example}" if response else example


def follow(response: str, spec: Mapping[str, Any], rng: np.random.Generator, obey: bool) -> str:
    """``response`` edited to satisfy (``obey``) or violate the constraint ``spec``."""
    type_id, params = spec["id"], dict(spec.get("params") or {})
    if type_id not in type_edits.EDITS:
        return _discovered_satisfy(type_id, response) if obey else response
    edit = type_edits.satisfy if obey else type_edits.violate
    return edit(type_id, response, params, rng)


@dataclass
class SimulatedWriter:
    """The synthesis model's stand-in: it starts from a description of the image and follows
    each constraint with probability ``skill`` (in a random order, so a later edit may undo
    an earlier one, as a real model's drafts do); revising fixes the failed constraints."""

    skill: float = 0.8

    def respond(self, image: np.ndarray, instruction: str, constraints: Sequence[Mapping[str, Any]],
                facts: Mapping[str, Any], rng: np.random.Generator) -> str:
        response = describe(facts)
        for i in rng.permutation(len(constraints)):
            if rng.random() < self.skill:
                response = follow(response, constraints[int(i)], rng, True)
        return response

    def revise(self, image: np.ndarray, instruction: str, response: str, failed: Sequence[Mapping[str, Any]],
               constraints: Sequence[Mapping[str, Any]], rng: np.random.Generator) -> str:
        by_id = {(c["id"], json.dumps(c.get("params") or {}, sort_keys=True)): c for c in constraints}
        for verdict in failed:
            spec = by_id.get((verdict["id"], json.dumps(verdict.get("params") or {}, sort_keys=True)))
            if spec is not None:
                response = follow(response, spec, rng, True)
        return response


@dataclass
class SimulatedTarget:
    """The probed model's stand-in: each constraint of category ``c`` is broken with
    probability ``CATEGORY_FAILURE[c] / skill`` (capped at 0.95)."""

    skill: float = 1.0

    def respond(self, image: np.ndarray, instruction: str, constraints: Sequence[Mapping[str, Any]],
                facts: Mapping[str, Any], k: int, rng: np.random.Generator) -> list[str]:
        out = []
        for _ in range(k):
            response = describe(facts)
            for i in rng.permutation(len(constraints)):
                spec = constraints[int(i)]
                fail = min(0.95, CATEGORY_FAILURE.get(REGISTRY[spec["id"]].category, 0.2) / self.skill)
                response = follow(response, spec, rng, rng.random() >= fail)
            out.append(response)
        return out


def _messages(image: np.ndarray | None, text: str) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    if image is not None:
        content.append({"type": "image_url", "image_url": {"url": image_data_url(image)}})
    content.append({"type": "text", "text": text})
    return content


def _seed(rng: np.random.Generator) -> int:
    return int(rng.integers(2**31 - 1))


REVISE_PROMPT = ("Your answer to the instruction below failed some of its requirements. Rewrite the answer so "
                 "that it meets every requirement; change only what the failures need.\n\nInstruction:\n{instruction}"
                 "\n\nYour answer:\n{response}\n\nFailures:\n{failures}\n\nReply with the corrected answer only.")


@dataclass
class OpenAIWriter(_ChatClient):
    """The synthesis model behind an OpenAI-compatible server."""

    temperature: float = 0.7
    max_tokens: int = 1024

    def respond(self, image, instruction, constraints, facts, rng) -> str:
        return self.chat(_messages(image, instruction), n=1, seed=_seed(rng))[0]

    def revise(self, image, instruction, response, failed, constraints, rng) -> str:
        failures = "\n".join(f"- {v['id']}: expected {v['expected']}, got {v['actual']} {v.get('detail', '')}".rstrip()
                             for v in failed)
        prompt = REVISE_PROMPT.format(instruction=instruction, response=response, failures=failures)
        return self.chat(_messages(image, prompt), n=1, seed=_seed(rng))[0]


@dataclass
class OpenAITarget(_ChatClient):
    """The probed model behind an OpenAI-compatible server (K choices in one request)."""

    max_tokens: int = 1024

    def respond(self, image, instruction, constraints, facts, k, rng) -> list[str]:
        texts = self.chat(_messages(image, instruction), n=k, seed=_seed(rng))
        if len(texts) != k:
            raise ModelError(f"{self.base_url} returned {len(texts)} choices for n={k}; does the server support n?")
        return texts


# -- composers --------------------------------------------------------------------------------
TASKS = {
    "chart": ("Write a short report on this chart.", "Summarise what the chart shows.",
              "Explain the chart to a colleague who cannot see it."),
    "clevr": ("Describe the scene in the image.", "Write a short description of the objects in this picture.",
              "Tell a friend what is on the table in the image."),
    "natural": ("Describe this photograph.", "Write a caption-style description of the image.",
                "Explain what the picture shows."),
}
DEFAULT_TASKS = ("Describe the image.", "Write about what you see in the picture.", "Comment on this image.")
CONNECTORS = ("", "Also, ", "In addition, ", "Make sure that you follow this: ", "Requirement: ")


@dataclass
class TemplateComposer:
    """A task sentence for the image's kind, then each constraint's phrasing, in a random
    order with varied connectors."""

    def compose(self, facts: Mapping[str, Any], constraints: Sequence[Mapping[str, Any]], rng: np.random.Generator,
                explicit: Sequence[str] = ()) -> str:
        tasks = TASKS.get(str(facts.get("source")), DEFAULT_TASKS)
        lines = [pick(rng, tasks)]
        for i in rng.permutation(len(constraints)):
            spec = constraints[int(i)]
            text = phrase_of(spec, rng)
            if spec["id"] in explicit:
                text = f"Important (checked exactly): {text}"
            connector = pick(rng, CONNECTORS)
            if connector and text[:2].istitle():  # "Also, end with ..." (an acronym such as "AI" stays)
                text = text[0].lower() + text[1:]
            lines.append(connector + text)
        return "\n".join(lines)


def phrase_of(spec: Mapping[str, Any], rng: np.random.Generator) -> str:
    """One phrasing of a constraint (a discovered type is phrased by its description)."""
    params = dict(spec.get("params") or {})
    if spec["id"] in type_edits.EDITS:
        return type_edits.phrase(spec["id"], params, rng)
    contract = REGISTRY[spec["id"]]
    shown = ", ".join(f"{k} = {v}" for k, v in sorted(params.items()))
    return contract.description + (f" ({shown})" if shown else "")


COMPOSE_PROMPT = ("Write one natural instruction for a vision-language model about the attached image. It must ask "
                  "for the task and state every requirement below without changing any number, word or quoted "
                  "text. Reply with the instruction only.\n\nTask and requirements:\n{lines}")


@dataclass
class OpenAIComposer(_ChatClient):
    """An LLM composer: the template composer's lines rewritten into one fluent instruction."""

    temperature: float = 0.9

    def compose(self, facts, constraints, rng, explicit=()) -> str:
        """The model's instruction when it keeps every parameter value of the constraints
        (numbers, words, quoted text); the template draft otherwise, since an instruction
        that drops a constraint would make its verifier judge something never asked."""
        draft = TemplateComposer().compose(facts, constraints, rng, explicit)
        text = self.chat(_messages(None, COMPOSE_PROMPT.format(lines=draft)), n=1, seed=_seed(rng))[0].strip()
        return text if text and not missing_values(text, draft, constraints) else draft


def missing_values(instruction: str, draft: str, constraints: Sequence[Mapping[str, Any]]) -> list[str]:
    """The constraints' parameter values (numbers and strings, list items included) that
    the template ``draft`` states and ``instruction`` does not (case-insensitive; values
    the draft leaves out, such as a grounded constraint's expected answer, must stay out)."""
    lowered, stated = instruction.lower(), draft.lower()
    missing = []
    for spec in constraints:
        for value in (spec.get("params") or {}).values():
            for item in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(item, bool) or not isinstance(item, (str, int, float)):
                    continue
                shown = f"{item:g}" if isinstance(item, float) else str(item)
                if shown.lower() in stated and shown.lower() not in lowered:
                    missing.append(shown)
    return missing


# -- embedders --------------------------------------------------------------------------------
@dataclass
class HashingEmbedder:
    """Word unigrams and bigrams and character 4-grams hashed (BLAKE2, stable across
    processes) into ``dim`` signed buckets; unit length."""

    dim: int = 512

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            tokens = re.findall(r"\w+", text.lower())
            features = tokens + [" ".join(p) for p in zip(tokens, tokens[1:])]
            joined = " ".join(tokens)
            features += [joined[i:i + 4] for i in range(max(0, len(joined) - 3))]
            for feature in features:
                digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
                index = int.from_bytes(digest[:4], "little") % self.dim
                out[row, index] += 1.0 if digest[4] & 1 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


@dataclass
class TransformersEmbedder:
    """A local Hugging Face encoder (``AutoModel`` from a folder, local files only), mean
    pooled over tokens; unit length."""

    path: str
    max_length: int = 256
    _model: Any = field(default=None, init=False, repr=False)
    _tokenizer: Any = field(default=None, init=False, repr=False)

    def load(self) -> None:
        if self._model is None:
            from vicogym.arm import require_module

            require_module("transformers", "natural", "a local embedding model")
            from transformers import AutoModel, AutoTokenizer

            try:
                self._tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
                self._model = AutoModel.from_pretrained(self.path, local_files_only=True).eval()
            except (OSError, ValueError) as exc:
                raise ValueError(f"--embedder {self.path}: not a loadable local model folder ({exc})") from None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        self.load()
        batch = self._tokenizer(list(texts), padding=True, truncation=True, max_length=self.max_length,
                                return_tensors="pt")
        with torch.no_grad():
            hidden = self._model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = ((hidden * mask).sum(1) / mask.sum(1).clamp(min=1)).numpy().astype(np.float32)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.where(norms == 0, 1.0, norms)


# -- perceivers --------------------------------------------------------------------------------
@dataclass
class SimulatedPerceiver:
    """For images without a structure, the stand-in reports nothing it cannot know: no
    objects and no text, so only constraints on the response's form are planned."""

    def perceive(self, image: np.ndarray, rng: np.random.Generator) -> dict[str, Any]:
        return {"source": "model"}


PERCEIVE_PROMPT = ('List what the image shows as JSON: {"objects": [{"name": ..., "category": ..., "color": ..., '
                   '"x": centre 0-1 from the left, "y": centre 0-1 from the top}], "texts": [every legible text]}. '
                   "Reply with the JSON only.")


@dataclass
class OpenAIPerceiver(_ChatClient):
    """A model's report of an image's objects and texts (for images without a structure)."""

    temperature: float = 0.0

    def perceive(self, image, rng) -> dict[str, Any]:
        text = self.chat(_messages(image, PERCEIVE_PROMPT), n=1, seed=_seed(rng))[0]
        match = re.search(r"\{.*\}", text, re.DOTALL)
        try:
            data = json.loads(match.group(0)) if match else None
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise ModelError(f"{self.base_url} did not answer the perception prompt with a JSON object: {text[:200]!r}")
        objects = [o for o in data.get("objects") or [] if isinstance(o, dict) and o.get("name")]
        texts = [str(t) for t in data.get("texts") or [] if str(t).strip()]
        return {"source": "model", **({"objects": objects} if objects else {}), **({"texts": texts} if texts else {})}


# -- specs -------------------------------------------------------------------------------------
_SIMULATED = {"writer": SimulatedWriter, "target": SimulatedTarget, "composer": TemplateComposer,
              "embedder": HashingEmbedder, "perceiver": SimulatedPerceiver}
_OPENAI = {"writer": OpenAIWriter, "target": OpenAITarget, "composer": OpenAIComposer, "perceiver": OpenAIPerceiver}
_DEFAULT_NAMES = {"composer": ("template", "simulated"), "embedder": ("hashing", "simulated")}


def make_model(role: str, spec: Any) -> Any:
    """The ``role`` model a spec names: ``"simulated"`` (``"template"`` for the composer,
    ``"hashing"`` for the embedder), ``{"kind": "simulated", "skill": 0.9}``,
    ``"openai:MODEL@URL"``, or for the embedder a local model folder."""
    settings: dict[str, Any] = {}
    if isinstance(spec, Mapping):
        settings = {k: v for k, v in spec.items() if k != "kind"}
        spec = spec.get("kind", "simulated")
    names = _DEFAULT_NAMES.get(role, ("simulated",))
    if spec in names:
        return _SIMULATED[role](**settings)
    if isinstance(spec, str) and spec.startswith("openai:") and role in _OPENAI:
        return _OPENAI[role](**parse_spec(spec), **settings)
    if role == "embedder" and isinstance(spec, str) and spec:
        return TransformersEmbedder(spec, **settings)
    allowed = " or ".join(repr(n) for n in names) + (", or 'openai:MODEL@URL'" if role in _OPENAI else "") + (
        ", or a local model folder" if role == "embedder" else "")
    raise ValueError(f"expected the {role} as {allowed}, got {spec!r}")


#: what each role's stand-in leaves in a synthesis run's data (said wherever the data is
#: exported), for the roles whose stand-in writes text, sets pass rates or decides verdicts
STAND_IN_EFFECTS = {
    "writer": "the responses are the simulated writer's placeholders (a fixed description of the image edited to "
              "meet each constraint), not a model's text",
    "target": "the difficulty levels, and which samples were kept, come from the simulated target's pass rates",
    "judge": "judge-track constraints, where a sample has any, were decided by the simulated judge (a cue match)",
    "perceiver": "what folder images show is the simulated perceiver's report (nothing: only constraints on the "
                 "response's form were planned for them)",
    "proposer": "discovered constraint types came from the simulated proposer (a fixed bank of types)",
}


def is_stand_in(role: str, spec: Any) -> bool:
    """Whether ``spec`` names the ``role`` model's simulated stand-in (the composer's
    templates and the hashing embedder are no stand-ins: they are what they say)."""
    if role not in STAND_IN_EFFECTS:
        return False
    if isinstance(spec, Mapping):
        spec = spec.get("kind", "simulated")
    return spec is None or spec == "simulated"


def stand_ins(identity: Mapping[str, Any]) -> dict[str, str] | None:
    """The stand-ins behind a synthesis run's data (its settings, as the memory records
    them): ``{role: "simulated", ..., "note": what they left and how to plug models in}``,
    or ``None`` where models did it all. The perceiver counts where the run read folders of
    images, the proposer where it discovered types."""
    roles = ["writer", "target", "judge"]
    if any(not str(source).startswith("vicogym/") for source in identity.get("images") or ()):
        roles.append("perceiver")
    if (identity.get("discover") or 0) > 0:
        roles.append("proposer")
    found = [role for role in roles if is_stand_in(role, identity.get(role, "simulated"))]
    if not found:
        return None
    flags = " ".join(f"--{role} openai:MODEL@URL" for role in found)
    note = (f"{'; '.join(STAND_IN_EFFECTS[role] for role in found)}; stand-ins, not models: plug models in with "
            f"`vicogym synthesize {flags}` (docs/synthesize.md)")
    return {**dict.fromkeys(found, "simulated"), "note": note}
