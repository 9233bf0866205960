"""One registry of vicogym environments, backed by Gymnasium's.

``register(id, entry_point, kwargs=..., description=...)`` registers an environment (or a
variant of one: the same entry point with other default kwargs) once; registering an id
twice is an error. The core reaches an arm only through its environment class
(``arm_class``, ``config_class``), resolved from the entry point here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import gymnasium as gym

from vicogym.errors import UnknownEnvironment
from vicogym.validation import did_you_mean

ID_PATTERN = re.compile(r"^vicogym/[A-Za-z][A-Za-z0-9_]*-v\d+$")
#: what an episode is, by the environment class's ``kind`` (a required class attribute):
#: what the core may do with the environment follows from it
ENV_KINDS: Mapping[str, str] = {
    "edit": "a rewriter edits a verifiable structure; the actor's pass rate is the reward (Chart, CLEVR, Natural); "
            "`vicogym generate` runs it",
    "response": "one response per episode, scored against stored verifiers (Instruct); its samples come from "
                "`vicogym synthesize`, and its class scores a stored row's response (score_response)",
    "agent": "an agent acts step by step on evidence (zoom, note, view, compose, answer) and the task scores its "
             "answer",
}


@dataclass(frozen=True)
class Registration:
    id: str
    entry_point: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""


ENVIRONMENTS: dict[str, Registration] = {}


def register(env_id: str, entry_point: str, kwargs: Mapping[str, Any] | None = None, description: str = "") -> None:
    """Register ``env_id`` (``vicogym/Name-vN``) with Gymnasium and with vicogym's listing.

    ``entry_point`` is ``"module:Class"``; ``kwargs`` are the variant's default env kwargs
    (JSON-serialisable). Raises ``ValueError`` if the id is malformed or taken."""
    if not isinstance(env_id, str) or not ID_PATTERN.match(env_id):
        raise ValueError(f"expected an id of the form 'vicogym/Name-v0', got {env_id!r}")
    if env_id in ENVIRONMENTS or env_id in gym.registry:
        raise ValueError(f"environment {env_id!r} is already registered; give the variant its own id or version")
    if not isinstance(entry_point, str) or ":" not in entry_point:
        raise ValueError(f"expected entry_point as 'module:Class', got {entry_point!r}")
    kwargs = dict(kwargs or {})
    ENVIRONMENTS[env_id] = Registration(env_id, entry_point, kwargs, description)
    gym.register(id=env_id, entry_point=entry_point, kwargs=kwargs)


def unregister(env_id: str) -> None:
    """Remove ``env_id`` from both registries (for tests and interactive sessions)."""
    ENVIRONMENTS.pop(check_id(env_id))
    gym.registry.pop(env_id, None)


def check_id(env_id: str) -> str:
    if env_id not in ENVIRONMENTS:
        # compare the names after the shared "vicogym/" prefix, which would make every id look close
        names = {known.split("/", 1)[-1].lower(): known for known in ENVIRONMENTS}
        hint = did_you_mean(str(env_id).split("/", 1)[-1].lower(), names, cutoff=0.7, n=3, shown=names)
        raise UnknownEnvironment(f"no vicogym environment {env_id!r}{hint} (known: {', '.join(sorted(ENVIRONMENTS))})")
    return env_id


def make(env_id: str, **kwargs: Any) -> gym.Env:
    """``gymnasium.make`` with a "did you mean" error for unknown ids."""
    return gym.make(check_id(env_id), **kwargs)


def list_environments() -> list[tuple[str, str]]:
    return sorted((env_id, reg.description) for env_id, reg in ENVIRONMENTS.items())


def env_class(env_id: str) -> type:
    """The environment class behind ``env_id`` (its module is imported on first use); its
    ``kind`` is checked against :data:`ENV_KINDS`."""
    from gymnasium.envs.registration import load_env_creator

    cls = load_env_creator(ENVIRONMENTS[check_id(env_id)].entry_point)
    if getattr(cls, "kind", None) not in ENV_KINDS:
        raise TypeError(f"{env_id}: {cls.__name__}.kind must be one of {list(ENV_KINDS)}, got "
                        f"{getattr(cls, 'kind', None)!r}")
    return cls


def env_kind(env_id: str) -> str:
    """``edit``, ``response`` or ``agent`` (see :data:`ENV_KINDS`)."""
    return env_class(env_id).kind


def env_kwargs(env_id: str, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The registered kwargs of ``env_id`` with ``overrides`` on top, checked against the
    environment's config fields (a "did you mean" for unknown names)."""
    merged = {**ENVIRONMENTS[check_id(env_id)].kwargs, **dict(overrides or {})}
    check_settings(env_id, merged, config_fields(env_id))
    return merged


def check_settings(env_id: str, names: Any, known: list[str]) -> None:
    """``ValueError`` with a "did you mean" for the first of ``names`` not in ``known``."""
    for name in names:
        if name not in known:
            raise ValueError(f"{env_id} has no setting {name!r}{did_you_mean(name, known)} (settings: "
                             f"{', '.join(sorted(known))})")


def config_fields(env_id: str) -> list[str]:
    return [f.name for f in fields(env_class(env_id).config_class)]


def make_config(env_id: str, overrides: Mapping[str, Any] | None = None) -> Any:
    """The validated config object ``gym.make(env_id, **overrides)`` would build."""
    cls = env_class(env_id)
    return cls.config_class(**env_kwargs(env_id, overrides))


def make_arm(env_id: str, overrides: Mapping[str, Any] | None = None) -> Any:
    """The arm of ``env_id`` built from its config, without an environment (for verify)."""
    from vicogym.arm import require_extras

    cls = env_class(env_id)
    require_extras(cls.arm_class, env_id)
    return cls.arm_class(make_config(env_id, overrides))
