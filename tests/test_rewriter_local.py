"""The local rewriter (``transformers:DIR``): a Hugging Face image-text-to-text model folder
read without a server, with the OpenAI rewriter's prompt and parser, seeded sampling, and
the spec on the command line."""

import json

import gymnasium as gym
import numpy as np
import pytest
from typer.testing import CliRunner

import vicogym  # noqa: F401  (registers the environments)
from vicogym.cli import app
from vicogym.clients import OpenAIRewriter, TransformersRewriter, parse_edit
from vicogym.policies import make_rewriter, parse_rewriter


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from helpers.tiny_models import tiny_qwen2_vl

    return str(tiny_qwen2_vl(tmp_path_factory.mktemp("rewriter") / "tiny-qwen2-vl"))


def _env(seed=0, **settings):
    env = gym.make("vicogym/Chart-v0", k=2, max_turns=3, **settings)
    obs, _ = env.reset(seed=seed)
    return env, obs


def test_the_local_rewriter_reads_exactly_what_the_openai_rewriter_reads(model_dir):
    env, _ = _env()
    local = TransformersRewriter.for_env(env, model_dir=model_dir)
    remote = OpenAIRewriter.for_env(env, model="writer", base_url="http://localhost:1/v1")
    content = local.prompt()
    assert content == remote.prompt()
    assert [part["type"] for part in content] == ["image_url", "text"]
    assert content[0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert env.unwrapped.sample.question in content[1]["text"] and '"ops"' in content[1]["text"]
    unseen = TransformersRewriter.for_env(env, model_dir=model_dir, show_image=False).prompt()
    assert unseen == OpenAIRewriter.for_env(env, model="w", base_url="http://localhost:1/v1", show_image=False).prompt()
    assert [part["type"] for part in unseen] == ["text"]
    env.step(env.unwrapped.sample_edit(None, np.random.default_rng(0)))  # a new sample: both read it
    assert local.prompt() == remote.prompt() != content


def test_a_proposal_is_what_parse_edit_makes_of_the_sampled_text_and_repeats_with_its_seed(model_dir):
    env, obs = _env()
    rewriter = make_rewriter({"name": "transformers", "model_dir": model_dir, "max_new_tokens": 16}, env)
    assert isinstance(rewriter, TransformersRewriter)
    edit = rewriter.propose(obs, np.random.default_rng(0))
    first = rewriter.last_response
    assert first and edit == parse_edit(first)
    assert rewriter.propose(obs, np.random.default_rng(0)) == edit and rewriter.last_response == first
    rewriter.propose(obs, np.random.default_rng(1))
    assert rewriter.last_response != first
    _, reward, _, _, info = env.step(edit)  # a tiny random model writes no edit: the env names why
    assert not info["valid"] and info["error"]["code"] == "malformed" and info["error"]["message"]


def test_a_valid_edit_in_the_model_s_text_is_accepted(model_dir, monkeypatch):
    env, obs = _env()
    edit = env.unwrapped.sample_edit(obs, np.random.default_rng(0))
    seen = []

    def scripted(self, content, n=1, seed=None):
        seen.append(content)
        return ["Here is my edit:\n```json\n" + json.dumps(edit) + "\n```"] * n

    monkeypatch.setattr(TransformersRewriter, "chat", scripted)
    rewriter = TransformersRewriter.for_env(env, model_dir=model_dir)
    proposed = rewriter.propose(obs, np.random.default_rng(0))
    assert proposed == edit and seen == [rewriter.prompt()]
    _, _, _, _, info = env.step(proposed)
    assert info["valid"], info["error"]


def test_generate_runs_with_a_local_rewriter_from_the_command_line(model_dir, tmp_path, monkeypatch):
    runner = CliRunner()
    base = ["generate", "vicogym/Chart-v0", "--n", "2", "--k", "2", "--max-turns", "1", "--no-progress"]
    settings = json.dumps({"name": "transformers", "model_dir": model_dir, "max_new_tokens": 8})
    result = runner.invoke(app, base + ["--out", str(tmp_path / "raw"), "--max-episodes", "2", "--rewriter", settings])
    assert result.exit_code == 1 and "only 0 of 2 samples within the episode budget" in result.output, result.output
    manifest = json.loads((tmp_path / "raw" / "manifest.json").read_text())
    assert manifest["config"]["rewriter"]["model_dir"] == model_dir
    assert manifest["counts"]["steps"] == 2 and manifest["rejections"] == {"malformed": 2}  # the text is no edit
    assert "rejected: malformed" in result.output

    def scripted(self, content, n=1, seed=None):  # the model's call answers with a valid edit of the sample
        rng = np.random.default_rng(seed)
        return [json.dumps(self.env.unwrapped.sample_edit(None, rng))] * n

    monkeypatch.setattr(TransformersRewriter, "chat", scripted)
    result = runner.invoke(app, base + ["--out", str(tmp_path / "run"), "--rewriter", f"transformers:{model_dir}"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["config"]["rewriter"] == f"transformers:{model_dir}"
    assert manifest["counts"]["samples"] == 2 and manifest["counts"]["valid_steps"] >= 2


def test_a_bad_folder_or_setting_is_named(model_dir, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match=f"'{empty}' is no model folder .*config.json"):
        parse_rewriter(f"transformers:{empty}")
    with pytest.raises(ValueError, match="is no model folder"):
        parse_rewriter("transformers:")
    with pytest.raises(ValueError, match=r"takes the settings .*max_new_tokens.*got \['max_tokens', 'model_dir'\]"):
        parse_rewriter({"name": "transformers", "model_dir": model_dir, "max_tokens": 8})
    with pytest.raises(ValueError, match="max_new_tokens"):
        TransformersRewriter(model_dir, max_new_tokens=0)
    assert parse_rewriter(f"transformers:{model_dir}") == ("transformers", {"model_dir": model_dir})
    (empty / "config.json").write_text("{}")  # a config and nothing else: loading names the folder
    env, obs = _env()
    from vicogym.errors import ModelError

    with pytest.raises(ModelError, match=f"{empty} could not be loaded .*save_pretrained"):
        make_rewriter(f"transformers:{empty}", env).propose(obs, np.random.default_rng(0))
    result = CliRunner().invoke(app, ["generate", "--n", "1", "--out", str(tmp_path / "x"), "--rewriter",
                                      f"transformers:{tmp_path / 'nothing'}"])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "is no model folder" in result.output and "config.json" in result.output
    result = CliRunner().invoke(app, ["generate", "--n", "1", "--out", str(tmp_path / "y"), "--rewriter", "{oops"])
    assert result.exit_code != 0 and "--rewriter" in result.output and "transformers:DIR" in result.output


def test_a_missing_extra_is_named_with_its_install_command(model_dir, monkeypatch):
    import sys

    import vicogym.clients as clients

    monkeypatch.setattr(clients, "_LOADED", {})
    monkeypatch.setitem(sys.modules, "transformers", None)
    env, obs = _env()
    with pytest.raises(clients.ModelError, match=r"needs torch and transformers .*pip install .*natural"):
        TransformersRewriter.for_env(env, model_dir=model_dir).propose(obs, np.random.default_rng(0))
