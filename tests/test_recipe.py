"""The paper's GPU recipe (``recipes/vico/``) checked by each trainer's own code, on CPU:
the actor's GRPO config composed by Hydra on verl 0.9.1's ``ppo_trainer`` and passed
through verl's ``validate_config`` and config dataclasses, with the overrides
``train_actor.sh`` really gives (the script runs against stand-ins for verl's entry points
and vLLM that record their arguments); the rewriter's LlamaFactory RWR and merge YAMLs
parsed by LlamaFactory's own argument parser over a round's exported data; the driver's
training commands through ``vicogym evolve``'s own placeholder check. Nothing here runs a
GPU, vLLM or a Ray cluster."""

import json
import os
import re
import shlex
import socket
import stat
import subprocess
import sys

import pytest
from conftest import REPO

from vicogym.runs.generate import GenerateConfig, generate

RECIPE = REPO / "recipes" / "vico"


@pytest.fixture(scope="module")
def round_dir(tmp_path_factory):
    """A round's folder as ``vicogym evolve`` leaves it: the shards, ``verl_files.txt`` and
    the rewriter's LlamaFactory data (simulated actor and search rewriter)."""
    from vicogym.runs.llamafactory import export_llamafactory

    folder = tmp_path_factory.mktemp("recipe") / "round-000"
    generate(GenerateConfig("vicogym/Chart-v0", n=4, out=str(folder), keep="all", episodes_per_shard=4,
                            env_kwargs={"k": 4}), progress=False)
    shards = sorted(str(p.resolve()) for p in folder.glob("part-*.parquet"))
    (folder / "verl_files.txt").write_text("\n".join(shards) + "\n", encoding="utf-8")
    export_llamafactory(folder, folder / "rewriter")
    return folder


# -- the actor: verl -------------------------------------------------------------------------
def compose_actor(*overrides):
    """``actor_grpo.yaml`` as ``python -m verl.trainer.main_ppo --config-path recipes/vico
    --config-name actor_grpo OVERRIDES`` composes it (verl's ppo_trainer from its package)."""
    pytest.importorskip("verl", reason="the recipe checks need verl: pip install --no-deps verl==0.9.1 (README)")
    pytest.importorskip("hydra", reason="the recipe checks need the [trainers] extra (hydra-core)")
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(RECIPE), version_base=None):
        return compose(config_name="actor_grpo", overrides=list(overrides))


def verl_checks(config):
    """What ``verl.trainer.main_ppo.main`` checks before it starts Ray, the config
    dataclasses its workers build, and the reward manager it looks up by name. (verl
    0.9.1's ``RewardManagerConfig`` dataclass cannot be built from any config: its
    ``__post_init__`` calls a parent's that does not exist; the name is checked instead.)"""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config
    from verl.workers.reward_manager import get_reward_manager_cls

    validate_config(config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    get_reward_manager_cls(config.reward.reward_manager.name)
    return {name: omega_conf_to_dataclass(section) for name, section in (
        ("actor", config.actor_rollout_ref.actor), ("rollout", config.actor_rollout_ref.rollout),
        ("algorithm", config.algorithm))}


@pytest.fixture(scope="module")
def fake_tools(tmp_path_factory):
    """Stand-ins for verl's entry points, ``llamafactory-cli`` and ``vllm serve`` (no GPU
    here): the verl one and LlamaFactory's record their arguments and make the files the
    real ones would (the verl one runs anything else, ``-c ...``, with this Python); the
    vLLM one answers HTTP on its ``--port``."""
    folder = tmp_path_factory.mktemp("fake-tools")
    verl = folder / "verl-python"
    verl.write_text(f"""#!{sys.executable}
import json, os, subprocess, sys
from pathlib import Path
args = sys.argv[1:]
if args[:2] == ["-m", "verl.trainer.main_ppo"]:
    with open(os.environ["FAKE_LOG"], "a") as log:
        log.write(json.dumps(args[2:]) + "\\n")
    out = Path(next(a.split("=", 1)[1].strip("'") for a in args if a.startswith("trainer.default_local_dir=")))
    (out / "global_step_3" / "actor").mkdir(parents=True, exist_ok=True)
    (out / "latest_checkpointed_iteration.txt").write_text("3")
elif args[:2] == ["-m", "verl.model_merger"]:
    local, target = args[args.index("--local_dir") + 1], args[args.index("--target_dir") + 1]
    assert Path(local).is_dir(), local
    Path(target).mkdir(parents=True)
    (Path(target) / "config.json").write_text("{{}}")
else:
    sys.exit(subprocess.call([{sys.executable!r}, *args]))
""", encoding="utf-8")
    vllm = folder / "vllm"
    vllm.write_text(f"""#!{sys.executable}
import http.server, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
class Models(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b'{{"data": []}}')
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Models).serve_forever()
""", encoding="utf-8")
    cli = folder / "llamafactory-cli"
    cli.write_text(f"""#!{sys.executable}
import json, os, sys
from pathlib import Path
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
settings = dict(a.split("=", 1) for a in args[2:])
if args[0] == "train":
    Path(settings["output_dir"]).mkdir(parents=True, exist_ok=True)
    (Path(settings["output_dir"]) / "adapter_config.json").write_text("{{}}")
elif args[0] == "export":
    assert (Path(settings["adapter_name_or_path"]) / "adapter_config.json").is_file()
    Path(settings["export_dir"]).mkdir(parents=True)
    (Path(settings["export_dir"]) / "config.json").write_text("{{}}")
""", encoding="utf-8")
    for path in (verl, vllm, cli):
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_actor_config_is_table_10_and_passes_verls_checks():
    config = compose_actor("data.train_files=[/data/a.parquet,/data/b.parquet]",
                           "reward.custom_reward_function.path=/x/verl_reward.py")
    built = verl_checks(config)
    actor, rollout, algorithm = built["actor"], built["rollout"], built["algorithm"]
    # Table 10
    assert config.actor_rollout_ref.model.path == "Qwen/Qwen3-VL-8B-Instruct" and algorithm.adv_estimator == "grpo"
    assert rollout.n == 8 and config.data.train_batch_size == 32 and rollout.name == "vllm"
    assert actor.ppo_mini_batch_size == 8 and actor.ppo_micro_batch_size_per_gpu == 1
    assert rollout.log_prob_micro_batch_size_per_gpu == 1
    assert config.actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu == 1
    assert algorithm.use_kl_in_reward is False and actor.use_kl_loss is False and actor.kl_loss_coef == 0
    assert actor.entropy_coeff == 0
    assert config.reward.reward_manager.name == "naive" and config.reward.custom_reward_function.name == "compute_score"
    # Table 8
    assert actor.optim.lr == 1e-6 and actor.optim.optimizer == "AdamW"
    assert rollout.temperature == 0.7 and rollout.top_p == 1.0
    from verl.trainer.ppo.utils import need_reference_policy

    assert not need_reference_policy(config)  # no KL anywhere: verl builds no reference model
    assert list(config.data.val_files) == list(config.data.train_files)
    assert config.data.image_patch_size == 16  # Qwen3-VL's, which verl's rollout takes from the processor


def test_verls_checks_refuse_what_the_recipe_must_not_be_run_with():
    bare = compose_actor()  # the round's rows and the reward's path come from train_actor.sh
    assert bare.data.train_files is None and bare.reward.custom_reward_function.path is None
    with pytest.raises(AssertionError, match="must be divisible"):  # 32 prompts x 8 rollouts over 3 GPUs
        verl_checks(compose_actor("data.train_files=[/a.parquet]", "reward.custom_reward_function.path=/x.py",
                                  "trainer.n_gpus_per_node=3"))
    for gpus in (1, 2, 4, 8):
        verl_checks(compose_actor("data.train_files=[/a.parquet]", "reward.custom_reward_function.path=/x.py",
                                  f"trainer.n_gpus_per_node={gpus}"))


def run_script(name, *args, env=None, check=True):
    result = subprocess.run(["bash", str(RECIPE / name), *map(str, args)], capture_output=True, text=True,
                            env={**os.environ, **(env or {})}, timeout=300)
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_train_actor_gives_verl_a_config_it_accepts_and_serves_the_checkpoint(round_dir, fake_tools, tmp_path):
    """train_actor.sh against stand-ins for verl and vLLM: the Hydra overrides it passes,
    composed with the recipe, pass verl's checks and load the round's rows in verl's own
    dataset; the merged model is served and named in the next file; a second run (a resumed
    evolve) trains nothing again."""
    port = free_port()
    env = {"VERL_PYTHON": str(fake_tools / "verl-python"), "VLLM": str(fake_tools / "vllm"),
           "FAKE_LOG": str(tmp_path / "verl.log"), "SERVE_DIR": str(tmp_path / "serve"), "ACTOR_PORT": str(port),
           "SERVE_TIMEOUT": "60", "TRAIN_GPUS": "0,1"}
    out, next_file = tmp_path / "round-000" / "actor-model", tmp_path / "next_actor"
    actor = json.dumps({"name": "openai", "model": "Qwen/Qwen3-VL-8B-Instruct", "base_url": "http://h:1/v1"})
    try:
        run_script("train_actor.sh", round_dir / "verl_files.txt", actor, out, next_file, env=env)
        spec = json.loads(next_file.read_text())
        assert spec == {"name": "openai", "model": str(out / "hf"), "base_url": f"http://127.0.0.1:{port}/v1",
                        "temperature": 0.7}
        from vicogym.policies import make_actor

        assert make_actor(spec).model == str(out / "hf")  # evolve's next round takes it
        run_script("train_actor.sh", round_dir / "verl_files.txt", actor, out, next_file, env=env)
    finally:
        run_script("serve.sh", "stop", "actor", env=env)
    calls = [json.loads(line) for line in (tmp_path / "verl.log").read_text().splitlines()]
    assert len(calls) == 1  # trained once
    args = calls[0]
    assert args[:2] == [f"--config-path={RECIPE}", "--config-name=actor_grpo"]
    config = compose_actor(*args[2:])
    verl_checks(config)
    shards = (round_dir / "verl_files.txt").read_text().split()
    assert list(config.data.train_files) == shards and config.trainer.n_gpus_per_node == 2
    assert config.trainer.default_local_dir == str(out / "verl")
    assert config.actor_rollout_ref.model.path == "Qwen/Qwen3-VL-8B-Instruct"
    assert not (out / "verl").exists() and (out / "hf" / "config.json").is_file()

    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.utils.dataset.rl_dataset import RLHFDataset

    score = get_custom_reward_fn(config)  # vicogym's reward, loaded by verl from the path the script gave
    assert score(data_source="vicogym/Chart-v0", solution_str="\\boxed{12}", ground_truth="12", extra_info={}) == 1.0
    from omegaconf import OmegaConf

    data = OmegaConf.create(OmegaConf.to_container(config.data, resolve=True))
    data.filter_overlong_prompts = False  # filtering needs the model's processor, not at hand here
    data.cache_dir = str(tmp_path / "cache")
    dataset = RLHFDataset(data_files=list(config.data.train_files), tokenizer=object(), config=data,
                          processor=object())
    assert len(dataset) >= 4 and dataset[0]["data_source"] == "vicogym/Chart-v0"


def test_the_scripts_say_what_they_take():
    for name, first in (("train_actor.sh", "VERL_FILES"), ("train_rewriter.sh", "DATASET_INFO")):
        result = run_script(name, "only-one", check=False)  # the header's usage, on stderr
        assert result.returncode == 2 and f"{name} {first}" in result.stderr and not result.stdout
    result = run_script("train_actor.sh", "/no/verl_files.txt", "m", "/tmp/o", "/tmp/n", check=False)
    assert result.returncode == 2 and "no round rows at /no/verl_files.txt" in result.stderr
    result = run_script("serve.sh", "critic", "m", check=False)
    assert result.returncode == 2 and "expected the role actor or rewriter" in result.stderr


# -- the specs the scripts pass between rounds -------------------------------------------------
def spec(*args):
    result = subprocess.run([sys.executable, str(RECIPE / "spec.py"), *map(str, args)], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_specs_name_their_weights_and_the_next_round_reads_them(tmp_path):
    assert spec("model", "openai:/runs/vico/round-000/rewriter-model/merged@http://h:8002/v1") == \
        "/runs/vico/round-000/rewriter-model/merged"
    assert spec("model", json.dumps({"name": "openai", "model": "Qwen/Qwen3-VL-8B-Instruct", "base_url": "x"})) == \
        "Qwen/Qwen3-VL-8B-Instruct"
    assert spec("model", "transformers:/m/dir") == "/m/dir" and spec("model", "Qwen/Qwen3-VL-8B-Instruct") == \
        "Qwen/Qwen3-VL-8B-Instruct"
    from vicogym.clients import parse_spec

    assert parse_spec(spec("rewriter", "/m/merged", "http://h:8002/v1")) == {"model": "/m/merged",
                                                                              "base_url": "http://h:8002/v1"}


def test_current_is_what_evolve_runs_its_next_round_with(tmp_path):
    assert spec("current", tmp_path, "actor") == ""
    first = {"name": "openai", "model": "base", "base_url": "http://h:1/v1"}
    (tmp_path / "evolve.json").write_text(json.dumps({"rounds": [{"round": 0, "actor": first,
                                                                  "rewriter": "openai:base@http://h:2/v1"}]}))
    assert json.loads(spec("current", tmp_path, "actor")) == first
    (tmp_path / "round-000").mkdir()
    (tmp_path / "round-000" / "next_rewriter").write_text("openai:/r0/merged@http://h:2/v1\n")
    assert spec("current", tmp_path, "rewriter") == "openai:/r0/merged@http://h:2/v1"
    result = subprocess.run([sys.executable, str(RECIPE / "spec.py"), "current", str(tmp_path), "critic"],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "expected ROLE actor or rewriter" in result.stderr


def test_current_reads_a_real_evolve_run(tmp_path):
    """The driver serves what evolve's next round runs with: checked on the evolve.json and
    next files a real run writes (simulated actor; the command writes the next actor)."""
    from vicogym.runs.evolve import EvolveConfig, evolve

    out = tmp_path / "evo"
    nxt = {"name": "simulated", "skill": 3.0}
    evolve(EvolveConfig(rounds=1, n=2, out=str(out), env_kwargs={"k": 2}, episodes_per_shard=2, strong_actor=None,
                        weak_actor=None, heldout=None,
                        train_actor=f"echo {shlex.quote(json.dumps(nxt))} > {{next_actor_file}}"),
           progress=False, on_round=lambda r, stats: None, on_note=lambda r, note: None)
    assert json.loads(spec("current", out, "actor")) == nxt  # written by round 0's training
    assert spec("current", out, "rewriter") == "search"  # no training: round 0's own


# -- the rewriter: LlamaFactory ----------------------------------------------------------------
@pytest.fixture
def llamafactory(monkeypatch):
    """LlamaFactory's argument parser (``pip install --no-deps llamafactory==0.9.5`` and peft,
    the README's test install). Its import checks its own pins (transformers <= 5.6), which
    this environment's transformers exceeds, and the parser needs none of what they guard:
    the check is off here, as LlamaFactory's ``DISABLE_VERSION_CHECK`` allows.
    """
    monkeypatch.setenv("DISABLE_VERSION_CHECK", "1")
    monkeypatch.setenv("LLAMAFACTORY_VERBOSITY", "WARN")
    pytest.importorskip("peft", reason="LlamaFactory's parser needs peft (the [test] extra)")
    from transformers.utils import import_utils

    # importing LlamaFactory replaces a transformers function (its package check); other tests get it back
    monkeypatch.setattr(import_utils, "_is_package_available", import_utils._is_package_available)
    pytest.importorskip("llamafactory", reason="the recipe checks need LlamaFactory: pip install --no-deps "
                                               "llamafactory==0.9.5 (README)")
    from llamafactory import hparams

    return hparams


def yaml_args(name, **settings):
    """The YAML with ``key=value`` settings on top, as ``llamafactory-cli train FILE k=v`` reads them."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.merge(OmegaConf.load(RECIPE / name), OmegaConf.create(settings)))


def test_the_rewriter_config_is_table_9_and_passes_llamafactorys_parser(llamafactory, round_dir, tmp_path):
    text = (RECIPE / "rewriter_rwr.yaml").read_text()
    assert re.search(r"^bf16: true", text, re.M)  # on the GPUs; this CPU has no bf16, so the parse turns it off
    model, data, training, finetuning, _ = llamafactory.get_train_args(yaml_args(
        "rewriter_rwr.yaml", dataset_dir=str(round_dir / "rewriter"), output_dir=str(tmp_path / "lora"), bf16=False))
    assert model.model_name_or_path == "Qwen/Qwen3-VL-8B-Instruct" and data.template == "qwen3_vl"
    assert finetuning.stage == "sft" and finetuning.finetuning_type == "lora"
    assert (finetuning.lora_rank, finetuning.lora_alpha, finetuning.lora_target) == (64, 128, ["all"])
    assert training.learning_rate == 5e-6 and training.lr_scheduler_type == "cosine" and training.warmup_ratio == 0.1
    assert training.num_train_epochs == 10 and training.per_device_train_batch_size == 2
    assert training.gradient_accumulation_steps == 8
    # the dataset it names is the round's export, whose records are the floor(5 w(p)) copies
    info = json.loads((round_dir / "rewriter" / "dataset_info.json").read_text())
    (name,) = data.dataset
    assert info[name]["formatting"] == "sharegpt" and (round_dir / "rewriter" / info[name]["file_name"]).is_file()
    with pytest.raises(ValueError, match="not used by the HfArgumentParser"):
        llamafactory.get_train_args(yaml_args("rewriter_rwr.yaml", dataset_dir="d", output_dir=str(tmp_path / "o"),
                                              bf16=False, lora_rnak=8))


def test_the_merge_config_passes_llamafactorys_export_parser(llamafactory, tmp_path):
    model, data, finetuning, _ = llamafactory.get_infer_args(yaml_args(
        "rewriter_merge.yaml", model_name_or_path="Qwen/Qwen3-VL-8B-Instruct", adapter_name_or_path=str(tmp_path),
        export_dir=str(tmp_path / "merged")))
    assert model.export_dir == str(tmp_path / "merged") and model.adapter_name_or_path == [str(tmp_path)]
    assert data.template == "qwen3_vl" and finetuning.finetuning_type == "lora"


def test_train_rewriter_gives_llamafactory_settings_its_parser_takes(llamafactory, round_dir, fake_tools, tmp_path):
    """train_rewriter.sh against stand-ins for LlamaFactory and vLLM: the YAML with the
    settings it passes, read as ``llamafactory-cli`` reads them, passes LlamaFactory's
    parsers; the merged model is served and named in the next file; a second run trains
    nothing again."""
    from omegaconf import OmegaConf

    port = free_port()
    env = {"LLAMAFACTORY_CLI": str(fake_tools / "llamafactory-cli"), "VLLM": str(fake_tools / "vllm"),
           "FAKE_LOG": str(tmp_path / "lf.log"), "SERVE_DIR": str(tmp_path / "serve"), "REWRITER_PORT": str(port),
           "SERVE_TIMEOUT": "60"}
    out, next_file = tmp_path / "round-000" / "rewriter-model", tmp_path / "next_rewriter"
    dataset_info = round_dir / "rewriter" / "dataset_info.json"
    try:
        for _ in range(2):
            run_script("train_rewriter.sh", dataset_info, "openai:Qwen/Qwen3-VL-8B-Instruct@http://h:2/v1", out,
                       next_file, env=env)
    finally:
        run_script("serve.sh", "stop", "rewriter", env=env)
    assert next_file.read_text().strip() == f"openai:{out / 'merged'}@http://127.0.0.1:{port}/v1"
    calls = [json.loads(line) for line in (tmp_path / "lf.log").read_text().splitlines()]
    assert [c[:2] for c in calls] == [["train", str(RECIPE / "rewriter_rwr.yaml")],
                                      ["export", str(RECIPE / "rewriter_merge.yaml")]]  # once each

    def read(call, **settings):  # LlamaFactory's read_args: the YAML, the command line's key=value on top
        merged = OmegaConf.merge(OmegaConf.load(call[1]), OmegaConf.from_cli(call[2:]), OmegaConf.create(settings))
        return OmegaConf.to_container(merged)

    model, data, training, _, _ = llamafactory.get_train_args(read(calls[0], bf16=False))
    assert model.model_name_or_path == "Qwen/Qwen3-VL-8B-Instruct" and data.dataset_dir == str(dataset_info.parent)
    assert training.output_dir == str(out / "lora")
    model, _, _, _ = llamafactory.get_infer_args(read(calls[1]))
    assert model.adapter_name_or_path == [str(out / "lora")] and model.export_dir == str(out / "merged.tmp")
    assert (out / "merged" / "config.json").is_file() and not (out / "merged.tmp").exists()


# -- the driver ------------------------------------------------------------------------------
def driver_commands():
    """The --train-actor and --train-rewriter commands of evolve.sh, with ``$here`` filled in."""
    text = (RECIPE / "evolve.sh").read_text()
    found = dict(re.findall(r'--(train-actor|train-rewriter) "([^"]+)"', text))
    assert set(found) == {"train-actor", "train-rewriter"}
    return {k: v.replace("$here", str(RECIPE)) for k, v in found.items()}


def test_the_driver_serves_both_models_and_gives_evolve_flags_it_takes(fake_tools, tmp_path):
    """evolve.sh against stand-ins for vLLM and the vicogym command (which records its
    arguments): both servers answer before evolve starts, and the arguments parse as
    ``vicogym evolve``'s own (flags, the first round's actor and rewriter)."""
    import typer.main

    from vicogym.cli import app
    from vicogym.policies import make_actor

    fake = tmp_path / "vicogym"
    fake.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                    "open(os.environ['FAKE_LOG'], 'w').write(json.dumps(sys.argv[1:]))\n", encoding="utf-8")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    env = {"VICOGYM": str(fake), "VLLM": str(fake_tools / "vllm"), "FAKE_LOG": str(tmp_path / "args.json"),
           "SERVE_DIR": str(tmp_path / "serve"), "ACTOR_PORT": str(free_port()), "REWRITER_PORT": str(free_port()),
           "SERVE_TIMEOUT": "60", "OUT": str(tmp_path / "vico"), "ROUNDS": "2", "N": "16"}
    try:
        result = run_script("evolve.sh", "--seed", "3", env=env)
    finally:
        for role in ("actor", "rewriter"):
            run_script("serve.sh", "stop", role, env=env)
    assert result.stdout.count("serve.sh: the") == 2  # both served before evolve ran
    args = json.loads((tmp_path / "args.json").read_text())
    assert args[:2] == ["evolve", "vicogym/Chart-v0"] and args[-2:] == ["--seed", "3"]
    context = typer.main.get_command(app).commands["evolve"].make_context("evolve", args[1:])
    params = context.params
    assert (params["rounds"], params["n"], params["out"]) == (2, 16, str(tmp_path / "vico"))
    actor = make_actor(json.loads(params["actor"]))
    assert actor.model == "Qwen/Qwen3-VL-8B-Instruct" and actor.temperature == 0.7
    assert params["rewriter"] == f"openai:Qwen/Qwen3-VL-8B-Instruct@http://127.0.0.1:{env['REWRITER_PORT']}/v1"
    assert params["train_actor"] == driver_commands()["train-actor"]


def test_every_placeholder_of_the_driver_resolves_in_evolves_own_check():
    from vicogym.runs.evolve import PLACEHOLDERS, EvolveConfig

    commands = driver_commands()
    EvolveConfig(n=2, train_actor=commands["train-actor"], train_rewriter=commands["train-rewriter"])
    for command, script, arguments in ((commands["train-actor"], "train_actor.sh", 4),
                                       (commands["train-rewriter"], "train_rewriter.sh", 4)):
        words = shlex.split(command)
        assert words[:2] == ["bash", str(RECIPE / script)] and len(words) == 2 + arguments
        assert set(re.findall(r"\{(\w+)\}", command)) <= set(PLACEHOLDERS)
    with pytest.raises(ValueError, match="known placeholders"):  # the check is live
        EvolveConfig(n=2, train_actor=commands["train-actor"].replace("{actor}", "{actr}"))
