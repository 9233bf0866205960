"""The text observation space: a short repr, and samples and membership as gymnasium's Text."""

import re
import string

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from hypothesis import given
from hypothesis import strategies as st

import vicogym
from vicogym import spaces as text_spaces
from vicogym.spaces import TEXT_CHARSET, TextSpace, to_charset

ENV_IDS = [env_id for env_id, _ in vicogym.list_environments()]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_spaces_of_every_environment_print_short(env_id):
    env = gym.make(env_id)
    try:
        assert len(repr(env.observation_space)) < 400
        assert len(repr(env.action_space)) < 200
        assert len(str(env.observation_space)) < 400
    finally:
        env.close()


def test_text_space_repr_names_lengths_and_charset_and_keeps_behaviour():
    space = TextSpace(1024, min_length=1, seed=0)
    shown = repr(space)
    assert shown == (f"TextSpace(1, 1024, charset=<{len(TEXT_CHARSET)} characters: printable ASCII, "
                     "U+00A0..U+26FF, U+FFFD>)")
    # the space behaves as gymnasium's Text over the same characters
    plain = spaces.Text(1024, min_length=1, charset=TEXT_CHARSET, seed=0)
    assert space == plain
    for _ in range(5):
        text = space.sample()
        assert 1 <= len(text) <= 1024 and space.contains(text) and plain.contains(text)
    assert TextSpace(16, seed=3).sample() == TextSpace(16, seed=3).sample()
    assert space.contains(to_charset("Mean of Ω in 2020 → €5 \U0001f600"))
    assert not space.contains("\U0001f600") and not space.contains("") and not space.contains("x" * 1025)


@given(st.sets(st.characters(codec="utf-8"), max_size=200), st.integers(0, 6))
def test_charset_summary_counts_and_lists_the_runs_it_shows(chars, shown):
    summary = text_spaces.charset_summary("".join(chars), shown=shown)
    assert summary.startswith(f"{len(chars)} characters")
    assert len(summary) < 40 + 16 * shown
    named = set()
    ascii_printable = "printable ASCII" in summary
    if ascii_printable:
        assert set(string.printable) <= chars
        named |= set(string.printable)
    for a, b in re.findall(r"U\+([0-9A-F]{4,6})(?:\.\.U\+([0-9A-F]{4,6}))?", summary):
        named |= {chr(c) for c in range(int(a, 16), int(b or a, 16) + 1)}
    assert named <= chars  # every run shown is in the set
    if "more runs" not in summary:
        assert named == chars  # and when none is left out, the runs are the set


def test_text_space_still_samples_in_vector_envs():
    envs = gym.vector.SyncVectorEnv([lambda: gym.make("vicogym/Chart-v0", k=2)] * 2)
    try:
        obs, _ = envs.reset(seed=0)
        assert all(isinstance(q, str) and q for q in obs["question"])
        assert len(repr(envs.single_observation_space)) < 400
        assert np.asarray(obs["image"]).shape[0] == 2
    finally:
        envs.close()
