"""Clients for real models behind an OpenAI-compatible chat server (vLLM, SGLang, hosted
APIs): an actor that answers visual questions and a rewriter that proposes edits.

Both send images as base64 PNG data URLs, bound the requests in flight, time out, and
retry with backoff on 429, 5xx and connection errors (the ``openai`` package's client).
The API key is read from an environment variable (``api_key_env``) when the client is
built and is never logged, stored in a config or written to a manifest; a spec names the
variable, not the key.

A spec on the command line: ``openai:MODEL@URL`` (``--actor openai:Qwen2.5-VL-7B@http://
localhost:8000/v1``); in Python, ``OpenAIActor(model=..., base_url=...)`` or the mapping
``{"name": "openai", "model": ..., "base_url": ...}``.
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vicogym.core import SHORT_ANSWER
from vicogym.errors import ModelError
from vicogym.extraction import EXTRACTORS, extract_answer
from vicogym.validation import is_int


def image_data_url(image: np.ndarray) -> str:
    from vicogym.images import encode_png

    return "data:image/png;base64," + base64.b64encode(encode_png(np.asarray(image, dtype=np.uint8))).decode("ascii")


def _data_url_image(url: str) -> np.ndarray:
    """The image of a PNG data URL (:func:`image_data_url`'s inverse)."""
    from vicogym.images import decode_png

    return decode_png(base64.b64decode(url.split(",", 1)[1]))


def parse_spec(spec: str) -> dict[str, Any]:
    """``openai:MODEL@URL`` as client settings."""
    if not isinstance(spec, str) or not spec.startswith("openai:") or "@" not in spec:
        raise ValueError(f"expected a model spec 'openai:MODEL@URL' (for example openai:qwen2.5-vl@http://localhost:8000/v1),"
                         f" got {spec!r}")
    model, url = spec[len("openai:"):].rsplit("@", 1)
    if not model or not re.match(r"^https?://", url):
        raise ValueError(f"expected 'openai:MODEL@URL' with a model name and an http(s) URL, got {spec!r}")
    return {"model": model, "base_url": url}


_GATES: dict[tuple[str, int], Any] = {}
_GATES_LOCK = threading.Lock()


def _gate(base_url: str, size: int) -> Any:
    """The bound on requests in flight to one server from this process: every client of
    ``base_url`` here (one per environment when episodes run side by side) shares it."""
    with _GATES_LOCK:
        return _GATES.setdefault((base_url, size), threading.BoundedSemaphore(size))


@dataclass
class _ChatClient:
    """What both clients share: one ``openai`` client, and a bound on requests in flight
    to the server, shared by the clients of this process that use it."""

    model: str
    base_url: str
    api_key_env: str = "OPENAI_API_KEY"
    max_in_flight: int = 8
    timeout: float = 60.0
    max_retries: int = 4
    temperature: float = 1.0
    max_tokens: int = 512
    system_prompt: str | None = None
    _client: Any = field(default=None, init=False, repr=False)
    _gate: Any = field(default=None, init=False, repr=False)
    #: the token counts the server reported for the last request (``{}`` when it gave none)
    last_usage: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        for name, low in (("max_in_flight", 1), ("max_retries", 0), ("max_tokens", 1)):
            v = getattr(self, name)
            if not is_int(v, low):
                raise ValueError(f"expected {name} to be an integer >= {low}, got {v!r}")
        if not isinstance(self.timeout, (int, float)) or not self.timeout > 0:
            raise ValueError(f"expected timeout as positive seconds, got {self.timeout!r}")
        parse_spec(f"openai:{self.model}@{self.base_url}")  # checks both
        self._gate = _gate(self.base_url, self.max_in_flight)

    @property
    def client(self) -> Any:
        if self._client is None:
            import openai

            key = os.environ.get(self.api_key_env) or "EMPTY"  # local servers take any key
            self._client = openai.OpenAI(base_url=self.base_url, api_key=key, timeout=self.timeout,
                                         max_retries=self.max_retries)
        return self._client

    def spec(self) -> dict[str, Any]:
        """The settings to rebuild this client (the key's variable, never the key)."""
        return {"model": self.model, "base_url": self.base_url, "api_key_env": self.api_key_env}

    def chat(self, content: list[dict[str, Any]], n: int = 1, seed: int | None = None) -> list[str]:
        """The texts of ``n`` choices for one user message (``ModelError`` after retries)."""
        import openai

        messages = ([{"role": "system", "content": self.system_prompt}] if self.system_prompt else []) + [
            {"role": "user", "content": content}]
        with self._gate:
            try:
                response = self.client.chat.completions.create(
                    model=self.model, messages=messages, n=n, temperature=self.temperature,
                    max_tokens=self.max_tokens, **({"seed": seed} if seed is not None else {}))
                usage = getattr(response, "usage", None)
                self.last_usage = {k: getattr(usage, k, None) for k in ("prompt_tokens", "completion_tokens")
                                   } if usage is not None else {}
                return [(choice.message.content or "") for choice in response.choices]
            except openai.APIStatusError as exc:
                retried = (
                    f" after {self.max_retries} retries" if exc.status_code == 429 or exc.status_code >= 500 else ""
                )
                raise ModelError(f"{self.base_url} answered {exc.status_code} for model {self.model!r}{retried}: "
                                 f"{_short(exc.message)}") from None
            except openai.APIConnectionError as exc:  # time-outs included
                raise ModelError(f"{self.base_url} did not answer for model {self.model!r} after {self.max_retries} "
                                 f"retries ({type(exc).__name__}); is the server running?") from None
            except Exception as exc:  # a 200 that is no chat completion (HTML, another API)
                raise ModelError(
                    f"{self.base_url} did not answer with a chat completion for model {self.model!r} "
                    f"({type(exc).__name__}: {_short(exc)}); is it an OpenAI-compatible /v1 endpoint?"
                ) from None


def _short(text: Any, limit: int = 200) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class OpenAIActor(_ChatClient):
    """An actor behind an OpenAI-compatible chat server. ``k`` answers come from one
    request with ``n=k`` where the server gives ``n`` choices, else from ``k`` requests
    (at most ``max_in_flight`` at a time); each response's answer is read by ``extractor``
    (see :func:`extract_answer`). ``prompt`` is put after the question."""

    extractor: str = "auto"
    prompt: str = SHORT_ANSWER
    use_n: bool | None = None  # None: try n, remember whether the server honours it

    def __post_init__(self) -> None:
        super().__post_init__()
        extract_answer("", self.extractor)  # checks the name
        self._pool = ThreadPoolExecutor(max_workers=self.max_in_flight)

    def answer(self, image: np.ndarray, question: str, k: int, *, rng: np.random.Generator,
               context: Mapping[str, Any]) -> list[str]:
        content = [{"type": "image_url", "image_url": {"url": image_data_url(image)}},
                   {"type": "text", "text": question + self.prompt}]
        seed = int(rng.integers(2**31))
        texts: list[str] = []
        if self.use_n is not False and k > 1:
            texts = self.chat(content, n=k, seed=seed)
            self.use_n = len(texts) == k
            if not self.use_n:
                texts = texts[:1]
        futures = [self._pool.submit(self.chat, content, 1, seed + i) for i in range(len(texts), k)]
        for future in futures:
            texts.extend(future.result()[:1])
        return [extract_answer(t, self.extractor) for t in texts]


def edit_prompt(structure: str, question: str, answer: str, pass_rate: float | None, zone: tuple[float, float],
                schema: Mapping[str, Any]) -> str:
    """What the rewriter reads: the structure, the question and answer, the actor's pass
    rate, which way to move it, and the edit schema."""
    low, high = zone
    if pass_rate is None:
        direction = f"bring the actor's pass rate into [{low}, {high}]"
    elif pass_rate > high:
        direction = (f"make the question harder to answer from the image: lower the pass rate from {pass_rate:.2f} "
                     f"into [{low}, {high}]")
    elif pass_rate < low:
        direction = (f"make the question easier to answer from the image: raise the pass rate from {pass_rate:.2f} "
                     f"into [{low}, {high}]")
    else:
        direction = f"keep the pass rate ({pass_rate:.2f}) within [{low}, {high}] while changing the image"
    return (f"You edit the structure behind a visual question so that a vision-language model finds it just hard "
            f"enough.\n\nStructure (JSON):\n{structure}\n\nQuestion: {question}\nAnswer: {answer}\n\nGoal: {direction}."
            f"\n\nReply with one edit as JSON matching this schema, and nothing else:\n"
            f"{json.dumps(schema, sort_keys=True)}")


def rewriter_content(env: Any, show_image: bool = True) -> list[dict[str, Any]]:
    """The user message every rewriter model reads (:class:`OpenAIRewriter` and
    :class:`TransformersRewriter` alike), as OpenAI chat content: the current sample's image
    (a PNG data URL, unless ``show_image`` is false) and :func:`edit_prompt` of its
    structure, question, answer, pass rate, sweet zone and the arm's edit schema."""
    env = env.unwrapped
    if env.sample is None:
        raise RuntimeError("reset the environment before asking the rewriter")
    text = edit_prompt(env.arm.encode(env.sample.structure)[0], env.sample.question, env.sample.answer,
                       env.pass_rate, env.config.sweet_zone, env.arm.edit_schema())
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if show_image:
        content.insert(0, {"type": "image_url", "image_url": {"url": image_data_url(env.sample.image)}})
    return content


def parse_edit(text: str) -> Any:
    """The edit in a rewriter's response: the JSON in a ```json fence, or the outermost
    JSON object of the text; the text itself otherwise (the environment then names what is
    wrong with it)."""
    fenced = re.findall(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    candidates = fenced[::-1] + [text[text.find("{"): text.rfind("}") + 1]] if "{" in text else fenced[::-1]
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return text


@dataclass
class OpenAIRewriter(_ChatClient):
    """A rewriter behind an OpenAI-compatible chat server, bound to an environment
    (:meth:`for_env`): it reads the current sample, pass rate and the arm's edit schema,
    and proposes one edit as JSON. A response that is no JSON edit is sent as it is: the
    environment rejects it with the parser's reason in ``info["error"]``."""

    env: Any = None
    show_image: bool = True
    last_response: str = field(default="", init=False)

    @classmethod
    def for_env(cls, env: Any, **settings: Any) -> OpenAIRewriter:
        return cls(env=env, **settings)

    def prompt(self) -> list[dict[str, Any]]:
        return rewriter_content(self.env, self.show_image)

    def propose(self, observation: Mapping[str, Any], rng: np.random.Generator) -> Any:
        self.last_response = self.chat(self.prompt(), n=1, seed=int(rng.integers(2**31)))[0]
        return parse_edit(self.last_response)


@dataclass
class TransformersActor:
    """An actor from a local Hugging Face image-text-to-text model folder (transformers'
    ``AutoProcessor`` and ``AutoModelForImageTextToText``, local files only), for small
    experiments without a server. The ``k`` answers are sampled in batches of
    ``batch_size``, seeded from the environment's generator; answers are read by
    ``extractor``. Spec: ``"transformers:/path/to/model"``."""

    model_dir: str
    device: str = "cpu"
    batch_size: int = 8
    max_new_tokens: int = 32
    temperature: float = 1.0
    extractor: str = "auto"
    prompt: str = SHORT_ANSWER
    _model: Any = field(default=None, init=False, repr=False)
    _processor: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        from pathlib import Path

        if not isinstance(self.model_dir, str) or not (Path(self.model_dir) / "config.json").is_file():
            raise ValueError(
                f"expected model_dir as a transformers model folder with config.json, got {self.model_dir!r}"
            )
        for name in ("batch_size", "max_new_tokens"):
            v = getattr(self, name)
            if not is_int(v, 1):
                raise ValueError(f"expected {name} to be a positive integer, got {v!r}")
        extract_answer("", self.extractor)

    def load(self) -> None:
        if self._model is None:
            self._processor, self._model = load_image_text_model(self.model_dir, self.device)

    def answer(self, image: np.ndarray, question: str, k: int, *, rng: np.random.Generator,
               context: Mapping[str, Any]) -> list[str]:
        import torch
        from PIL import Image

        self.load()
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question + self.prompt}]}]
        text = self._processor.apply_chat_template(messages, add_generation_prompt=True)
        picture = Image.fromarray(np.asarray(image, dtype=np.uint8))
        answers: list[str] = []
        for start in range(0, k, self.batch_size):
            size = min(self.batch_size, k - start)
            inputs = self._processor(images=[picture] * size, text=[text] * size, return_tensors="pt",
                                     padding=True).to(self.device)
            torch.manual_seed(int(rng.integers(2**31)))
            with torch.no_grad():
                out = self._model.generate(**inputs, do_sample=True, temperature=self.temperature,
                                           max_new_tokens=self.max_new_tokens)
            texts = self._processor.batch_decode(out[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)
            answers.extend(extract_answer(t, self.extractor) for t in texts)
        return answers


#: what a local rewriter's model folder must hold, said when it does not
MODEL_FOLDER = ("a transformers image-text-to-text model folder: config.json, the weights and the processor's files, "
                "as save_pretrained writes them for the model and its AutoProcessor")
_LOADED: dict[tuple[Any, ...], tuple[Any, Any]] = {}
_LOADED_LOCK = threading.Lock()


def load_image_text_model(model_dir: str, device: str = "cpu") -> tuple[Any, Any]:
    """The processor and model (in eval mode, on ``device``) of a local image-text-to-text
    model folder, local files only; loaded once per process for a folder's files as they
    are (a folder written again is loaded again). ``ModelError`` naming the folder and what
    it must hold when it cannot be loaded."""
    from pathlib import Path

    folder = Path(model_dir)
    if not (folder / "config.json").is_file():
        raise ModelError(f"{model_dir} is no model folder: expected {MODEL_FOLDER}")
    stamp = tuple(sorted((f.name, f.stat().st_mtime_ns, f.stat().st_size) for f in folder.iterdir() if f.is_file()))
    key = (str(folder.resolve()), str(device), stamp)
    with _LOADED_LOCK:
        if key not in _LOADED:
            try:
                import torch  # noqa: F401
                from transformers import AutoModelForImageTextToText, AutoProcessor
            except ImportError as exc:
                from vicogym.install import install_command

                raise ModelError(f"a local model ({model_dir}) needs torch and transformers ({exc.name or exc} is "
                                 f"missing): {install_command('natural')}") from None
            try:
                processor = AutoProcessor.from_pretrained(model_dir, local_files_only=True)
                model = AutoModelForImageTextToText.from_pretrained(model_dir, local_files_only=True)
            except (OSError, ValueError, KeyError) as exc:
                raise ModelError(f"{model_dir} could not be loaded ({_short(exc)}); expected {MODEL_FOLDER}") from None
            _LOADED[key] = (processor, model.to(device).eval())
        return _LOADED[key]


@dataclass
class TransformersRewriter:
    """A rewriter from a local Hugging Face image-text-to-text model folder (transformers'
    ``AutoProcessor`` and ``AutoModelForImageTextToText``, local files only), bound to an
    environment (:meth:`for_env`): it reads exactly what :class:`OpenAIRewriter` sends
    (:func:`rewriter_content`: the image, the structure, question, answer, pass rate, the
    direction to move it and the arm's edit schema) through the model's chat template, and
    its response is read by the same :func:`parse_edit`; a response that is no JSON edit
    is sent as it is and the environment rejects it with the parser's reason. Sampling is
    seeded from the generator ``propose`` is handed (``temperature=0``: greedy). The model
    is loaded once per process (:func:`load_image_text_model`). Spec:
    ``"transformers:/path/to/model"``."""

    model_dir: str
    env: Any = None
    device: str = "cpu"
    max_new_tokens: int = 256
    temperature: float = 1.0
    show_image: bool = True
    system_prompt: str | None = None
    last_response: str = field(default="", init=False)

    def __post_init__(self) -> None:
        from pathlib import Path

        if not isinstance(self.model_dir, str) or not (Path(self.model_dir) / "config.json").is_file():
            raise ValueError(f"expected the rewriter's model_dir as {MODEL_FOLDER}; {self.model_dir!r} holds no "
                             f"config.json")
        if not is_int(self.max_new_tokens, 1):
            raise ValueError(f"expected max_new_tokens to be a positive integer, got {self.max_new_tokens!r}")
        if isinstance(self.temperature, bool) or not isinstance(self.temperature, (int, float)) or not (
                0 <= self.temperature < float("inf")):
            raise ValueError(f"expected temperature as a number >= 0 (0: greedy), got {self.temperature!r}")
        if not isinstance(self.device, str) or not self.device:
            raise ValueError(f"expected device as a torch device name such as 'cpu' or 'cuda:0', got {self.device!r}")

    @classmethod
    def for_env(cls, env: Any, **settings: Any) -> TransformersRewriter:
        return cls(env=env, **settings)

    def prompt(self) -> list[dict[str, Any]]:
        return rewriter_content(self.env, self.show_image)

    def chat(self, content: list[dict[str, Any]], n: int = 1, seed: int | None = None) -> list[str]:
        """The texts of ``n`` sampled responses to one user message (OpenAI chat content:
        an ``image_url`` part is the current sample's image, handed to the processor)."""
        processor, model = load_image_text_model(self.model_dir, self.device)  # names a missing extra
        import torch
        from PIL import Image

        parts: list[dict[str, Any]] = []
        images = []
        for part in content:
            if part.get("type") == "image_url":
                parts.append({"type": "image"})
                images.append(Image.fromarray(_data_url_image(part["image_url"]["url"])))
            else:
                parts.append(dict(part))
        messages = ([{"role": "system", "content": self.system_prompt}] if self.system_prompt else []) + [
            {"role": "user", "content": parts}]
        text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        inputs = processor(images=images or None, text=[text], return_tensors="pt").to(self.device)
        sampling = {"do_sample": True, "temperature": float(self.temperature)} if self.temperature > 0 else {
            "do_sample": False}
        if seed is not None:
            torch.manual_seed(int(seed))
        with torch.no_grad():
            out = model.generate(**inputs, max_new_tokens=self.max_new_tokens, num_return_sequences=n, **sampling)
        return processor.batch_decode(out[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)

    def propose(self, observation: Mapping[str, Any], rng: np.random.Generator) -> Any:
        self.last_response = self.chat(self.prompt(), n=1, seed=int(rng.integers(2**31)))[0]
        return parse_edit(self.last_response)


__all__ = ["EXTRACTORS", "OpenAIActor", "TransformersActor", "OpenAIRewriter", "TransformersRewriter", "edit_prompt",
           "extract_answer", "image_data_url", "parse_edit", "parse_spec", "rewriter_content"]
