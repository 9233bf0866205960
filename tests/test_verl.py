"""What verl's own code makes of generated files: its RL dataset loads them (alone and
mixed with a geometry3k-style file), Hugging Face ``datasets`` sees Image features, and
its custom-reward loader runs vicogym's reward function. verl is installed without its
heavy dependencies (``pip install --no-deps verl==0.9.1``); a processor and tokenizer
stub stand where model files would be needed (prompt-length filtering, off here, is the
only use of them before training)."""

import numpy as np
import pytest

from vicogym.runs.generate import GenerateConfig, generate

datasets = pytest.importorskip("datasets", reason="the verl checks need the [test] extra (datasets)")
OmegaConf = pytest.importorskip("omegaconf", reason="the verl checks need the [test] extra (omegaconf)").OmegaConf
pytest.importorskip("verl", reason="the verl checks need verl: pip install --no-deps verl==0.9.1 (see the README)")


class Stub:
    """Where verl would hold a tokenizer or processor loaded from a model folder."""


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    out = tmp_path_factory.mktemp("verl") / "run"
    generate(GenerateConfig("vicogym/Chart-v0", n=4, out=str(out), episodes_per_shard=4, env_kwargs={"k": 2}),
             progress=False)
    return sorted(str(p) for p in out.glob("part-*.parquet"))


def _dataset(files, tmp_path):
    from verl.utils.dataset.rl_dataset import RLHFDataset

    config = OmegaConf.create({"filter_overlong_prompts": False, "cache_dir": str(tmp_path / "cache")})
    return RLHFDataset(data_files=files, tokenizer=Stub(), config=config, processor=Stub())


def test_verls_dataset_reads_the_rows_with_their_images(shards, tmp_path):
    from PIL import Image

    dataset = _dataset(shards, tmp_path)
    assert len(dataset) == 4
    item = dataset[0]
    (message,) = item["raw_prompt"]
    image, text = message["content"]
    assert isinstance(image["image"], Image.Image) and image["image"].size[0] > 100
    assert text["text"].endswith("Answer with a single word or number.")
    assert item["data_source"] == "vicogym/Chart-v0" and item["reward_model"]["style"] == "rule"


def test_hugging_face_sees_image_features_and_one_png_per_row(shards):
    loaded = datasets.load_dataset("parquet", data_files=shards)["train"]
    assert isinstance(loaded.features["images"], datasets.List)
    assert isinstance(loaded.features["images"].feature, datasets.Image)
    assert "image" not in loaded.column_names and loaded[0]["images"][0].mode == "RGB"


def test_vicogym_files_mix_with_other_multimodal_datasets(shards, tmp_path):
    from PIL import Image

    geometry = datasets.Dataset.from_dict(
        {"data_source": ["hiyouga/geometry3k"], "prompt": [[{"content": "<image>Find x.", "role": "user"}]],
         "images": [[Image.fromarray(np.zeros((20, 20, 3), np.uint8))]], "ability": ["math"],
         "reward_model": [{"ground_truth": "3", "style": "rule"}],
         "extra_info": [{"answer": "3", "index": 0, "question": "Find x.", "split": "train"}]},
        features=datasets.Features({
            "data_source": datasets.Value("string"),
            "prompt": datasets.List({"content": datasets.Value("string"), "role": datasets.Value("string")}),
            "images": datasets.List(datasets.Image()), "ability": datasets.Value("string"),
            "reward_model": {"ground_truth": datasets.Value("string"), "style": datasets.Value("string")},
            "extra_info": {"answer": datasets.Value("string"), "index": datasets.Value("int64"),
                           "question": datasets.Value("string"), "split": datasets.Value("string")}}))
    geometry.to_parquet(str(tmp_path / "geo3k.parquet"))
    mixed = _dataset([str(tmp_path / "geo3k.parquet"), *shards], tmp_path)
    assert len(mixed) == 5 and mixed[0]["data_source"] == "hiyouga/geometry3k"
    assert mixed[1]["data_source"] == "vicogym/Chart-v0"


def test_verl_loads_vicogyms_reward_function_and_its_own_knows_no_vicogym_data():
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.utils.reward_score import default_compute_score

    import vicogym.verl_reward as module

    config = OmegaConf.create(
        {"reward": {"custom_reward_function": {"path": module.__file__, "name": "compute_score"}}}
    )
    score = get_custom_reward_fn(config)
    assert score(data_source="vicogym/Chart-v0", solution_str="The bars say\nAnswer: 12.0", ground_truth="12",
                 extra_info={}) == 1.0
    assert score(data_source="vicogym/Chart-v0", solution_str="\\boxed{15}", ground_truth="12", extra_info={}) == 0.0
    assert score(data_source="vicogym/Natural-v0", solution_str="Answer: Two", ground_truth="2", extra_info={}) == 1.0
    with pytest.raises(ValueError, match="not a vicogym data source"):
        score(data_source="vicogym/Nope-v0", solution_str="1", ground_truth="1", extra_info={})
    with pytest.raises(NotImplementedError):
        default_compute_score("vicogym/Chart-v0", "12", "12")
