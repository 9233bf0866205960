"""The model clients against an in-process server speaking the OpenAI chat completions
protocol: requests checked (image payloads, n, headers), answers, failures, 429s and slow
answers scripted by the test."""

import base64
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import gymnasium as gym
import numpy as np
import pytest

import vicogym  # noqa: F401
from vicogym.clients import OpenAIActor, OpenAIRewriter, extract_answer, parse_edit, parse_spec
from vicogym.errors import ModelError
from vicogym.images import decode_png


class ChatServer:
    """Answers POST /v1/chat/completions from a script: each request takes the next
    behaviour (or the last one, repeated): ("ok", [texts]), ("status", code), ("slow",
    seconds, [texts]), ("one", [texts]) (ignores n), ("call", function) (the texts the function
    gives for the request's body)."""

    def __init__(self, script):
        self.script, self.requests, self.lock = list(script), [], threading.Lock()
        self.in_flight = self.most_in_flight = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append({"path": self.path,
                                            "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
                    step = server.script.pop(0) if len(server.script) > 1 else server.script[0]
                    server.in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server.in_flight)
                try:
                    if step[0] == "status":
                        code, data = step[1], {"error": {"message": f"scripted {step[1]}"}}
                    elif step[0] == "raw":
                        code, data = 200, step[1]
                    else:
                        if step[0] == "slow":
                            time.sleep(step[1])
                            texts = step[2]
                        elif step[0] == "call":
                            texts = step[1](body)
                        else:
                            texts = step[1]
                        n = 1 if step[0] == "one" else body.get("n", 1)
                        time.sleep(0.02)
                        choices = [{"index": i, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": texts[i % len(texts)]}}
                                   for i in range(n)]
                        code, data = 200, {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                                           "choices": choices, "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                                                         "total_tokens": 2}}
                finally:
                    # counted out before the answer goes: once it arrives the client may send its
                    # next request, which must not find this one still counted
                    with server.lock:
                        server.in_flight -= 1
                self._send(code, data)

            def _send(self, code, data):
                payload = json.dumps(data).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


# the ``serve`` fixture (conftest.py) starts ChatServers


IMAGE = (np.arange(24 * 32 * 3) % 251).astype(np.uint8).reshape(24, 32, 3)


def test_k_answers_in_one_request_with_the_image_and_the_key(serve, monkeypatch):
    server = serve(("ok", ["The bars show it.\nAnswer: 42", "\\boxed{41}", "42."]))
    monkeypatch.setenv("VICO_TEST_KEY", "sk-secret")
    actor = OpenAIActor(model="vlm", base_url=server.url, api_key_env="VICO_TEST_KEY")
    answers = actor.answer(IMAGE, "How many?", 6, rng=np.random.default_rng(0), context={})
    assert answers == ["42", "41", "42", "42", "41", "42"]
    (request,) = server.requests
    assert request["path"] == "/v1/chat/completions" and request["body"]["n"] == 6
    assert request["headers"]["authorization"] == "Bearer sk-secret"
    image_part, text_part = request["body"]["messages"][-1]["content"]
    assert text_part["text"].startswith("How many?")
    url = image_part["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert np.array_equal(decode_png(base64.b64decode(url.split(",", 1)[1])), IMAGE)  # the pixels, losslessly
    assert "sk-secret" not in json.dumps(actor.spec()) and "sk-secret" not in repr(actor)


def test_a_server_without_n_gets_k_requests_within_the_bound(serve):
    server = serve(("one", ["yes"]))
    actor = OpenAIActor(model="vlm", base_url=server.url, max_in_flight=2)
    assert actor.answer(IMAGE, "Is it?", 5, rng=np.random.default_rng(0), context={}) == ["yes"] * 5
    assert len(server.requests) == 5 and actor.use_n is False
    assert server.most_in_flight <= 2
    actor.answer(IMAGE, "Is it?", 3, rng=np.random.default_rng(0), context={})
    assert [r["body"].get("n", 1) for r in server.requests[5:]] == [1, 1, 1]  # remembered: no more n


def test_429_and_5xx_are_retried_then_reported_without_the_key(serve, monkeypatch):
    server = serve(("status", 429), ("status", 503), ("ok", ["no"]))
    actor = OpenAIActor(model="vlm", base_url=server.url, max_retries=3)
    assert actor.answer(IMAGE, "Is it?", 1, rng=np.random.default_rng(0), context={}) == ["no"]
    assert len(server.requests) == 3
    monkeypatch.setenv("VICO_TEST_KEY", "sk-secret")
    failing = serve(("status", 500))
    actor = OpenAIActor(model="vlm", base_url=failing.url, max_retries=1, api_key_env="VICO_TEST_KEY")
    with pytest.raises(ModelError, match="answered 500") as caught:
        actor.answer(IMAGE, "Is it?", 1, rng=np.random.default_rng(0), context={})
    assert "sk-secret" not in str(caught.value) and len(failing.requests) == 2


def test_a_slow_server_times_out_with_a_clear_error(serve):
    server = serve(("slow", 2.0, ["late"]))
    actor = OpenAIActor(model="vlm", base_url=server.url, timeout=0.3, max_retries=0)
    with pytest.raises(ModelError, match="did not answer"):
        actor.answer(IMAGE, "Is it?", 1, rng=np.random.default_rng(0), context={})


@pytest.mark.parametrize("text, how, expected", [
    ("so \\boxed{\\frac{1}{2}} it is", "auto", "\\frac{1}{2}"),
    ("reasoning\nAnswer: Blue.", "auto", "Blue"),
    ("first line\n\nlast line\n", "auto", "last line"),
    ("Answer: 3\nbut really \\boxed{4}", "answer", "3"),
    ("value=17;", "regex:value=(\\d+)", "17"),
    ("", "auto", ""),
])
def test_answers_are_extracted_as_configured(text, how, expected):
    assert extract_answer(text, how) == expected


def test_bad_client_settings_are_named():
    with pytest.raises(ValueError, match="expected an answer extractor"):
        extract_answer("x", "magic")
    with pytest.raises(ValueError, match="openai:MODEL@URL"):
        parse_spec("openai:no-url")
    with pytest.raises(ValueError, match="max_in_flight"):
        OpenAIActor(model="m", base_url="http://x/v1", max_in_flight=0)


def test_the_env_takes_an_actor_spec_and_keeps_the_key_out_of_its_config(serve, monkeypatch):
    server = serve(("ok", ["Answer: 7"]))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    env = gym.make("vicogym/Chart-v0", k=4, actor=f"openai:vlm@{server.url}")
    obs, info = env.reset(seed=0)
    assert info["actor_answers"] == ["7"] * 4 and server.requests[0]["body"]["n"] == 4
    assert "sk-secret" not in json.dumps(env.unwrapped.config.to_dict())


def test_the_rewriter_reads_the_sample_and_schema_and_its_answers_are_checked(serve):
    env = gym.make("vicogym/Chart-v0", k=2, max_turns=4)
    obs, info = env.reset(seed=0)
    edit = env.unwrapped.sample_edit(obs, np.random.default_rng(0))
    server = serve(("ok", ["Here is my edit:\n```json\n" + json.dumps(edit) + "\n```"]),
                   ("ok", ["I would rather not."]))
    rewriter = OpenAIRewriter.for_env(env, model="writer", base_url=server.url)
    _, _, _, _, info = env.step(rewriter.propose(obs, np.random.default_rng(0)))
    assert info["valid"], info["error"]
    prompt = server.requests[0]["body"]["messages"][-1]["content"]
    text = prompt[-1]["text"]
    assert obs["question"] in text and "pass rate" in text and '"ops"' in text and prompt[0]["type"] == "image_url"
    _, reward, _, _, info = env.step(rewriter.propose(obs, np.random.default_rng(1)))
    assert not info["valid"] and info["error"]["code"] == "malformed" and "not valid JSON" in info["error"]["message"]


def test_edits_are_parsed_from_fences_or_bare_objects():
    assert parse_edit('```json\n{"op": "stop"}\n```') == {"op": "stop"}
    assert parse_edit('sure: {"ops": [{"op": "stop"}]} done') == {"ops": [{"op": "stop"}]}
    assert parse_edit("nothing") == "nothing"


def test_a_local_image_text_to_text_model_answers_in_batches_and_repeats_itself(tmp_path):
    from helpers.tiny_models import tiny_image_text_to_text

    from vicogym.clients import TransformersActor

    model = tiny_image_text_to_text(tmp_path)
    actor = TransformersActor(str(model), batch_size=3, max_new_tokens=3)
    answers = actor.answer(IMAGE, "how many bars are there", 7, rng=np.random.default_rng(0), context={})
    assert len(answers) == 7 and all(isinstance(a, str) for a in answers)
    again = TransformersActor(str(model), batch_size=3, max_new_tokens=3).answer(
        IMAGE, "how many bars are there", 7, rng=np.random.default_rng(0), context={})
    assert again == answers  # seeded from the environment's generator
    env = gym.make("vicogym/Chart-v0", k=3, actor=f"transformers:{model}")
    obs, info = env.reset(seed=0)
    assert len(info["actor_answers"]) == 3 and 0.0 <= info["pass_rate"] <= 1.0
    with pytest.raises(ValueError, match="transformers model folder"):
        TransformersActor(str(tmp_path / "nothing"))


@pytest.mark.parametrize("body", [{"not": "a chat completion"}, "<html>a login page</html>"])
def test_an_answer_that_is_no_chat_completion_is_named(serve, body):
    server = serve(("raw", body))
    actor = OpenAIActor(model="vlm", base_url=server.url, max_retries=0)
    with pytest.raises(ModelError, match="did not answer with a chat completion"):
        actor.answer(IMAGE, "Is it?", 1, rng=np.random.default_rng(0), context={})


def test_a_404_is_not_said_to_be_retried(serve):
    server = serve(("status", 404))
    with pytest.raises(ModelError, match="answered 404 for model 'vlm': ") as caught:
        OpenAIActor(model="vlm", base_url=server.url, max_retries=2).answer(
            IMAGE, "Is it?", 1, rng=np.random.default_rng(0), context={})
    assert "retries" not in str(caught.value) and len(server.requests) == 1


def test_episodes_in_flight_batch_requests_under_one_bound_and_keep_the_bytes(serve, tmp_path):
    """Four episodes side by side send their requests at once, at most max_in_flight of
    them to the server from the worker; the dataset is the one of episodes run one by one."""
    import pyarrow.parquet as pq

    from vicogym.runs.generate import GenerateConfig, generate

    server = serve(("slow", 0.15, ["Answer: 3", "Answer: 4"]))
    actor = {"name": "openai", "model": "vlm", "base_url": server.url, "max_in_flight": 3}
    shards = {}
    for in_flight in (1, 4):
        out = tmp_path / f"in-flight-{in_flight}"
        generate(GenerateConfig(n=8, out=str(out), episodes_per_shard=8, max_episodes=8, episodes_in_flight=in_flight,
                                env_kwargs={"k": 2, "max_turns": 2, "actor": actor}), progress=False)
        shards[in_flight] = [pq.read_table(p).to_pylist() for p in sorted(out.glob("part-*.parquet"))]
        if in_flight == 1:
            assert server.most_in_flight == 1
    assert server.most_in_flight == 3
    assert shards[1] == shards[4] and sum(map(len, shards[1])) == 8
