"""One registry of vicogym environments, backed by Gymnasium's."""

from __future__ import annotations

import difflib
from typing import Any

import gymnasium as gym

from vicogym.errors import UnknownEnvironment

#: id -> (entry point, one-line description)
ENVIRONMENTS: dict[str, tuple[str, str]] = {}


def register(env_id: str, entry_point: str, description: str) -> None:
    """Register ``env_id`` with Gymnasium (once) and with vicogym's listing."""
    if env_id in ENVIRONMENTS:
        return
    ENVIRONMENTS[env_id] = (entry_point, description)
    if env_id not in gym.registry:
        gym.register(id=env_id, entry_point=entry_point)


def check_id(env_id: str) -> str:
    if env_id not in ENVIRONMENTS:
        close = difflib.get_close_matches(env_id, list(ENVIRONMENTS), n=3, cutoff=0.4)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise UnknownEnvironment(f"no vicogym environment {env_id!r}{hint} Known: {sorted(ENVIRONMENTS)}")
    return env_id


def make(env_id: str, **kwargs: Any) -> gym.Env:
    """``gymnasium.make`` with a "did you mean" error for unknown ids."""
    return gym.make(check_id(env_id), **kwargs)


def list_environments() -> list[tuple[str, str]]:
    return sorted((env_id, desc) for env_id, (_, desc) in ENVIRONMENTS.items())
