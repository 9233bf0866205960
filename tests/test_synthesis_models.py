"""The models the synthesis loop calls: OpenAI-compatible clients against a fake server
(requests checked), the hashing and local-model embedders, perception of image folders."""

import json

import cv2
import numpy as np
import pytest

from vicogym.errors import ModelError
from vicogym.instruct.models import (
    HashingEmbedder,
    OpenAIComposer,
    OpenAIPerceiver,
    OpenAITarget,
    OpenAIWriter,
    TemplateComposer,
    TransformersEmbedder,
    make_model,
    missing_values,
)
from vicogym.instruct.run_folder import iter_samples
from vicogym.instruct.synthesis import SynthesizeConfig, synthesize
from vicogym.programs.instruct import REGISTRY

IMAGE = np.full((32, 48, 3), 200, np.uint8)
FACTS = {"source": "chart", "rows": [{"label": "A", "series": "s", "value": 3.0}], "texts": ["Title"]}
SET = [{"id": "word_count", "params": {"n": 40, "relation": "at most"}},
       {"id": "include_keywords", "params": {"keywords": ["harbor"]}}]


def _text(request):
    return next(part["text"] for part in request["body"]["messages"][-1]["content"] if part["type"] == "text")


def test_the_writer_sends_the_image_and_instruction_and_revises_from_the_diagnostics(serve):
    server = serve(("ok", ["A first answer."]), ("ok", ["A revised answer."]))
    writer = OpenAIWriter("m", server.url)
    rng = np.random.default_rng(0)
    assert writer.respond(IMAGE, "Describe it.", SET, FACTS, rng) == "A first answer."
    failed = [{"id": "include_keywords", "expected": "harbor", "actual": "missing", "detail": ""}]
    assert writer.revise(IMAGE, "Describe it.", "A first answer.", failed, SET, rng) == "A revised answer."
    first, second = server.requests
    assert first["body"]["messages"][-1]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert _text(first) == "Describe it."
    assert "include_keywords: expected harbor, got missing" in _text(second) and "A first answer." in _text(second)


def test_the_target_asks_for_k_choices_in_one_request(serve):
    server = serve(("ok", ["one", "two", "three"]))
    assert OpenAITarget("m", server.url).respond(IMAGE, "Do it.", SET, FACTS, 3, np.random.default_rng(0)) == [
        "one", "two", "three"]
    assert len(server.requests) == 1 and server.requests[0]["body"]["n"] == 3
    short = serve(("one", ["only"]))
    with pytest.raises(ModelError, match="returned 1 choices for n=3; does the server support n"):
        OpenAITarget("m", short.url).respond(IMAGE, "Do it.", SET, FACTS, 3, np.random.default_rng(0))


def test_the_llm_composer_is_kept_only_when_it_keeps_every_stated_value(serve):
    rng = np.random.default_rng(1)
    draft = TemplateComposer().compose(FACTS, SET, np.random.default_rng(1))
    assert "40" in draft and "harbor" in draft
    good = serve(("ok", ["Report on the chart in at most 40 words and use the word harbor."]))
    assert OpenAIComposer("m", good.url).compose(FACTS, SET, rng) == (
        "Report on the chart in at most 40 words and use the word harbor.")
    assert "harbor" in _text(good.requests[0])
    dropped = serve(("ok", ["Report on the chart briefly."]))
    assert OpenAIComposer("m", dropped.url).compose(FACTS, SET, np.random.default_rng(1)) == draft
    assert missing_values("Report briefly.", draft, SET) == ["40", "at most", "harbor"]
    hidden = [{"id": "chart_extreme", "params": {"extreme": "largest", "label": "A", "labels": ["A"], "series": "s"}}]
    assert "A" not in missing_values("Which row is largest?", "Which row (s) has the largest value?", hidden)


def test_the_perceiver_reads_json_and_refuses_anything_else(serve):
    server = serve(("ok", ['Here: {"objects": [{"name": "red car", "category": "car", "color": "red", "x": 0.2, '
                           '"y": 0.5}, {"bad": 1}], "texts": ["STOP", " "]}']), ("ok", ["I see a car."]))
    perceiver = OpenAIPerceiver("m", server.url)
    facts = perceiver.perceive(IMAGE, np.random.default_rng(0))
    assert facts == {"source": "model", "objects": [{"name": "red car", "category": "car", "color": "red", "x": 0.2,
                                                      "y": 0.5}], "texts": ["STOP"]}
    with pytest.raises(ModelError, match="did not answer the perception prompt with a JSON object"):
        perceiver.perceive(IMAGE, np.random.default_rng(0))


def test_model_specs_say_what_to_write():
    assert isinstance(make_model("embedder", "hashing"), HashingEmbedder)
    assert make_model("writer", {"kind": "simulated", "skill": 0.5}).skill == 0.5
    assert isinstance(make_model("writer", "openai:m@http://localhost:1/v1"), OpenAIWriter)
    with pytest.raises(ValueError, match="expected the target as 'simulated', or 'openai:MODEL@URL', got 3"):
        make_model("target", 3)
    with pytest.raises(ValueError, match="expected the composer as 'template' or 'simulated'"):
        make_model("composer", "gpt")


def test_the_hashing_embedder_is_stable_and_unit_length():
    a, b = HashingEmbedder().embed(["Describe the chart in 40 words.", "Describe the chart in 40 words."])
    c = HashingEmbedder().embed(["Write a poem about the sea, in lowercase."])[0]
    assert np.allclose(a, b) and np.isclose(np.linalg.norm(a), 1.0) and float(a @ c) < 0.5


def _tiny_encoder(folder):
    transformers = pytest.importorskip("transformers", reason="a local embedding model needs the [natural] extra")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "describe", "the", "chart", "in", "words", "write", "a",
             "poem", "about", "sea"]
    folder.mkdir()
    (folder / "vocab.txt").write_text("\n".join(words) + "\n")
    transformers.BertTokenizerFast(vocab_file=str(folder / "vocab.txt")).save_pretrained(folder)
    config = transformers.BertConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=64)
    transformers.BertModel(config).save_pretrained(folder)
    return folder


def test_a_local_embedding_model_is_loaded_from_its_folder(tmp_path):
    folder = _tiny_encoder(tmp_path / "encoder")
    embedder = make_model("embedder", str(folder))
    assert isinstance(embedder, TransformersEmbedder)
    vectors = embedder.embed(["describe the chart", "write a poem about the sea", "describe the chart"])
    assert vectors.shape == (3, 16) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert np.allclose(vectors[0], vectors[2]) and not np.allclose(vectors[0], vectors[1])
    with pytest.raises(ValueError, match="not a loadable local model folder"):
        TransformersEmbedder(str(tmp_path / "nothing")).embed(["x"])


def test_a_folder_of_images_is_perceived_and_only_form_constraints_are_asked(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    rng = np.random.default_rng(0)
    for i in range(3):
        cv2.imwrite(str(images / f"photo{i}.png"), rng.integers(0, 255, (40, 60, 3), dtype=np.uint8))
    (images / "notes.txt").write_text("not an image")
    config = SynthesizeConfig(out=str(tmp_path / "run"), n=4, per_round=4, probes=2, candidates=2,
                              images=(str(images),), progress=False)
    synthesize(config)
    rows = list(iter_samples(config.out))
    assert len(rows) >= 4
    for row in rows:
        assert json.loads(row["image_source"])["source_id"].startswith("photo")
        assert all(not REGISTRY[c["id"]].needs for c in json.loads(row["constraints"]))
