#!/usr/bin/env bash
# Serves a checkpoint for the next co-evolution round behind vLLM's OpenAI-compatible server,
# replacing the one this script started before for the same role.
#
#   recipes/vico/serve.sh actor MODEL      (re)start the actor's server on MODEL (a folder or hub id)
#   recipes/vico/serve.sh rewriter MODEL   the same for the rewriter
#   recipes/vico/serve.sh stop ROLE        stop ROLE's server
#   recipes/vico/serve.sh url ROLE         print ROLE's base URL
#
# The served model name is MODEL itself, so the spec openai:MODEL@URL names the weights too.
# Environment (defaults in brackets): VLLM [vllm], SERVE_HOST [127.0.0.1], ACTOR_PORT [8001],
# REWRITER_PORT [8002], ACTOR_GPUS [4,5], REWRITER_GPUS [6,7] (one replica a GPU: vLLM's data
# parallelism), SERVE_DIR [$HOME/.cache/vico-serve] (pid files and logs), SERVE_TIMEOUT [900]
# seconds to wait for the server, VLLM_ARGS (more `vllm serve` flags).
set -euo pipefail

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -eq 2 ] || usage
VLLM=${VLLM:-vllm}
SERVE_HOST=${SERVE_HOST:-127.0.0.1}
SERVE_DIR=${SERVE_DIR:-$HOME/.cache/vico-serve}
SERVE_TIMEOUT=${SERVE_TIMEOUT:-900}

port_of() {
    case $1 in
        actor) echo "${ACTOR_PORT:-8001}" ;;
        rewriter) echo "${REWRITER_PORT:-8002}" ;;
        *) echo "serve.sh: expected the role actor or rewriter, got '$1'" >&2; exit 2 ;;
    esac
}

gpus_of() {
    case $1 in
        actor) echo "${ACTOR_GPUS:-4,5}" ;;
        rewriter) echo "${REWRITER_GPUS:-6,7}" ;;
    esac
}

stop() {
    local pidfile="$SERVE_DIR/$1.pid"
    if [ -f "$pidfile" ]; then
        local pid
        pid=$(cat "$pidfile")
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid"
            for _ in $(seq 120); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
            kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
        fi
        rm -f "$pidfile"
    fi
}

case $1 in
    stop) port_of "$2" >/dev/null; stop "$2"; exit 0 ;;
    url) echo "http://$SERVE_HOST:$(port_of "$2")/v1"; exit 0 ;;
esac

role=$1 model=$2
port=$(port_of "$role")
gpus=$(gpus_of "$role")
replicas=$(echo "$gpus" | tr ',' '\n' | grep -c .)
mkdir -p "$SERVE_DIR"
stop "$role"
log="$SERVE_DIR/$role.log"
# shellcheck disable=SC2086
CUDA_VISIBLE_DEVICES=$gpus nohup "$VLLM" serve "$model" --served-model-name "$model" \
    --host "$SERVE_HOST" --port "$port" --data-parallel-size "$replicas" --trust-remote-code ${VLLM_ARGS:-} \
    >"$log" 2>&1 &
echo $! >"$SERVE_DIR/$role.pid"
for _ in $(seq "$SERVE_TIMEOUT"); do
    if curl -sf "http://$SERVE_HOST:$port/v1/models" >/dev/null; then
        echo "serve.sh: the $role is served at http://$SERVE_HOST:$port/v1 ($model)"
        exit 0
    fi
    if ! kill -0 "$(cat "$SERVE_DIR/$role.pid")" 2>/dev/null; then
        tail -n 20 "$log" >&2
        echo "serve.sh: vLLM exited before serving the $role ($model); its log is $log" >&2
        exit 1
    fi
    sleep 1
done
echo "serve.sh: the $role's server did not answer within $SERVE_TIMEOUT s; its log is $log" >&2
exit 1
