"""`vicogym serve`: the OpenEnv server, driven through OpenEnv's own clients (raw HTTP and
WebSocket only for the malformed and oversized requests), against in-process environments
of the same settings and seeds."""

from __future__ import annotations

import asyncio
import gc
import json
import socket
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("openenv", reason="the server needs the [trainers] extra (openenv, fastapi, uvicorn)")

import requests  # openenv brings it
import uvicorn
from openenv.core.generic_client import GenericEnvClient
from typer.testing import CliRunner
from websockets.sync.client import connect as ws_connect

import vicogym  # noqa: F401
from vicogym.envs.chart import ChartEnv
from vicogym.trainers.common import MAX_PIXELS, feedback, fit_image, rewriter_prompt
from vicogym.trainers.openenv import (
    Environments,
    ServerFull,
    VicoAction,
    VicoEnvClient,
    capacity,
    make_app,
    open_sessions,
    uvicorn_config,
)

# small and fast: at 40 dpi the reader check would refuse every chart (it is tested on its own)
CHART = {"k": 2, "dpi": 40, "max_turns": 4, "reader_check": "off"}
EVIDENCE = {"tasks": "forms", "view_size": 256, "max_images": 4}
LIMIT = 64 * 1024
#: how long a test waits for the server to do something it will do (start, free a session)
PATIENCE_S = 60.0


class Served:
    def __init__(self, app, port: int):
        self.app, self.port = app, port
        self.url = f"http://127.0.0.1:{port}"
        self.server = uvicorn.Server(uvicorn_config(app, "127.0.0.1", port))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        wait_until(lambda: self.server.started or not self.thread.is_alive(), "the server to start")
        assert self.server.started, "the server did not start"

    def client(self) -> VicoEnvClient:
        return VicoEnvClient(base_url=self.url, message_timeout_s=PATIENCE_S)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(PATIENCE_S)


def wait_until(condition, what: str) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {PATIENCE_S:.0f} s for {what}")
        time.sleep(0.02)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def serve_env():
    """Start a server for ``env_id`` (make_app settings) in a thread; stopped after the test."""
    started = []

    def start(env_id: str, env_kwargs=None, **settings) -> Served:
        settings.setdefault("max_request_bytes", LIMIT)
        started.append(Served(make_app(env_id, env_kwargs, **settings), free_port()))
        return started[-1]

    yield start
    for served in started:
        served.stop()


def reference(env_id: str, settings: dict, seed: int):
    env = gym.make(env_id, **settings).unwrapped
    env.reset(seed=seed)
    return env


def toggle_gridlines(structure: str) -> dict:
    return {"ops": [{"op": "set_style", "gridlines": not json.loads(structure)["spec"]["gridlines"]}]}


def assert_edit_observation_is(obs, env) -> None:
    """The observation shows what the in-process environment ``env`` holds now."""
    assert np.array_equal(obs.image(), np.asarray(fit_image(env.sample.image, MAX_PIXELS)))
    assert (obs.question, obs.answer, obs.pass_rate) == (env.sample.question, env.sample.answer, env.pass_rate)
    assert obs.structure == env.arm.encode(env.sample.structure)[0]


# -- edit environments ---------------------------------------------------------------------------
def test_a_chart_episode_matches_an_in_process_one_rejected_edits_included(serve_env):
    served = serve_env("vicogym/Chart-v0", CHART)
    env = reference("vicogym/Chart-v0", CHART, 3)
    with served.client().sync() as client:
        result = client.reset(seed=3)
        obs = result.observation
        assert not result.done and obs.error is None and obs.kind == "edit"
        assert obs.text == rewriter_prompt(env)
        assert_edit_observation_is(obs, env)
        png = obs.image_png_b64

        bad = {"ops": [{"op": "set_cell", "row": "no such row", "series": "x", "value": 1.0}]}
        expected = env.step_result(bad)
        result = client.step(VicoAction(edit=bad))
        obs = result.observation
        assert obs.error is not None and obs.error.code == expected.info["error"]["code"] == "not_found"
        assert not result.done and result.reward == expected.reward == env.config.invalid_penalty
        assert obs.image_png_b64 == png and not obs.metadata["valid"]

        edit = toggle_gridlines(obs.structure)
        expected = env.step_result(edit)
        assert expected.info["valid"]
        reply = f"I will flip the gridlines.\n```json\n{json.dumps(edit)}\n```"  # a model's reply, parsed leniently
        result = client.step(VicoAction(edit=reply))
        obs = result.observation
        assert obs.error is None and obs.metadata["valid"] and result.reward == expected.reward
        assert_edit_observation_is(obs, env)
        assert obs.image_png_b64 != png
        assert obs.text == feedback(expected.info, env.arm.encode(env.sample.structure)[0])

        result = client.step(VicoAction(edit='{"op": "stop"}'))
        assert result.done and result.reward == 0.0 and result.observation.metadata["stopped"]
        state = client.state()
        assert (state.env_id, state.seed, state.step_count, state.kind) == ("vicogym/Chart-v0", 3, 3, "edit")
        result = client.step(VicoAction(edit=edit))
        assert result.done and result.observation.error.code == "episode_over"


def test_errors_are_observations_and_the_session_goes_on(serve_env):
    served = serve_env("vicogym/Chart-v0", CHART)
    with served.client().sync() as client:
        result = client.step(VicoAction(edit={"op": "stop"}))
        assert not result.done and result.observation.error.code == "no_episode"
        assert client.reset(seed=-1).observation.error.code == "bad_value"
        obs = client.reset(sed=4).observation
        assert obs.error.code == "bad_field" and "did you mean 'seed'" in obs.error.message
        obs = client.reset(seed=1, options="index 0").observation
        assert obs.error.code == "bad_value" and obs.error.field == "options"
        assert client.step(VicoAction(edit={"op": "stop"})).observation.error.code == "no_episode"
        obs = client.reset(seed=4).observation
        assert obs.error is None
        obs = client.step(VicoAction(action={"action": "answer", "answer": "1"})).observation
        assert obs.error.code == "bad_field" and "'edit'" in obs.error.message
        obs = client.step(VicoAction(edit="no JSON here")).observation
        assert obs.error.code == "malformed"
        result = client.step(VicoAction(edit=toggle_gridlines(obs.structure)))
        assert result.observation.error is None and result.observation.metadata["valid"]


def test_the_toy_arm_and_the_instruct_environment_are_served(serve_env):
    toy = serve_env("vicogym/Toy-v0", {"k": 2})
    env = reference("vicogym/Toy-v0", {"k": 2}, 5)
    with toy.client().sync() as client:
        obs = client.reset(seed=5).observation
        assert_edit_observation_is(obs, env)
        assert client.step(VicoAction(edit={"op": "stop"})).done

    settings = {"height": 96, "width": 128}
    instruct = serve_env("vicogym/Instruct-v0", settings)
    env = gym.make("vicogym/Instruct-v0", **settings).unwrapped
    first, _ = env.reset(seed=2)
    response = "Is this a chart? It shows values."
    _, reward, _, _, info = env.step(response)
    with instruct.client().sync() as client:
        obs = client.reset(seed=2).observation
        assert obs.kind == "response" and obs.text == first["instruction"]
        assert np.array_equal(obs.image(), first["image"])
        result = client.step(VicoAction(response=response))
        assert result.done and result.reward == reward and result.observation.pass_rate == info["pass_rate"]
        assert result.observation.metadata["verdicts"] == info["verdicts"]
        assert client.step(VicoAction(response=response)).observation.error.code == "episode_over"


# -- evidence ----------------------------------------------------------------------------------------
def test_an_evidence_episode_zoom_views_and_a_scored_answer(serve_env):
    served = serve_env("vicogym/Evidence-v0", EVIDENCE)
    env = reference("vicogym/Evidence-v0", EVIDENCE, 0)
    zoom = {"action": "zoom", "image": 0, "regions": [{"x0": 0.0, "y0": 0.0, "x1": 0.5, "y1": 0.5}]}
    with served.client().sync() as client:
        obs = client.reset(seed=0).observation
        assert obs.kind == "agent" and obs.error is None and obs.question == env.question_text()
        assert obs.view_ids == [v.id for v in env.visible()]
        assert [v.shape for v in obs.views()] == [env.view_pixels(i).shape for i in obs.view_ids]
        assert all(np.array_equal(a, env.view_pixels(i)) for a, i in zip(obs.views(), obs.view_ids))

        env.step(zoom)
        result = client.step(VicoAction(action=json.dumps(zoom)))
        obs = result.observation
        assert obs.error is None and not result.done and obs.view_ids == [1]
        assert np.array_equal(obs.views()[0], np.asarray(fit_image(env.view_pixels(1), MAX_PIXELS)))
        assert obs.text.startswith("image 1: unit 0")

        obs = client.step(VicoAction(action={"action": "zoom", "image": 9, "regions": []})).observation
        assert obs.error is not None and obs.views_png_b64 == []

        result = client.step(VicoAction(action={"action": "answer", "answer": env.task.answer}))
        obs = result.observation
        assert result.done and result.reward == 1.0 and obs.score == 1.0 and obs.answer == env.task.answer
        assert obs.metadata["outcome"] == "answered"
        result = client.step(VicoAction(action={"action": "answer", "answer": "1"}))
        assert result.done and result.observation.error.code == "episode_over"


def test_a_generic_openenv_client_speaks_the_same_protocol(serve_env):
    served = serve_env("vicogym/Evidence-v0", EVIDENCE)
    with GenericEnvClient(base_url=served.url).sync() as client:
        result = client.reset(seed=1)
        assert result.observation["view_ids"] == [0] and result.observation["error"] is None
        result = client.step({"action": {"action": "answer", "answer": "?"}})
        assert result.done and result.observation["score"] is not None


# -- sessions ----------------------------------------------------------------------------------------
def test_32_concurrent_sessions_each_see_their_own_episode(serve_env):
    n = 32
    served = serve_env("vicogym/Chart-v0", CHART, max_sessions=n)

    async def episode(seed: int):
        async with served.client() as client:
            first = (await client.reset(seed=100 + seed)).observation
            second = (await client.step(VicoAction(edit=toggle_gridlines(first.structure)))).observation
            state = await client.state()
            return first, second, state

    async def all_sessions():
        return await asyncio.gather(*(episode(i) for i in range(n)))

    results = asyncio.run(all_sessions())
    env = gym.make("vicogym/Chart-v0", **CHART).unwrapped
    for i, (first, second, state) in enumerate(results):
        env.reset(seed=100 + i)
        assert first.text == rewriter_prompt(env)
        assert_edit_observation_is(first, env)
        expected = env.step_result(toggle_gridlines(first.structure))
        assert second.metadata["valid"] == expected.info["valid"] and second.reward == expected.reward
        assert_edit_observation_is(second, env)
        assert (state.seed, state.step_count) == (100 + i, 1)
    assert len({r[0].image_png_b64 for r in results}) > 1
    wait_until(lambda: open_sessions(served.app) == 0, "the sessions to close")


def test_a_client_gone_mid_episode_frees_its_session(serve_env):
    served = serve_env("vicogym/Chart-v0", CHART, max_sessions=1)
    first = served.client().sync()
    obs = first.reset(seed=7).observation
    assert open_sessions(served.app) == 1
    first.disconnect()  # mid-episode, no close message
    wait_until(lambda: open_sessions(served.app) == 0, "the server to free the session")
    with ws_connect(served.url.replace("http", "ws") + "/ws") as abrupt:
        abrupt.send(json.dumps({"type": "reset", "data": {"seed": 7}}))
        assert json.loads(abrupt.recv())["data"]["observation"]["image_png_b64"] == obs.image_png_b64
        abrupt.socket.shutdown(socket.SHUT_RDWR)  # the connection dropped, no close handshake
    wait_until(lambda: open_sessions(served.app) == 0, "the server to free the dropped session")
    with served.client().sync() as second:
        again = second.reset(seed=7).observation
        assert again.image_png_b64 == obs.image_png_b64
        assert second.step(VicoAction(edit=toggle_gridlines(again.structure))).observation.error is None


def test_sessions_over_the_limit_are_refused_clearly(serve_env):
    served = serve_env("vicogym/Chart-v0", CHART, max_sessions=2)
    a, b = served.client().sync(), served.client().sync()
    a.reset(seed=1)
    b.reset(seed=2)
    with served.client().sync() as third, \
            pytest.raises(RuntimeError, match=r"at capacity: 2/2 sessions.*CAPACITY_REACHED"):
            third.reset(seed=3)
    assert a.step(VicoAction(edit={"op": "stop"})).done
    b.close()
    wait_until(lambda: open_sessions(served.app) == 1, "the closed session to be freed")
    with served.client().sync() as fourth:
        assert fourth.reset(seed=3).observation.error is None
    a.close()


def rss_mib() -> float:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmRSS:"))


@pytest.fixture
def live_charts(monkeypatch):
    """The chart environments made from now on that are still in memory (a weak set)."""
    alive: weakref.WeakSet = weakref.WeakSet()
    init = ChartEnv.__init__

    def counted(self, *args, **kwargs):
        init(self, *args, **kwargs)
        alive.add(self)

    monkeypatch.setattr(ChartEnv, "__init__", counted)
    return alive


def test_a_burst_above_the_bound_gets_typed_refusals_and_memory_stays_bounded(serve_env, live_charts):
    bound = 4
    served = serve_env("vicogym/Chart-v0", CHART, max_sessions=bound)
    url = served.url
    most = [len(live_charts)]
    sampling = threading.Event()

    def sample() -> None:  # the most chart environments in memory at once, looked at every few ms
        while not sampling.wait(0.002):
            most[0] = max(most[0], len(live_charts))

    def http_resets(n: int, seed: int) -> list:
        with ThreadPoolExecutor(n) as pool:
            return list(pool.map(lambda i: requests.post(f"{url}/reset", json={"seed": seed + i}, timeout=PATIENCE_S),
                                 range(n)))

    async def ws_session(i: int) -> str:
        client = served.client()
        try:
            await client.connect()
            obs = (await client.reset(seed=500 + i)).observation
            if obs.error is not None:
                assert obs.error.code == "server_full" and "--max-sessions" in obs.error.message, obs.error
                return "full"
            obs = (await client.step(VicoAction(edit=toggle_gridlines(obs.structure)))).observation
            assert obs.error is None, obs.error
            return "ok"
        except RuntimeError as exc:  # a session over the bound is refused with an error frame
            assert "CAPACITY_REACHED" in str(exc) and "--max-sessions" in str(exc), exc
            return "refused"
        finally:
            await client.close()

    async def ws_sessions(n: int) -> list[str]:
        return await asyncio.gather(*(ws_session(i) for i in range(n)))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    before = rss_mib()
    answers = http_resets(64, 0) + http_resets(64, 64)
    with ThreadPoolExecutor(1) as side:  # more HTTP resets while sessions above the bound open
        extra = side.submit(http_resets, 64, 128)
        sessions = asyncio.run(ws_sessions(3 * bound))
        answers += extra.result()
    grown = rss_mib() - before
    sampling.set()
    sampler.join()

    assert most[0] <= bound, f"{most[0]} chart environments in memory at once, over the bound of {bound}"
    counts = capacity(served.app)
    assert counts["peak"] <= bound and counts["in_use"] + counts["warm"] <= bound, counts
    assert grown < 768, f"the process grew {grown:.0f} MiB during the burst"

    kinds = []
    for response in answers:
        body = response.json()
        if response.status_code == 200:
            assert body["observation"]["error"] is None and body["observation"]["image_png_b64"], body
            kinds.append("ok")
        else:
            assert response.status_code == 503 and body["code"] == "server_full", (response.status_code, body)
            assert f"maximum of {bound}" in body["detail"] and "--max-sessions" in body["detail"]
            assert body["max_sessions"] == bound and response.headers["retry-after"] == "1"
            kinds.append("full")
    assert "ok" in kinds and "full" in kinds
    assert sessions.count("ok") >= 1, sessions  # the rest were refused or answered server_full, as checked
    wait_until(lambda: open_sessions(served.app) == 0, "the sessions to give their environments back")
    assert requests.get(f"{url}/capacity").json()["in_use"] == 0
    reset = requests.post(f"{url}/reset", json={"seed": 1})  # the server goes on
    assert reset.status_code == 200 and reset.json()["observation"]["error"] is None


def test_unused_environments_are_closed_after_the_ttl(serve_env, live_charts):
    served = serve_env("vicogym/Chart-v0", CHART, max_sessions=3, session_ttl_s=0.5)
    with served.client().sync() as a, served.client().sync() as b:
        a.reset(seed=1)
        b.reset(seed=2)
        assert capacity(served.app)["in_use"] == 2
    wait_until(lambda: capacity(served.app)["warm"] == 0, "the unused environments to be closed")
    wait_until(lambda: gc.collect() >= 0 and len(live_charts) == 0, "the closed environments to leave memory")
    assert capacity(served.app)["in_use"] == 0
    with served.client().sync() as c:  # and new ones are made when needed
        assert c.reset(seed=3).observation.error is None


class Stub:
    def __init__(self):
        self.closed = False

    def close(self):
        self.closed = True


class StubEnvironments(Environments):
    def build(self):
        return Stub()


def test_environments_lend_within_the_bound_and_sessions_go_first():
    envs = StubEnvironments("vicogym/Chart-v0", {}, limit=2, keep_warm_s=None)
    a, b = envs.lend(), envs.lend()
    with pytest.raises(ServerFull, match=r"maximum of 2 environments \(2 in use.*--max-sessions"):
        envs.lend()
    with pytest.raises(ServerFull):
        envs.lend(wait_s=0.05)
    got = []
    waiter = threading.Thread(target=lambda: got.append(envs.lend(wait_s=PATIENCE_S)))
    waiter.start()
    wait_until(lambda: envs._waiting == 1, "the session to wait")
    envs.give_back(a)
    with pytest.raises(ServerFull):  # a caller that does not wait gets nothing while a session waits
        envs.lend()
    waiter.join(PATIENCE_S)
    assert got == [a] and not a.closed and envs.counts() == {"max_sessions": 2, "in_use": 2, "warm": 0, "peak": 2}
    envs.give_back(b)
    assert envs.lend() is b  # the warm one, not a new one
    envs.give_back(b)
    envs.close()
    assert b.closed and not a.closed
    envs.give_back(a)  # given back after close: closed at once
    assert a.closed and envs.counts()["warm"] == 0

    expiring = StubEnvironments("vicogym/Chart-v0", {}, limit=1, keep_warm_s=0.05)
    c = expiring.lend()
    expiring.give_back(c)
    wait_until(lambda: c.closed, "the unused environment to be closed")
    assert expiring.counts()["warm"] == 0 and not expiring.lend().closed


@pytest.fixture
def raising_after_the_end(monkeypatch):
    """Chart environments that raise RuntimeError on a step after their episode ended (as
    Gymnasium allows: it leaves the case undefined)."""
    step_result, reset = ChartEnv.step_result, ChartEnv.reset

    def ending_step(self, action):
        if getattr(self, "_test_ended", False):
            raise RuntimeError("the episode has ended; call reset() first")
        result = step_result(self, action)
        self._test_ended = bool(result.terminated or result.truncated)
        return result

    def fresh_reset(self, *args, **kwargs):
        self._test_ended = False
        return reset(self, *args, **kwargs)

    monkeypatch.setattr(ChartEnv, "step_result", ending_step)
    monkeypatch.setattr(ChartEnv, "reset", fresh_reset)


def test_acting_after_the_end_is_a_typed_error_over_the_websocket(serve_env, raising_after_the_end):
    served = serve_env("vicogym/Chart-v0", CHART)
    with served.client().sync() as client:
        obs = client.reset(seed=3).observation
        for _ in range(CHART["max_turns"]):  # the episode ends by truncation
            result = client.step(VicoAction(edit=toggle_gridlines(obs.structure)))
            obs = result.observation
        assert result.done and obs.metadata["truncated"]
        for _ in range(2):
            result = client.step(VicoAction(edit={"op": "stop"}))
            assert result.done and result.observation.error.code == "episode_over", result.observation.error
        assert client.reset(seed=4).observation.error is None  # the session goes on
        assert client.step(VicoAction(edit={"op": "stop"})).observation.metadata["stopped"]
        assert client.step(VicoAction(edit={"op": "stop"})).observation.error.code == "episode_over"


def test_acting_after_the_end_is_a_typed_error_over_http(serve_env, raising_after_the_end, monkeypatch):
    # OpenEnv's /reset and /step are stateless (a fresh environment per call), so /step never
    # sees an ended episode; its web interface's /web/reset and /web/step play one over HTTP
    monkeypatch.setenv("ENABLE_WEB_INTERFACE", "true")
    served = serve_env("vicogym/Chart-v0", CHART)
    url = served.url
    assert requests.post(f"{url}/web/reset", json={"seed": 3}).json()["observation"]["error"] is None
    stop = requests.post(f"{url}/web/step", json={"action": {"edit": {"op": "stop"}}}).json()
    assert stop["done"] and stop["observation"]["metadata"]["stopped"]
    for _ in range(2):
        after = requests.post(f"{url}/web/step", json={"action": {"edit": {"op": "stop"}}})
        assert after.status_code == 200 and after.json()["done"]
        assert after.json()["observation"]["error"]["code"] == "episode_over", after.json()
    step = requests.post(f"{url}/step", json={"action": {"edit": {"op": "stop"}}})
    assert step.status_code == 200 and step.json()["observation"]["error"]["code"] == "no_episode"
    assert requests.get(f"{url}/health").json()["status"] == "healthy"


def test_an_idle_session_expires_and_frees_its_place(serve_env):
    served = serve_env("vicogym/Chart-v0", CHART, max_sessions=1, session_ttl_s=0.1)
    idle = served.client().sync()
    idle.reset(seed=1)
    wait_until(lambda: open_sessions(served.app) == 0, "the idle session to expire")
    obs = idle.step(VicoAction(edit={"op": "stop"})).observation
    assert obs.error.code == "session_closed"
    with served.client().sync() as fresh:
        assert fresh.reset(seed=1).observation.error is None
    idle.close()


# -- bad requests ------------------------------------------------------------------------------------
def test_malformed_and_oversized_requests_get_4xx_and_the_server_goes_on(serve_env):
    served = serve_env("vicogym/Chart-v0", CHART)
    url = served.url
    assert requests.post(f"{url}/step", data="{not json", headers={"content-type": "application/json"}
                         ).status_code == 422
    assert requests.post(f"{url}/step", json={"action": {"edit": 5}}).status_code == 422
    assert requests.post(f"{url}/step", json={"action": {"edits": "x"}}).status_code == 422
    assert requests.post(f"{url}/reset", json={"seed": "seven"}).status_code == 422
    too_big = requests.post(f"{url}/reset", data=b"x" * (2 * LIMIT), headers={"content-type": "application/json"})
    assert too_big.status_code == 413 and "--max-request-bytes" in too_big.json()["detail"]
    chunked = requests.post(f"{url}/reset", data=(b"x" * 4096 for _ in range(2 * LIMIT // 4096)))
    assert chunked.status_code == 413
    step = requests.post(f"{url}/step", json={"action": {"edit": {"op": "stop"}}})
    assert step.status_code == 200 and step.json()["observation"]["error"]["code"] == "no_episode"
    reset = requests.post(f"{url}/reset", json={"seed": 2})
    assert reset.status_code == 200 and reset.json()["observation"]["image_png_b64"]

    with ws_connect(url.replace("http", "ws") + "/ws") as raw:
        raw.send("{not json")
        assert json.loads(raw.recv())["data"]["code"] == "INVALID_JSON"
        raw.send(json.dumps({"type": "step", "data": {"edit": 5}}))
        assert json.loads(raw.recv())["data"]["code"] == "VALIDATION_ERROR"
        raw.send(json.dumps({"type": "reset", "data": {"seed": 2}}))
        assert json.loads(raw.recv())["type"] == "observation"

    with served.client().sync() as client:
        obs = client.reset(seed=2).observation
        with pytest.raises(RuntimeError, match="REQUEST_TOO_LARGE"):
            client.step(VicoAction(edit="x" * (2 * LIMIT)))
        result = client.step(VicoAction(edit=toggle_gridlines(obs.structure)))  # the session is still there
        assert result.observation.error is None and client.state().step_count == 1
    assert requests.get(f"{url}/health").json()["status"] == "healthy"


def test_make_app_and_the_cli_name_what_to_change():
    from vicogym.errors import UnknownEnvironment

    with pytest.raises(UnknownEnvironment, match="did you mean 'vicogym/Chart-v0'"):
        make_app("vicogym/Chrat-v0")
    with pytest.raises(ValueError, match="did you mean 'k'"):
        make_app("vicogym/Chart-v0", {"kk": 2})
    with pytest.raises(ValueError, match="max_sessions"):
        make_app("vicogym/Chart-v0", CHART, max_sessions=0)
    with pytest.raises(ValueError, match="session_ttl_s"):
        make_app("vicogym/Chart-v0", CHART, session_ttl_s=-1)
    from vicogym.cli import app

    runner = CliRunner()
    for args, message in ((["vicogym/Chrat-v0"], "did you mean 'vicogym/Chart-v0'"),
                          (["vicogym/Chart-v0", "--env-kwargs", "{k: 2"], "--env-kwargs"),
                          (["vicogym/Chart-v0", "--env-kwargs", '{"kk": 2}'], "did you mean 'k'"),
                          (["vicogym/Chart-v0", "--session-ttl", "-1"], "--session-ttl")):
        done = runner.invoke(app, ["serve", *args])
        assert done.exit_code == 2 and message in done.output and "Traceback" not in done.output, done.output
