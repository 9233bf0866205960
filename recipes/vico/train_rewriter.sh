#!/usr/bin/env bash
# One round's rewriter training for `vicogym evolve --train-rewriter`: reward-weighted
# regression with LlamaFactory (rewriter_rwr.yaml: LoRA SFT on the round's retained edit
# transitions, each copied floor(5 w(p)) times, the VICO paper's Table 9), the adapter merged
# (rewriter_merge.yaml), the merged model served by vLLM (serve.sh), and its spec written for
# the next round.
#
#   recipes/vico/train_rewriter.sh DATASET_INFO REWRITER OUT NEXT_REWRITER_FILE
#
#   DATASET_INFO        the round's rewriter/dataset_info.json ({dataset_info})
#   REWRITER            the round's rewriter spec ({rewriter}): its weights are trained
#   OUT                 the new checkpoint's folder ({round_dir}/rewriter-model): OUT/lora the
#                       adapter (a killed run resumes from its epoch checkpoints), OUT/merged the model
#   NEXT_REWRITER_FILE  where the next round's rewriter spec goes ({next_rewriter_file})
#
# Environment (defaults in brackets): LLAMAFACTORY_CLI [llamafactory-cli] (from a Python with
# LlamaFactory installed), TRAIN_GPUS [0,1,2,3], REWRITER_OVERRIDES (more key=value settings,
# e.g. "num_train_epochs=3"), and serve.sh's (ports, serving GPUs).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
if [ $# -ne 4 ]; then sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; fi
dataset_info=$1 spec=$2 out=$3 next=$4
LLAMAFACTORY_CLI=${LLAMAFACTORY_CLI:-llamafactory-cli}
TRAIN_GPUS=${TRAIN_GPUS:-0,1,2,3}
[ -f "$dataset_info" ] || { echo "train_rewriter.sh: no dataset_info.json at $dataset_info (give {dataset_info})" >&2; exit 2; }

model=$(python3 "$here/spec.py" model "$spec")
mkdir -p "$out"
if [ ! -f "$out/merged/config.json" ]; then
    # shellcheck disable=SC2086
    FORCE_TORCHRUN=1 CUDA_VISIBLE_DEVICES=$TRAIN_GPUS "$LLAMAFACTORY_CLI" train "$here/rewriter_rwr.yaml" \
        model_name_or_path="$model" dataset_dir="$(dirname "$dataset_info")" output_dir="$out/lora" \
        ${REWRITER_OVERRIDES:-}
    rm -rf "$out/merged.tmp"
    "$LLAMAFACTORY_CLI" export "$here/rewriter_merge.yaml" model_name_or_path="$model" \
        adapter_name_or_path="$out/lora" export_dir="$out/merged.tmp"
    mv "$out/merged.tmp" "$out/merged"  # the merged model appears whole or not at all
fi

"$here/serve.sh" rewriter "$out/merged"
python3 "$here/spec.py" rewriter "$out/merged" "$("$here/serve.sh" url rewriter)" >"$next.tmp"
mv "$next.tmp" "$next"
