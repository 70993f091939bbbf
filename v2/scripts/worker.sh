#!/usr/bin/env bash
# worker.sh — start a Ray worker node inside this host's worker container, with the GPUs the node really has:
# `mvp doctor --num-gpus` reads them through NVML (falling back to RAY_GPUS_PER_WORKER where NVIDIA's library is
# missing), then `ray start` joins the head with that --num-gpus and the worker_node resource drivers ask for.
# Run it on the worker's host; `worker.sh check` runs the whole `mvp doctor` there instead.
#
# Settings beyond lib.sh's (environment; defaults in brackets):
#   MVP_WORKER_CONTAINER [mvp-ray-worker]               the Ray worker container on this host
#   RAY_HEAD_ADDRESS     (required for start)           the head's GCS, host:port (e.g. 10.0.0.1:6379)
#   RAY_GPUS_PER_WORKER  []                             GPU count when NVIDIA's library is missing (handed over by
#                                                       name); it does not cover an NVML that fails
#   MVP_WORKER_GPUS      []                             this node's GPU count, passed as mvp doctor --gpus: taken
#                                                       where NVML is missing or fails (a GPU fallen off the bus:
#                                                       start with those that work), not over a working NVML
#   RAY_WORKER_RESOURCES [{"worker_node": 100}]         the worker's custom resources
#   RAY_BIN              [ray]                          the ray command inside the container
#   MVP_WORKER_PASS_ENV  [RAY_AUTH_TOKEN]               variables handed to `ray start` and `mvp doctor` there, by
#                                                       name, each when set: Ray's token on a cluster with
#                                                       RAY_AUTH_MODE=token. Not MVP_PASS_ENV, which holds mvp's
#                                                       own (users' tokens, the secrets key): every job run on the
#                                                       worker inherits the raylet's environment. With MVP_LOCAL=1
#                                                       ray start gets this shell's environment but MVP_TOKEN_ENV's,
#                                                       MVP_PASS_ENV's, those MVP_CONFIG names for mvp's secrets
#                                                       (mvp serve --print-secret-envs: the tokens' and the secrets
#                                                       key's), and those named like a secret (*TOKEN*,
#                                                       *SECRET*, *PASSWORD*, *PASSWD*, *CREDENTIAL*, *_KEY,
#                                                       *_KEY_*, any case; not *_PATH, *_FILE, *_DIR, RAY_TLS_*,
#                                                       TOKENIZERS_*, HF_HUB_DISABLE_IMPLICIT_TOKEN,
#                                                       GOOGLE_APPLICATION_CREDENTIALS), unless this list names them
#                                                       (by exact name, as the others); list here
#                                                       any other your nodes need (and RAY_AUTH_TOKEN with them)
# Arguments after `start --` go to `ray start` as they are (e.g. --node-ip-address=…).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"

MVP_WORKER_CONTAINER="${MVP_WORKER_CONTAINER:-mvp-ray-worker}"
RAY_HEAD_ADDRESS="${RAY_HEAD_ADDRESS:-}"
RAY_WORKER_RESOURCES="${RAY_WORKER_RESOURCES:-{\"worker_node\": 100\}}"
RAY_BIN="${RAY_BIN:-ray}"
MVP_WORKER_GPUS="${MVP_WORKER_GPUS:-}"
MVP_WORKER_PASS_ENV="${MVP_WORKER_PASS_ENV-RAY_AUTH_TOKEN}"
[[ -z "$MVP_WORKER_GPUS" || "$MVP_WORKER_GPUS" =~ ^[0-9]+$ ]] ||
  die "MVP_WORKER_GPUS: '${MVP_WORKER_GPUS:0:40}' is not a GPU count (a whole number)"
for v in $MVP_WORKER_PASS_ENV; do
  [[ "$v" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "MVP_WORKER_PASS_ENV: '${v:0:40}' is not a variable name"
done

usage() {
  echo "usage: worker.sh start [-- ray start arguments…] | worker.sh check"
  sed -n '/^# Settings beyond/,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
  usage_settings
}

# in_worker SCRIPT ARGS…: run a bash script in the worker container (or here with MVP_LOCAL=1). Values travel as
# positional arguments; RAY_GPUS_PER_WORKER and the variables of MVP_WORKER_PASS_ENV (Ray's token: `ray start` and
# `mvp doctor` need it on a cluster with RAY_AUTH_MODE=token) travel by name, each only when it is set. mvp's
# tokens and secrets key (MVP_TOKEN_ENV's, MVP_PASS_ENV) do not, nor here with MVP_LOCAL=1 (below): the raylet's
# environment is every job's on that worker, and they were handed over, for any user's job to read.
in_worker() {
  local script="$1"
  shift
  if [[ "$MVP_LOCAL" == 1 ]]; then
    # Here ray start inherits this shell's environment, which holds mvp's own secrets (the API token, users'
    # tokens, the secrets key: mvp serve run without docker reads them here, listed in MVP_PASS_ENV or not), and
    # the raylet's environment is every job's on the node. Taken out of it, in a subshell, by name (so that a trace
    # shows no value): the variables of MVP_TOKEN_ENV and MVP_PASS_ENV, and every one whose name says it holds a
    # secret, unless MVP_WORKER_PASS_ENV names it. What a node needs (PATH, CUDA_*, NCCL_*, GLOO_*, RAY_*, proxies,
    # CA bundles…) stays.
    # The lists are read first: MVP_TOKEN_ENV itself is named like a secret, and unset under set -u it would end
    # the loop.
    local pass=" $MVP_WORKER_PASS_ENV " mine=" $MVP_TOKEN_ENV $MVP_PASS_ENV "
    # And the variables dev.yaml names for mvp's secrets (a user's token_env need not look like a secret, nor be in
    # MVP_PASS_ENV when mvp serve runs here), when mvp and its config are on this machine.
    if [[ -x "$MVP_BIN" && -f "$MVP_CONFIG" ]]; then
      local named
      if named="$("$MVP_BIN" serve --config "$MVP_CONFIG" --print-secret-envs 2>/dev/null)"; then
        mine+="${named//$'\n'/ } "
      else
        echo "mvp: could not ask $MVP_BIN which variables $MVP_CONFIG names for mvp's secrets (an invalid config, or a binary older than --print-secret-envs): ray start keeps those not named like a secret nor in MVP_PASS_ENV" >&2
      fi
    fi
    (
      for v in $(compgen -e); do
        # The lists by exact name (variables' names are case-sensitive: https_proxy is not HTTPS_PROXY) ...
        if [[ "$pass" == *" $v "* ]]; then continue; fi
        if [[ "$mine" == *" $v "* ]]; then
          unset "$v" 2>/dev/null || true
          continue
        fi
        shopt -s nocasematch # ... the patterns in any case: hf_token is a secret as HF_TOKEN is
        case "$v" in
          # Named like a secret but holding a path or a setting that Ray, NCCL or a job needs.
          RAY_TLS_* | *_PATH | *_FILE | *_DIR | TOKENIZERS_* | HF_HUB_DISABLE_IMPLICIT_TOKEN | GOOGLE_APPLICATION_CREDENTIALS) ;;
          *TOKEN* | *SECRET* | *PASSWORD* | *PASSWD* | *CREDENTIAL* | *_KEY | *_KEY_*) unset "$v" 2>/dev/null || true ;;
        esac
        shopt -u nocasematch
      done
      exec bash -c "$script" mvp "$@" </dev/null
    )
  else
    local envs=()
    [[ -n "${RAY_GPUS_PER_WORKER:-}" ]] && envs+=(-e RAY_GPUS_PER_WORKER)
    local v
    for v in $MVP_WORKER_PASS_ENV; do # names checked above
      if [[ -n "${!v:+set}" ]]; then envs+=(-e "$v"); fi
    done
    # ${envs[@]+…}: an empty array under set -u is an error before bash 4.4 (CentOS 7's bash is 4.2). No -i: the
    # script reads nothing from here, and docker's client would read this script's stdin whole.
    "$DOCKER" exec ${envs[@]+"${envs[@]}"} "$MVP_WORKER_CONTAINER" bash -c "$script" mvp "$@" </dev/null
  fi
}

# shellcheck disable=SC2016
START_WORKER='bin="$1" ray="$2" head="$3" resources="$4" given="$5"; shift 5
[[ -x "$bin" ]] || { echo "mvp: no executable mvp binary at $bin in the worker container: set MVP_BIN, or MVP_HOME to the folder holding bin/mvp" >&2; exit 4; }
gpus="$("$bin" doctor --num-gpus ${given:+--gpus "$given"})" || exit 5
[[ "$gpus" =~ ^[0-9]+$ ]] || { echo "mvp doctor --num-gpus answered \"$gpus\", not a count" >&2; exit 5; }
echo "mvp: starting a Ray worker with --num-gpus=$gpus" >&2
exec "$ray" start --address="$head" --num-gpus="$gpus" --resources="$resources" "$@"'
# shellcheck disable=SC2016
CHECK='bin="$1" cfg="$2" given="$3"; exec "$bin" doctor --config "$cfg" ${given:+--gpus "$given"}'

case "${1:-}" in
  -h | --help | "")
    usage
    [[ -n "${1:-}" ]] && exit 0
    exit 2
    ;;
  start)
    shift
    [[ "${1:-}" == "--" ]] && shift
    [[ -n "$RAY_HEAD_ADDRESS" ]] || die "RAY_HEAD_ADDRESS is empty: set it to the head's GCS address, host:port (e.g. 10.0.0.1:6379)"
    need_named_container "$MVP_WORKER_CONTAINER" "MVP_WORKER_CONTAINER to the Ray worker container's name"
    in_worker "$START_WORKER" "$MVP_BIN" "$RAY_BIN" "$RAY_HEAD_ADDRESS" "$RAY_WORKER_RESOURCES" "$MVP_WORKER_GPUS" "$@" ||
      die "the worker did not start (see above)"
    ;;
  check)
    need_named_container "$MVP_WORKER_CONTAINER" "MVP_WORKER_CONTAINER to the Ray worker container's name"
    in_worker "$CHECK" "$MVP_BIN" "$MVP_CONFIG" "$MVP_WORKER_GPUS"
    ;;
  *)
    usage >&2
    exit 2
    ;;
esac
