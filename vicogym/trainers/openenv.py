"""Every registered vicogym environment as an OpenEnv server (``vicogym serve ENV_ID``).

:func:`make_app` builds the FastAPI app with OpenEnv's own ``create_app``: the WebSocket
session endpoint ``/ws`` (one :class:`VicoEnvironment`, so one vicogym environment, per
connection), and OpenEnv's stateless HTTP routes ``/reset``, ``/step``, ``/state``,
``/schema``, ``/health``, ``/metadata`` (OpenEnv makes a fresh :class:`VicoEnvironment` for
each HTTP call and closes it when the call returns, so a multi-step episode needs the
WebSocket; :class:`VicoEnvClient` speaks it), plus ``GET /capacity`` (the environments
held, :func:`capacity`).

One action type serves every kind of environment (:data:`vicogym.registry.ENV_KINDS`):
``edit`` for the edit environments (Chart, CLEVR, Natural: an edit as JSON text or an
object; a model's whole reply is parsed leniently, as :func:`vicogym.clients.parse_edit`
does), ``action`` for ``vicogym/Evidence-v0`` (``{"action": "zoom", ...}``), and
``response`` for ``vicogym/Instruct-v0``. Every answer is an observation: a rejected edit
or action, a step before ``reset``, a step after the episode ended (the server knows it
ended and answers ``episode_over`` without asking the environment, whatever the
environment would raise), after the session expired, or an environment's unexpected
error come back with ``error`` set (``{code, message, op, field}``), never as a server
error. Wrong JSON types in the action are OpenEnv's validation error (HTTP 422, a
``VALIDATION_ERROR`` frame on the WebSocket).

Limits: ``max_sessions`` bounds the vicogym environments the server holds, all of them
(:class:`Environments`, one per app): a WebSocket session's from its first reset to its
end, an HTTP ``/reset``'s for that call, and the unused ones kept warm for the next
session. Over the bound, an HTTP reset is answered at once with 503 (``code:
server_full``, ``Retry-After``), and a WebSocket session over ``max_sessions`` is refused
(OpenEnv's ``CAPACITY_REACHED`` frame, worded with what to do); a session the server
admitted waits for an environment an HTTP call holds (those calls get none while it
waits). A session idle for ``session_ttl_s`` seconds is closed and its environment given
back (OpenEnv's idle reaper, which looks every ``max(ttl / 4, 5)`` seconds), and an
environment unused for ``session_ttl_s`` seconds is closed and its memory returned. A
request body or WebSocket message over ``max_request_bytes`` is answered with 413 (HTTP)
or a ``REQUEST_TOO_LARGE`` error frame (the session stays open); uvicorn closes the
connection on a message over four times the limit (:func:`uvicorn_config`).
"""

from __future__ import annotations

import base64
import contextvars
import functools
import gc
import json
import logging
import secrets
import threading
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from vicogym.errors import MissingExtra, VicogymError
from vicogym.install import install_command

try:
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient
    from openenv.core.env_server import (
        Action,
        ConcurrencyConfig,
        Environment,
        Observation,
        State,
        create_app,
    )
    from openenv.core.env_server.types import EnvironmentMetadata
    from pydantic import BaseModel, ConfigDict, Field
except ImportError as exc:  # pragma: no cover - the trainers extra is what brings them
    raise MissingExtra(f"vicogym serve needs openenv, fastapi and uvicorn ({exc}); install them with "
                       f"{install_command('trainers')}") from None

from vicogym.trainers.common import (
    EDIT_ASK,
    MAX_PIXELS,
    describe_views,
    evidence_reply,
    feedback,
    fit_image,
    pixels_from,
    rewriter_prompt,
    step_edit,
    structure_text,
)
from vicogym.validation import MAX_SEED, did_you_mean, is_int, is_number

#: defaults of :func:`make_app` (and of ``vicogym serve``)
MAX_SESSIONS = 64
MAX_REQUEST_BYTES = 1 << 20
SESSION_TTL_S = 600.0
#: how long an admitted WebSocket session's reset waits for an environment that HTTP calls hold
SESSION_WAIT_S = 30.0
#: the error codes the server itself gives (the environments' own codes come through as
#: they are: :data:`vicogym.errors.EDIT_ERROR_CODES`, :data:`vicogym.evidence.protocol.ERROR_CODES`)
SERVER_ERROR_CODES: Mapping[str, str] = {
    "no_episode": "a step before reset (or after a reset that failed): call reset first",
    "episode_over": "the episode has ended: call reset for a new one",
    "session_closed": "the session was closed (idle for longer than the server's session TTL): open a new one",
    "server_full": "the server holds its maximum of --max-sessions environments: retry later, or start the server "
                   "with a larger --max-sessions (HTTP: status 503 with this code)",
    "bad_field": "the action lacks the field this kind of environment reads, or reset got an unknown argument",
    "bad_value": "a reset argument of the wrong kind or out of range (seed, options), or the environment "
                 "rejected it",
    "unhandled": "the environment raised an unexpected error (a bug worth reporting)",
}
#: the action field each kind of environment reads
ACTION_FIELD = {"edit": "edit", "agent": "action", "response": "response"}
RESET_ARGUMENTS = ("seed", "episode_id", "options")


# -- the wire types ---------------------------------------------------------------------------------
class VicoAction(Action):
    """One step. Set the field the environment's kind reads: ``edit`` (edit environments:
    an edit object, or text holding one, such as a model's reply), ``action`` (Evidence:
    ``{"action": "zoom" | "note" | "view" | "compose" | "answer", ...}`` or its JSON text),
    ``response`` (Instruct: the response text)."""

    edit: str | dict[str, Any] | None = Field(
        default=None, description="edit environments: the edit as a JSON object, or text holding one")
    action: str | dict[str, Any] | None = Field(
        default=None, description="vicogym/Evidence-v0: the action object (or its JSON text)")
    response: str | None = Field(default=None, description="vicogym/Instruct-v0: the response")


class VicoError(BaseModel):
    """Why a step or reset was rejected; nothing changed but the turn or step it used."""

    model_config = ConfigDict(extra="forbid")

    code: str
    message: str
    op: str | None = None
    field: str | None = None


class VicoObservation(Observation):
    """What the policy sees after ``reset`` or a step (plus OpenEnv's ``done``, ``reward``
    and ``metadata``)."""

    env_id: str = Field(default="", description="the environment id")
    kind: str = Field(default="", description="edit | agent | response (vicogym.registry.ENV_KINDS)")
    text: str = Field(default="", description="what the policy reads next: the rewriter prompt at reset and the "
                      "feedback after an edit; the request, or the reply to an evidence action; the instruction")
    question: str = Field(default="", description="the sample's or task's question")
    image_png_b64: str | None = Field(default=None, description="edit and response environments: the current "
                                         "image, base64 PNG")
    views_png_b64: list[str] = Field(default_factory=list, description="vicogym/Evidence-v0: the views sent by this "
                                     "reset or step, base64 PNG, in the order of view_ids")
    view_ids: list[int] = Field(default_factory=list, description="the image numbers of views_png_b64 (what zoom "
                                "and note name)")
    structure: str | None = Field(default=None, description="edit environments: the structure as JSON text")
    pass_rate: float | None = Field(default=None, description="the actor's pass rate (edit), the constraint pass "
                                       "rate (response)")
    answer: str | None = Field(default=None, description="the sample's answer (edit); the task's answer once an "
                                  "evidence episode has ended")
    score: float | None = Field(default=None, description="vicogym/Evidence-v0, at the end: the answer's score")
    error: VicoError | None = Field(default=None, description="set when the reset or step was rejected")

    def image(self) -> np.ndarray | None:
        """``image_png_b64`` decoded (an RGB array), or ``None``."""
        return None if self.image_png_b64 is None else decode_b64_png(self.image_png_b64)

    def views(self) -> list[np.ndarray]:
        """``views_png_b64`` decoded (RGB arrays)."""
        return [decode_b64_png(v) for v in self.views_png_b64]


class VicoState(State):
    """The session's episode: OpenEnv's ``episode_id`` and ``step_count``, and which
    environment and seed."""

    env_id: str = ""
    kind: str = ""
    seed: int | None = None


def b64_png(image: Any) -> str:
    """Base64 PNG of an RGB image (array or PIL image)."""
    from vicogym.images import encode_png

    return base64.b64encode(encode_png(np.asarray(image, dtype=np.uint8))).decode("ascii")


def decode_b64_png(text: str) -> np.ndarray:
    from vicogym.images import decode_png

    return decode_png(base64.b64decode(text))


def _jsonable(value: Any) -> Any:
    def default(o: Any) -> Any:
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
        return str(o)

    return json.loads(json.dumps(value, default=default))


# -- the environments the server holds ----------------------------------------------------------------
#: set while the app answers an HTTP request (:class:`SessionLimit`): OpenEnv makes a
#: :class:`VicoEnvironment` per HTTP call, inside the call, and closes it when the call returns
_IN_HTTP_CALL: contextvars.ContextVar[bool] = contextvars.ContextVar("vicogym_serve_in_http_call", default=False)
_log = logging.getLogger(__name__)


class ServerFull(VicogymError):
    """Every environment the server may hold is in use (``max_sessions`` of them)."""

    def __init__(self, max_sessions: int, in_use: int):
        self.max_sessions, self.in_use = max_sessions, in_use
        super().__init__(f"the server holds its maximum of {max_sessions} environments ({in_use} in use by sessions "
                         f"and HTTP calls); retry in a moment, or start the server with a larger --max-sessions "
                         f"(now {max_sessions})")


def _return_memory() -> None:
    """Give the memory of closed environments back to the operating system: collect their
    reference cycles, then ask glibc to release its free heap pages (their arrays and
    figures leave it fragmented; without this the resident size stays at its peak)."""
    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the allocator keeps its own policy
        pass


class Environments:
    """The vicogym environments of one app, at most ``limit`` of them in memory at once
    (lent ones and warm ones together), so every route and session draws on one bound.

    :meth:`lend` gives an unused warm environment, or builds one while fewer than
    ``limit`` exist; :meth:`give_back` keeps it warm for the next borrower, and one unused
    for ``keep_warm_s`` seconds is closed (``None``: kept until :meth:`close`). With all
    ``limit`` lent, :meth:`lend` raises :class:`ServerFull`: at once when ``wait_s`` is 0
    (an HTTP call), else after waiting up to ``wait_s`` seconds (a session); while a
    session waits, callers that do not wait get nothing, so a burst of HTTP calls cannot
    starve an admitted session."""

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any], limit: int, keep_warm_s: float | None):
        self.env_id, self.env_kwargs = env_id, dict(env_kwargs)
        self.limit, self.keep_warm_s = limit, keep_warm_s
        self._cond = threading.Condition()
        self._lent = 0
        self._warm: list[tuple[float, Any]] = []  # (when given back, env), oldest first
        self._waiting = 0
        self._peak = 0
        self._sweeper: threading.Thread | None = None
        self._closed = False

    def build(self) -> Any:
        import gymnasium as gym

        import vicogym  # noqa: F401  (registers the environments)

        return gym.make(self.env_id, **self.env_kwargs).unwrapped

    def lend(self, wait_s: float = 0.0) -> Any:
        with self._cond:
            deadline = time.monotonic() + wait_s
            if wait_s > 0:
                self._waiting += 1
            try:
                while self._closed or self._lent >= self.limit or (wait_s <= 0 and self._waiting):
                    remaining = deadline - time.monotonic()
                    if self._closed or remaining <= 0:
                        raise ServerFull(self.limit, self._lent)
                    self._cond.wait(remaining)
            finally:
                if wait_s > 0:
                    self._waiting -= 1
            self._lent += 1  # the place is taken before a build, so the bound holds while it runs
            env = self._warm.pop()[1] if self._warm else None
            self._peak = max(self._peak, self._lent + len(self._warm))
        if env is not None:
            return env
        try:
            return self.build()
        except BaseException:
            with self._cond:
                self._lent -= 1
                self._cond.notify_all()
            raise

    def give_back(self, env: Any) -> None:
        with self._cond:
            self._lent -= 1
            keep = not self._closed and self.keep_warm_s != 0
            if keep:
                self._warm.append((time.monotonic(), env))
                if self.keep_warm_s is not None and self._sweeper is None:
                    self._sweeper = threading.Thread(target=self._sweep, name="vicogym-serve-sweeper", daemon=True)
                    self._sweeper.start()
            self._cond.notify_all()
        if not keep:
            self._close([env], return_memory=False)  # the caller still holds it: nothing to return yet

    def keep(self, env: Any) -> None:
        """Add a built environment, unused, to the warm ones (:func:`make_app` checks the
        settings with it)."""
        with self._cond:
            self._lent += 1
        self.give_back(env)

    def _sweep(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._closed or not self._warm:
                        self._sweeper = None
                        return
                    due = self._warm[0][0] + self.keep_warm_s - time.monotonic()
                    if due <= 0:
                        break
                    self._cond.wait(due)
                now = time.monotonic()
                expired = []
                while self._warm and self._warm[0][0] + self.keep_warm_s <= now:
                    expired.append(self._warm.pop(0)[1])
            self._close(expired)

    def _close(self, envs: list[Any], return_memory: bool = True) -> None:
        """Close ``envs`` and empty the list (the last references, so their memory can go)."""
        for env in envs:
            try:
                env.close()
            except Exception as exc:  # closing is best effort; the next one still closes
                _log.warning("closing a %s environment raised %s: %s", self.env_id, type(exc).__name__, exc)
        if envs and return_memory:
            del envs[:], env
            _return_memory()

    def close(self) -> None:
        """Close the warm environments; the lent ones are closed when given back."""
        with self._cond:
            self._closed = True
            warm, self._warm = [env for _, env in self._warm], []
            self._cond.notify_all()
        self._close(warm)

    def counts(self) -> dict[str, int]:
        with self._cond:
            return {"max_sessions": self.limit, "in_use": self._lent, "warm": len(self._warm), "peak": self._peak}

    def __len__(self) -> int:
        """The environments lent now."""
        with self._cond:
            return self._lent


# -- the environment ---------------------------------------------------------------------------------
class VicoEnvironment(Environment[VicoAction, VicoObservation, VicoState]):
    """One session, or one HTTP call: a vicogym environment of ``env_id`` and
    ``env_kwargs`` (lent by the app's :class:`Environments` at the first reset and given
    back at ``close``), behind OpenEnv's ``reset``/``step``/``state``.

    One made inside an HTTP call (OpenEnv makes one per call) does not wait when the app's
    environments are all in use: its reset raises :class:`ServerFull` (the app answers
    503). A session's reset waits up to :data:`SESSION_WAIT_S` seconds, then answers
    ``server_full``. Without ``environments`` it builds its own at reset and closes it at
    ``close``."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None, max_pixels: int = MAX_PIXELS,
                 environments: Environments | None = None):
        from vicogym.registry import env_kind

        super().__init__()
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.kind = env_kind(env_id)
        self.max_pixels = max_pixels
        self._env: Any = None
        self._state = VicoState(env_id=env_id, kind=self.kind)
        self._active = False  # an episode was reset and has not ended
        self._closed = False
        self._lock = threading.Lock()
        self._png: tuple[Any, str] | None = None  # (image object, its base64 PNG): unchanged images encode once
        if environments is None:
            environments = Environments(env_id, self.env_kwargs, limit=1, keep_warm_s=0)
        self._environments = environments
        self._http_call = _IN_HTTP_CALL.get()

    # -- OpenEnv's interface -------------------------------------------------------------------------
    def reset(self, seed: int | None = None, episode_id: str | None = None,
              options: dict[str, Any] | None = None, **kwargs: Any) -> VicoObservation:
        with self._lock:
            if self._closed:
                return self._error("session_closed", "this session was closed (idle for longer than the server's "
                                   "session TTL); open a new one")
            if kwargs:
                name = sorted(kwargs)[0]
                return self._error("bad_field", f"reset takes {', '.join(RESET_ARGUMENTS)}; got {name!r}"
                                   f"{did_you_mean(name, RESET_ARGUMENTS)}", field=name)
            if seed is not None and not is_int(seed, 0, MAX_SEED):
                return self._error("bad_value", f"expected seed as a whole number in [0, 2**63 - 1] or null, got "
                                   f"{seed!r}", field="seed")
            if options is not None and not isinstance(options, dict):
                return self._error("bad_value", f"expected options as a JSON object, got {options!r}",
                                   field="options")
            if episode_id is not None and not isinstance(episode_id, str):
                return self._error("bad_value", f"expected episode_id as a string, got {episode_id!r}",
                                   field="episode_id")
            seed = secrets.randbelow(MAX_SEED) if seed is None else int(seed)
            self._active = False
            self._state = VicoState(env_id=self.env_id, kind=self.kind)  # no episode until this reset succeeds
            if self._env is None:
                if self._http_call:  # ServerFull goes up: the app answers the call with 503
                    self._env = self._environments.lend()
                else:
                    try:
                        self._env = self._environments.lend(wait_s=SESSION_WAIT_S)
                    except ServerFull as full:
                        return self._error("server_full", str(full))
            try:
                obs, info = self._env.reset(seed=seed, options=options)
            except (VicogymError, ValueError, TypeError, KeyError) as exc:
                return self._error("bad_value", f"reset(seed={seed}) failed: {exc}")
            except Exception as exc:
                return self._error("unhandled", f"{type(exc).__name__} in reset(seed={seed}): {exc}")
            try:
                self._state = VicoState(episode_id=episode_id or secrets.token_hex(8), step_count=0,
                                        env_id=self.env_id, kind=self.kind, seed=seed)
                self._active = True
                return getattr(self, f"_reset_{self.kind}")(obs, info)
            except Exception as exc:  # the first observation could not be made: no episode
                self._active = False
                self._state = VicoState(env_id=self.env_id, kind=self.kind)
                return self._error("unhandled", f"{type(exc).__name__} in reset(seed={seed}): {exc}")

    def step(self, action: VicoAction, timeout_s: float | None = None, **kwargs: Any) -> VicoObservation:
        with self._lock:
            if self._closed:
                return self._error("session_closed", "this session was closed (idle for longer than the server's "
                                   "session TTL); open a new one and reset")
            if self._env is None or self._state.seed is None:
                return self._error("no_episode", "no episode yet: call reset before step (over HTTP every call "
                                   "gets a fresh environment; episodes need the WebSocket session, /ws)")
            name = ACTION_FIELD[self.kind]
            payload = getattr(action, name)
            if payload is None:
                given = [f for f in ACTION_FIELD.values() if getattr(action, f) is not None]
                got = f"got {', '.join(repr(g) for g in given)}" if given else "got none"
                return self._error("bad_field", f"{self.env_id} ({self.kind} environment) reads the action's "
                                   f"{name!r} field, which is not set ({got})", field=name)
            if not self._active:  # the server knows the episode ended: the environment is not asked
                return self._error("episode_over", "the episode has ended; call reset for a new one", done=True,
                                   reward=0.0)
            self._state.step_count += 1
            try:
                return getattr(self, f"_step_{self.kind}")(payload)
            except Exception as exc:  # the environments reject bad input themselves; this is a bug
                return self._error("unhandled", f"{type(exc).__name__} in step: {exc}")

    @property
    def state(self) -> VicoState:
        return self._state.model_copy()

    def get_metadata(self) -> EnvironmentMetadata:
        import vicogym
        from vicogym.registry import ENVIRONMENTS

        return EnvironmentMetadata(name=self.env_id, description=ENVIRONMENTS[self.env_id].description or self.env_id,
                                   version=vicogym.__version__)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._active = False
            env, self._env = self._env, None
        if env is not None:
            self._environments.give_back(env)

    # -- the kinds ------------------------------------------------------------------------------------
    def _observation(self, **fields: Any) -> VicoObservation:
        return VicoObservation(env_id=self.env_id, kind=self.kind, **fields)

    def _error(self, code: str, message: str, field: str | None = None, done: bool = False,
               reward: float | None = None) -> VicoObservation:
        return self._observation(error=VicoError(code=code, message=message, field=field), done=done, reward=reward)

    def _image_b64(self, image: Any) -> str:
        if self._png is None or self._png[0] is not image:
            self._png = (image, b64_png(fit_image(image, self.max_pixels)))
        return self._png[1]

    def _edit_fields(self) -> dict[str, Any]:
        env = self._env
        return {"question": env.sample.question, "answer": env.sample.answer, "pass_rate": env.pass_rate,
                "structure": structure_text(env),
                "image_png_b64": self._image_b64(env.sample.image)}

    def _reset_edit(self, obs: Mapping[str, Any], info: Mapping[str, Any]) -> VicoObservation:
        return self._observation(text=rewriter_prompt(self._env), **self._edit_fields(),
                                 metadata={"seed": self._state.seed, "turn": 0})

    def _step_edit(self, edit: Any) -> VicoObservation:
        env = self._env
        result = step_edit(env, edit)
        info = result.info
        fields = self._edit_fields()
        done = bool(result.terminated or result.truncated)
        if info["stopped"]:
            text = (f"Stopped: the sample is kept (answer {info['answer']}, the actor's pass rate "
                    f"{info['pass_rate']:.2f}).")
        else:
            ask = (f"The episode has ended (max_turns={env.config.max_turns}); reset for a new one." if done
                   else EDIT_ASK)
            text = feedback(info, fields["structure"], ask=ask)
        error = info["error"]
        self._active = not done
        metadata = {"valid": info["valid"], "stopped": info["stopped"], "turn": info["turn"],
                    "pass_rate_before": info["pass_rate_before"], "sweet": info["sweet"],
                    "actor_answers": info["actor_answers"], "truncated": bool(result.truncated)}
        return self._observation(text=text, **fields, error=None if error is None else VicoError(**error),
                                 done=done, reward=float(result.reward), metadata=_jsonable(metadata))

    def _reset_agent(self, obs: Mapping[str, Any], info: Mapping[str, Any]) -> VicoObservation:
        env = self._env
        ids = [v.id for v in env.visible()]
        text = "\n\n".join([env.request()["protocol"], "Question: " + env.question_text(), describe_views(env, ids)])
        views = [b64_png(fit_image(env.view_pixels(v), self.max_pixels)) for v in ids]
        return self._observation(text=text, question=env.question_text(), view_ids=ids, views_png_b64=views,
                                 metadata={"seed": self._state.seed, "task_id": env.task.id,
                                           "family": env.task.family, "step": 0})

    def _step_agent(self, action: Any) -> VicoObservation:
        env = self._env
        _, reward, terminated, truncated, info = env.step(action)
        done = bool(terminated or truncated)
        self._active = not done
        text, images = evidence_reply(env, info, terminated, truncated, self.max_pixels)
        error = info.get("error")
        ids = list(env.history[-1].get("views", [])) if images else []
        metadata = {"task_id": info["task_id"], "family": info["family"], "step": info["step"],
                    "support": info["support"], "outcome": info.get("outcome"), "response": info.get("response"),
                    "budget": env.budget()}
        return self._observation(text=text, question=env.question_text(), view_ids=ids,
                                 views_png_b64=[b64_png(image) for image in images],
                                 answer=info.get("answer") if done else None,
                                 score=info.get("score") if done else None,
                                 error=None if error is None else VicoError(**error), done=done, reward=float(reward),
                                 metadata=_jsonable(metadata))

    def _reset_response(self, obs: Mapping[str, Any], info: Mapping[str, Any]) -> VicoObservation:
        return self._observation(text=obs["instruction"], question=obs["instruction"],
                                 image_png_b64=self._image_b64(obs["image"]),
                                 metadata=_jsonable({"seed": self._state.seed, "constraints": info["constraints"],
                                                     "sample_id": info["sample_id"]}))

    def _step_response(self, response: str) -> VicoObservation:
        env = self._env
        _, reward, terminated, truncated, info = env.step(response)
        self._active = False
        error = info.get("error")
        verdicts = info["verdicts"]
        passed = sum(bool(v["pass"]) for v in verdicts)
        text = f"{passed} of {len(verdicts)} constraints satisfied (pass rate {info['pass_rate']:.2f})."
        return self._observation(text=text, pass_rate=float(info["pass_rate"]),
                                 error=None if error is None else VicoError(**error), done=True, reward=float(reward),
                                 metadata=_jsonable({"verdicts": verdicts}))


# -- the client ----------------------------------------------------------------------------------------
class VicoEnvClient(EnvClient[VicoAction, VicoObservation, VicoState]):
    """OpenEnv's WebSocket client, typed for :class:`VicoAction` and
    :class:`VicoObservation` (``.sync()`` for the synchronous wrapper)."""

    def _step_payload(self, action: VicoAction | Mapping[str, Any]) -> dict[str, Any]:
        if isinstance(action, VicoAction):
            return action.model_dump(exclude_none=True)
        return dict(action)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[VicoObservation]:
        observation = VicoObservation.model_validate({**payload.get("observation", {}),
                                                      "done": payload.get("done", False),
                                                      "reward": payload.get("reward")})
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False),
                          metadata=payload.get("metadata"))

    def _parse_state(self, payload: dict[str, Any]) -> VicoState:
        return VicoState.model_validate(payload)


# -- the app -------------------------------------------------------------------------------------------
class RequestSizeLimit:
    """ASGI middleware: an HTTP body over ``max_bytes`` gets 413; a WebSocket message over
    it gets an error frame (code ``REQUEST_TOO_LARGE``) instead of reaching the app, and
    the session goes on."""

    def __init__(self, app: Any, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    def _message(self, size: Any) -> str:
        return (f"the request has {size} bytes, more than this server's limit of {self.max_bytes} "
                f"(vicogym serve --max-request-bytes); send a smaller one")

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "websocket":
            await self.app(scope, self._ws_receive(receive, send), send)
        else:
            await self.app(scope, receive, send)

    async def _too_large(self, send: Any, size: Any) -> None:
        body = json.dumps({"detail": self._message(size)}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})

    async def _http(self, scope: dict, receive: Any, send: Any) -> None:
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            await self._too_large(send, length.decode("latin-1"))
            return
        chunks, total = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunks.append(message.get("body", b""))
            total += len(chunks[-1])
            if total > self.max_bytes:
                await self._too_large(send, f"over {total}")
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _ws_receive(self, receive: Any, send: Any) -> Any:
        limit = self.max_bytes

        async def wrapped() -> dict:
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":
                    return message
                text, data = message.get("text"), message.get("bytes")
                size = len(data) if data is not None else 0
                if text is not None:
                    size = len(text) if len(text) * 4 <= limit else len(text.encode("utf-8"))
                if size <= limit:
                    return message
                await send({"type": "websocket.send", "text": json.dumps(
                    {"type": "error", "data": {"message": self._message(size), "code": "REQUEST_TOO_LARGE"}})})

        return wrapped


class SessionLimit:
    """ASGI middleware: marks the app's HTTP calls (:data:`_IN_HTTP_CALL`: their
    environments are lent for the call and never wait for one), and words OpenEnv's
    ``CAPACITY_REACHED`` frame, which refuses a WebSocket session over ``max_sessions``,
    with what to do."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            token = _IN_HTTP_CALL.set(True)
            try:
                await self.app(scope, receive, send)
            finally:
                _IN_HTTP_CALL.reset(token)
        elif scope["type"] == "websocket":
            await self.app(scope, receive, self._ws_send(send))
        else:
            await self.app(scope, receive, send)

    @staticmethod
    def _ws_send(send: Any) -> Any:
        async def wrapped(message: dict) -> None:
            text = message.get("text") if message["type"] == "websocket.send" else None
            if text and text.startswith('{"type":"error"') and '"CAPACITY_REACHED"' in text:
                frame = json.loads(text)
                data = frame.get("data") or {}
                if data.get("code") == "CAPACITY_REACHED":
                    limit = data.get("max_sessions", "?")
                    data["message"] = (f"Server at capacity: {data.get('active_sessions', '?')}/{limit} sessions "
                                       f"active; this server holds at most {limit} at once. Retry later, or start "
                                       f"the server with a larger --max-sessions.")
                    message = {**message, "text": json.dumps(frame)}
            await send(message)

        return wrapped


def make_app(env_id: str, env_kwargs: Mapping[str, Any] | None = None, max_sessions: int = MAX_SESSIONS,
             max_request_bytes: int = MAX_REQUEST_BYTES, session_ttl_s: float | None = SESSION_TTL_S,
             max_pixels: int = MAX_PIXELS) -> FastAPI:
    """The OpenEnv app serving ``env_id`` made with ``env_kwargs`` (one environment per
    WebSocket session, one per HTTP reset for that call). ``max_sessions``: the
    environments the app holds at once, sessions', HTTP calls' and warm ones together
    (:class:`Environments`), and the WebSocket sessions at once; ``max_request_bytes``: the
    largest request body or WebSocket message; ``session_ttl_s``: idle seconds before a
    session is closed, and before an unused environment is (``None``: never);
    ``max_pixels``: the largest image sent, in pixels. The settings are checked here (one
    environment is built, and kept for the first session): an unknown id or setting
    raises, naming the fix."""
    from vicogym.registry import check_id

    check_id(env_id)
    if not isinstance(env_kwargs, (Mapping, type(None))):
        raise ValueError(f"expected env_kwargs as a JSON object of {env_id} settings, got {env_kwargs!r}")
    env_kwargs = dict(env_kwargs or {})
    if not is_int(max_sessions, 1, 100_000):
        raise ValueError(f"expected max_sessions as a whole number in [1, 100000], got {max_sessions!r}")
    if not is_int(max_request_bytes, 1024):
        raise ValueError(f"expected max_request_bytes as a whole number of at least 1024, got {max_request_bytes!r}")
    if session_ttl_s is not None and not (is_number(session_ttl_s) and session_ttl_s > 0):
        raise ValueError(f"expected session_ttl_s as a positive number of seconds (or None: never), got "
                         f"{session_ttl_s!r}")
    pixels_from(max_pixels, "make_app")
    environments = Environments(env_id, env_kwargs, max_sessions, keep_warm_s=session_ttl_s)
    environments.keep(environments.build())  # the settings fail here, not in a session
    factory = functools.partial(VicoEnvironment, env_id, env_kwargs, max_pixels, environments)
    app = create_app(factory, VicoAction, VicoObservation, env_name=env_id.split("/", 1)[-1],
                     concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions,
                                                          session_timeout=session_ttl_s),
                     state_cls=VicoState)

    async def server_full(request: Request, exc: ServerFull) -> JSONResponse:
        return JSONResponse({"detail": str(exc), "code": "server_full", "max_sessions": exc.max_sessions,
                             "in_use": exc.in_use}, status_code=503, headers={"Retry-After": "1"})

    app.add_exception_handler(ServerFull, server_full)

    @app.get("/capacity", tags=["Health"], summary="The environments the server holds")
    def get_capacity() -> dict[str, int]:
        """``max_sessions``, the environments ``in_use`` (sessions' and HTTP calls'), the
        ``warm`` ones kept for the next session, and the ``peak`` of in use and warm
        together since the start (never over ``max_sessions``)."""
        return environments.counts()

    app.router.on_shutdown.append(environments.close)
    app.add_middleware(SessionLimit)
    app.add_middleware(RequestSizeLimit, max_bytes=max_request_bytes)
    app.state.vicogym = {"env_id": env_id, "env_kwargs": env_kwargs, "max_sessions": max_sessions,
                         "max_request_bytes": max_request_bytes, "session_ttl_s": session_ttl_s,
                         "environments": environments}
    return app


def open_sessions(app: FastAPI) -> int:
    """How many environments ``app`` has lent now (to its WebSocket sessions, and to HTTP
    calls in progress)."""
    return len(app.state.vicogym["environments"])


def capacity(app: FastAPI) -> dict[str, int]:
    """What ``GET /capacity`` answers: ``max_sessions``, ``in_use``, ``warm`` and ``peak``
    (:meth:`Environments.counts`)."""
    return app.state.vicogym["environments"].counts()


def uvicorn_config(app: FastAPI, host: str = "127.0.0.1", port: int = 8000, log_level: str = "warning") -> Any:
    """uvicorn's settings for ``app``: WebSocket messages up to four times the app's request
    limit reach it (the app answers those over the limit), larger ones close the connection."""
    import uvicorn

    limit = app.state.vicogym["max_request_bytes"]
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, ws_max_size=4 * limit)


def run(app: FastAPI, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve ``app`` (:func:`make_app`) with uvicorn until interrupted."""
    import uvicorn

    uvicorn.Server(uvicorn_config(app, host, port, log_level="info")).run()


__all__ = ["VicoAction", "VicoObservation", "VicoError", "VicoState", "VicoEnvironment", "VicoEnvClient",
           "Environments", "ServerFull", "RequestSizeLimit", "SessionLimit", "make_app", "open_sessions", "capacity",
           "uvicorn_config", "run", "SERVER_ERROR_CODES", "b64_png", "decode_b64_png"]
