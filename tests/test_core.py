import json
import math

import numpy as np
import pytest

from vicogym.core import Edit, Sample, canonical_json
from vicogym.errors import CORE_ERROR_CODES, EDIT_ERROR_CODES, InvalidEdit, error_code_owner, register_error_codes
from vicogym.images import ImagePolicy, same_image
from vicogym.rewards import RewardConfig, difficulty_reward, in_sweet_zone, rwr_copies, weight


@pytest.mark.parametrize(
    "raw",
    [
        {"ops": [{"op": "set_cell", "row": "A", "series": "S", "value": 1}]},
        [{"op": "set_cell", "row": "A", "series": "S", "value": 1}],
        {"op": "set_cell", "row": "A", "series": "S", "value": 1},
        json.dumps({"ops": [{"op": "set_cell", "row": "A", "series": "S", "value": 1}]}),
    ],
)
def test_edit_parse_accepts_every_spelling(raw):
    edit = Edit.parse(raw)
    assert edit.ops == ({"op": "set_cell", "row": "A", "series": "S", "value": 1},)
    assert Edit.parse(edit.to_json()) == edit


def test_edit_parse_replace_and_stop():
    assert Edit.parse({"replace": {"table": {}}}).replace == {"table": {}}
    assert Edit.parse({"op": "stop"}).is_stop
    assert not Edit.parse([{"op": "stop"}, {"op": "stop"}]).is_stop


@pytest.mark.parametrize(
    "raw, message",
    [
        (
            "{not json",
            "[malformed] edit is not valid JSON (Expecting property name enclosed in double quotes at position 1)",
        ),
        (42, "[malformed] expected a JSON object or list of ops, got int"),
        ({"ops": []}, "[malformed] expected 'ops' to be a non-empty list"),
        ({"ops": [1]}, "[malformed] expected ops[0] to be an object with a string 'op'"),
        (
            {"ops": [], "replace": {}},
            "[malformed] expected exactly one key, 'ops' or 'replace', got ['ops', 'replace']",
        ),
        ({"replace": 3}, "[malformed] expected 'replace' to be a structure object"),
    ],
)
def test_edit_parse_errors_are_exact(raw, message):
    with pytest.raises(InvalidEdit) as info:
        Edit.parse(raw)
    assert str(info.value) == message
    assert info.value.code == "malformed"


def test_invalid_edit_codes_are_closed_and_located():
    with pytest.raises(ValueError, match="expected an edit error code"):
        InvalidEdit("nope", "x")
    error = InvalidEdit("not_found", "row 'X' is not in the table", field="row").at("ops[1] set_cell")
    assert error.to_dict() == {"code": "not_found", "message": "row 'X' is not in the table", "op": "ops[1] set_cell",
                               "field": "row"}
    assert str(error) == "[not_found] ops[1] set_cell: row 'X' is not in the table"
    assert isinstance(error, ValueError)
    import pickle

    assert pickle.loads(pickle.dumps(error)).to_dict() == error.to_dict()


def test_core_codes_are_generic_and_arms_register_their_own():
    assert set(CORE_ERROR_CODES) == {"malformed", "unknown_op", "bad_field", "bad_value", "not_found", "ambiguous",
                                     "render_failed", "episode_over", "unhandled", "no_change", "too_large"}
    import vicogym.programs.chart  # noqa: F401  (the chart arm registers its codes on import)

    assert error_code_owner("invariance") == "chart" and error_code_owner("malformed") == "core"
    assert set(EDIT_ERROR_CODES) >= set(CORE_ERROR_CODES) | {"invariance", "anchor", "occluded"}
    register_error_codes("chart", {"occluded": EDIT_ERROR_CODES["occluded"]})  # the same again: a no-op
    with pytest.raises(ValueError, match="edit error code 'malformed' is already registered by 'core'"):
        register_error_codes("toy2", {"malformed": "mine"})
    with pytest.raises(TypeError):
        register_error_codes("toy2", {"not an identifier": "x"})


@pytest.mark.parametrize("raw, message",
                         [("[" * 100000 + "]" * 100000,
                           '[malformed] edit is nested too deeply to parse; send a flat {"ops": [...]} object'),
                          ('{"op": "x", "v": ' + "9" * 5000 + "}", None), (b"\xff\xfe", None),
                          ("", "[malformed] edit is not valid JSON (Expecting value at position 0)")])
def test_edit_parse_never_raises_anything_but_invalid_edit(raw, message):
    with pytest.raises(InvalidEdit) as info:
        Edit.parse(raw)
    assert info.value.code == "malformed"
    if message:
        assert str(info.value) == message


def test_canonical_json_is_sorted_compact_and_keeps_unicode():
    assert canonical_json({"b": [1, 2.5], "a": "Zürich"}) == '{"a":"Zürich","b":[1,2.5]}'
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


def test_samples_compare_pixels():
    image = np.zeros((2, 2, 3), np.uint8)
    a = Sample({"s": 1}, "q", "1", {"kind": "k"}, image)
    assert a == Sample({"s": 1}, "q", "1", {"kind": "k"}, image.copy())
    assert a != Sample({"s": 1}, "q", "1", {"kind": "k"}, image + 1)
    assert a != Sample({"s": 1}, "q", "2", {"kind": "k"}, image)


def test_same_image_allows_rounding_only_where_a_renderer_needs_it():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (100, 100, 3), dtype=np.uint8)
    a[0, 0] = 255
    one_off = a.copy()
    one_off[0, 0, 1] = 254
    assert same_image(a, a.copy()) and not same_image(a, one_off)  # tolerance 0: the same bytes
    assert same_image(a, one_off, tolerance=1)
    two_off = a.copy()
    two_off[0, 0, 1] = 253
    assert not same_image(a, two_off, tolerance=1)
    edited = a.copy()
    edited[:10, :10] = np.where(a[:10, :10] < 255, a[:10, :10] + 1, 254)  # 100 pixels, each 1 apart
    assert not same_image(a, edited, tolerance=1)  # more than 0.1% of the pixels differ
    assert same_image(a, edited[:10, :10].copy(), tolerance=1) is False  # shapes differ


def test_image_policies_centre_pad_letterbox_and_refuse_misfits():
    image = np.full((2, 4, 3), 7, np.uint8)
    padded = ImagePolicy("pad", 4, 6, fill=255).apply(image)
    assert padded.shape == (4, 6, 3) and (padded[1:3, 1:5] == 7).all() and padded[0].min() == 255
    boxed = ImagePolicy("letterbox", 4, 4, fill=0).apply(image)
    assert boxed.shape == (4, 4, 3) and (boxed[1:3] == 7).all() and boxed[0].max() == 0 and boxed[3].max() == 0
    assert np.array_equal(ImagePolicy("fixed", 2, 4).apply(image), image)
    with pytest.raises(ValueError, match="expected a 3x4 render under the fixed policy, got 2x4"):
        ImagePolicy("fixed", 3, 4).apply(image)
    with pytest.raises(ValueError, match="expected an image within 1x4 under the pad policy, got 2x4"):
        ImagePolicy("pad", 1, 4).apply(image)
    with pytest.raises(ValueError, match="expected image policy mode in"):
        ImagePolicy("stretch", 1, 1)


def test_band_reward_is_one_inside_the_sweet_zone_only():
    config = RewardConfig()
    assert [difficulty_reward(p) for p in (0.0, 0.34, 0.35, 0.5, 0.65, 0.66, 1.0)] == [0, 0, 1, 1, 1, 0, 0]
    assert in_sweet_zone(0.5, config) and not in_sweet_zone(0.9, config)


def test_triangle_and_gaussian_peak_at_the_centre():
    tri, gauss = RewardConfig("triangle"), RewardConfig("gaussian", sigma=0.1)
    assert weight(0.5, tri) == 1.0 and weight(0.0, tri) == 0.0 and weight(1.0, tri) == 0.0
    assert weight(0.25, tri) == pytest.approx(0.5)
    assert weight(0.5, gauss) == 1.0
    assert weight(0.6, gauss) == pytest.approx(math.exp(-0.5))
    assert weight(0.3, gauss) < weight(0.4, gauss) < weight(0.5, gauss)


def test_rwr_copies_follow_floor_five_w():
    assert rwr_copies(0.5) == 5 and rwr_copies(0.9) == 0
    assert rwr_copies(0.25, RewardConfig("triangle")) == 2


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"shape": "square"}, "expected shape in ('band', 'triangle', 'gaussian'), got 'square'"),
        ({"low": 0.7, "high": 0.6}, "expected 0 <= low < high <= 1, got low=0.7, high=0.6"),
        ({"sigma": 0.0}, "expected sigma > 0, got 0.0"),
    ],
)
def test_reward_config_validation(kwargs, message):
    with pytest.raises(ValueError) as info:
        RewardConfig(**kwargs)
    assert str(info.value) == message


def test_weight_rejects_pass_rates_outside_unit_interval():
    with pytest.raises(ValueError, match=r"expected a pass rate in \[0, 1\], got 1.5"):
        weight(1.5)
