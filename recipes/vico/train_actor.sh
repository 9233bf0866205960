#!/usr/bin/env bash
# One round's actor training for `vicogym evolve --train-actor`: GRPO with verl on the round's
# rows (actor_grpo.yaml: the VICO paper's Table 10), the FSDP checkpoint merged into a Hugging
# Face folder, that folder served by vLLM (serve.sh), and its spec written for the next round.
#
#   recipes/vico/train_actor.sh VERL_FILES ACTOR OUT NEXT_ACTOR_FILE
#
#   VERL_FILES       the round's verl_files.txt ({verl_files})
#   ACTOR            the round's actor spec ({actor}): its weights are trained
#   OUT              the new checkpoint's folder ({round_dir}/actor-model): OUT/verl holds verl's
#                    checkpoints (a killed run resumes from them), OUT/hf the merged model
#   NEXT_ACTOR_FILE  where the next round's actor spec goes ({next_actor_file})
#
# Environment (defaults in brackets): VERL_PYTHON [python3] (a Python with verl, vLLM and
# vicogym installed), TRAIN_GPUS [0,1,2,3], ACTOR_OVERRIDES (more Hydra overrides, e.g.
# "trainer.total_epochs=2"), KEEP_VERL_CHECKPOINTS [0] (1 keeps OUT/verl after merging), and
# serve.sh's (ports, serving GPUs).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
if [ $# -ne 4 ]; then sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; fi
verl_files=$1 spec=$2 out=$3 next=$4
VERL_PYTHON=${VERL_PYTHON:-python3}
TRAIN_GPUS=${TRAIN_GPUS:-0,1,2,3}
[ -s "$verl_files" ] || { echo "train_actor.sh: no round rows at $verl_files (give {verl_files})" >&2; exit 2; }

model=$(python3 "$here/spec.py" model "$spec")
mkdir -p "$out"
if [ ! -f "$out/hf/config.json" ]; then
    # Hydra overrides: each path a quoted string, so that no character in it reads as Hydra's grammar
    files=$(grep . "$verl_files" | sed "s/.*/'&'/" | paste -sd, -)
    reward=$("$VERL_PYTHON" -c "import vicogym.verl_reward as m; print(m.__file__)")
    gpus=$(echo "$TRAIN_GPUS" | tr ',' '\n' | grep -c .)
    # shellcheck disable=SC2086
    CUDA_VISIBLE_DEVICES=$TRAIN_GPUS "$VERL_PYTHON" -m verl.trainer.main_ppo \
        --config-path="$here" --config-name=actor_grpo \
        data.train_files="[$files]" actor_rollout_ref.model.path="'$model'" \
        reward.custom_reward_function.path="'$reward'" trainer.n_gpus_per_node="$gpus" \
        trainer.default_local_dir="'$out/verl'" ${ACTOR_OVERRIDES:-}
    step=$(cat "$out/verl/latest_checkpointed_iteration.txt")
    rm -rf "$out/hf.tmp"
    "$VERL_PYTHON" -m verl.model_merger merge --backend fsdp \
        --local_dir "$out/verl/global_step_$step/actor" --target_dir "$out/hf.tmp"
    mv "$out/hf.tmp" "$out/hf"  # the merged model appears whole or not at all
    [ "${KEEP_VERL_CHECKPOINTS:-0}" = 1 ] || rm -rf "$out/verl"
fi

"$here/serve.sh" actor "$out/hf"
python3 "$here/spec.py" actor "$out/hf" "$("$here/serve.sh" url actor)" >"$next.tmp"
mv "$next.tmp" "$next"
