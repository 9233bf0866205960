import gymnasium as gym
import pytest
from conftest import REPO

import vicogym
from vicogym.errors import MissingExtra
from vicogym.registry import env_class, make_arm, make_config, register, unregister


@pytest.fixture
def variant():
    register("vicogym/ChartLookup-v0", "vicogym.envs.chart:ChartEnv", kwargs={"templates": ["lookup"], "k": 2},
             description="chart lookups only")
    yield "vicogym/ChartLookup-v0"
    unregister("vicogym/ChartLookup-v0")


def test_a_variant_is_the_same_entry_point_with_other_defaults(variant):
    env = gym.make(variant, max_turns=2)
    assert env.unwrapped.config.templates == ("lookup",) and env.unwrapped.config.k == 2
    _, info = env.reset(seed=0)
    assert info["label"]["program"]["template"] == "lookup"
    assert info["sample"].provenance.env_id == variant
    assert (variant, "chart lookups only") in vicogym.list_environments()
    assert make_config(variant, {"k": 3}).k == 3 and make_config(variant).templates == ("lookup",)


def test_registering_an_id_twice_is_an_error(variant):
    with pytest.raises(ValueError, match="environment 'vicogym/ChartLookup-v0' is already registered"):
        register(variant, "vicogym.envs.chart:ChartEnv")
    with pytest.raises(ValueError, match="expected an id of the form 'vicogym/Name-v0', got 'Chart'"):
        register("Chart", "vicogym.envs.chart:ChartEnv")
    with pytest.raises(ValueError, match="expected entry_point as 'module:Class'"):
        register("vicogym/Other-v0", "vicogym.envs.chart.ChartEnv")


def test_unregister_removes_from_both_registries():
    register("vicogym/Gone-v0", "helpers.toy_arm:ToyEnv")
    unregister("vicogym/Gone-v0")
    assert "vicogym/Gone-v0" not in gym.registry and "vicogym/Gone-v0" not in dict(vicogym.list_environments())


def test_a_missing_extra_is_named_at_make():
    register("vicogym/ToyExtra-v0", "helpers.toy_arm:NeedsExtraEnv")
    try:
        with pytest.raises(MissingExtra) as info:
            gym.make("vicogym/ToyExtra-v0")
        # this checkout is an editable install: the command names the clone, which works from any folder
        assert str(info.value) == ("vicogym/ToyExtra-v0 needs the 'vicogym_no_such_module' package, which the "
                                   f"[toyextra] extra installs: pip install -e '{REPO}[toyextra]' (or [all] for every "
                                   "arm)")
        with pytest.raises(MissingExtra):
            make_arm("vicogym/ToyExtra-v0")
    finally:
        unregister("vicogym/ToyExtra-v0")


def test_env_class_and_arm_resolve_from_the_entry_point():
    cls = env_class("vicogym/Chart-v0")
    assert cls.__name__ == "ChartEnv" and cls.arm_class.name == "chart"
    arm = make_arm("vicogym/Chart-v0", {"source": "/data/not/needed/for/verify"})
    assert arm.source is None  # an arm built to check rows opens no source
    with pytest.raises(ValueError, match="vicogym/Chart-v0 has no setting 'kk'; did you mean 'k'\\?"):
        make_config("vicogym/Chart-v0", {"kk": 1})
