#!/usr/bin/env bash
# The VICO loop on GPUs: `vicogym evolve` rounds whose actor and rewriter are vLLM-served models,
# the actor trained by verl's GRPO (train_actor.sh) and the rewriter by LlamaFactory's LoRA RWR
# (train_rewriter.sh) after each round, each new checkpoint served (serve.sh) for the next.
#
#   recipes/vico/evolve.sh [more vicogym evolve options]
#
# Environment (defaults in brackets): OUT [runs/vico], ENV_ID [vicogym/Chart-v0], ROUNDS [5],
# N [2200] samples a round (the paper's Table 17), K [8] answers per pass rate (Table 8),
# BASE_MODEL [Qwen/Qwen3-VL-8B-Instruct] (the first round's actor and rewriter), VICOGYM
# [vicogym], EPISODES_IN_FLIGHT [16], and the training and serving scripts' (TRAIN_GPUS,
# ACTOR_GPUS, REWRITER_GPUS, ports, VERL_PYTHON, LLAMAFACTORY_CLI ...). Run the same command
# again after a kill: evolve resumes where it stopped and this script serves the models that
# round uses.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-runs/vico}
ENV_ID=${ENV_ID:-vicogym/Chart-v0}
ROUNDS=${ROUNDS:-5}
N=${N:-2200}
K=${K:-8}
BASE_MODEL=${BASE_MODEL:-Qwen/Qwen3-VL-8B-Instruct}
VICOGYM=${VICOGYM:-vicogym}
EPISODES_IN_FLIGHT=${EPISODES_IN_FLIGHT:-16}

# the first round's models: evolve keeps them in OUT/evolve.json, so they stay the same on a resume
first_actor=$(python3 "$here/spec.py" actor "$BASE_MODEL" "$("$here/serve.sh" url actor)")
first_rewriter=$(python3 "$here/spec.py" rewriter "$BASE_MODEL" "$("$here/serve.sh" url rewriter)")
# the models the next round runs with (the first round's, or the last trained checkpoints)
actor=$(python3 "$here/spec.py" current "$OUT" actor)
rewriter=$(python3 "$here/spec.py" current "$OUT" rewriter)
"$here/serve.sh" actor "$(python3 "$here/spec.py" model "${actor:-$first_actor}")"
"$here/serve.sh" rewriter "$(python3 "$here/spec.py" model "${rewriter:-$first_rewriter}")"

"$VICOGYM" evolve "$ENV_ID" --rounds "$ROUNDS" --n "$N" --out "$OUT" --set "k=$K" \
    --actor "$first_actor" --rewriter "$first_rewriter" --episodes-in-flight "$EPISODES_IN_FLIGHT" \
    --train-actor "bash '$here/train_actor.sh' {verl_files} {actor} {round_dir}/actor-model {next_actor_file}" \
    --train-rewriter "bash '$here/train_rewriter.sh' {dataset_info} {rewriter} {round_dir}/rewriter-model {next_rewriter_file}" \
    "$@"
