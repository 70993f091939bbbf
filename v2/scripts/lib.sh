#!/usr/bin/env bash
# lib.sh — shared by the mvp host scripts. Run them on the host, never inside a container: they reach `mvp serve`
# inside the Ray head container through `docker exec`, or run it directly with MVP_LOCAL=1.
#
# Settings (environment; defaults in brackets):
#   MVP_CONTAINER     [mvp-ray-head]                          the Ray head container
#   MVP_HOME          [/workspace/mvp/v2]                     mvp's folder inside the container
#   MVP_BIN           [$MVP_HOME/bin/mvp]                     the mvp binary inside the container
#   MVP_CONFIG        [$MVP_HOME/configs/dev.yaml]            dev.yaml inside the container
#   MVP_DB_PATH       [from dev.yaml: v2.sqlite.db_path]      overrides the database path
#   MVP_TOKEN_ENV     [MVP_INTERNAL_TOKEN]                    the variable holding the API token; its value is
#                                                             handed to the container by name, never on a command line
#   MVP_PASS_ENV      [MVP_SECRETS_KEY RAY_AUTH_TOKEN]        other variables mvp serve reads, handed over the same
#                                                             way when set here: add the token_env of each user in
#                                                             v2.auth.users, and v2.secrets.key_env if renamed
#   MVP_LOG           [$MVP_HOME/logs/mvp.log]                the service's log file
#   MVP_PIDFILE       [$MVP_HOME/run/mvp.pid]                 where start records the service's pid
#   MVP_HEALTH_URL    [from dev.yaml: v2.api, + /healthz]     what status and start ask
#   MVP_STOP_TIMEOUT  [30]                                    seconds between SIGTERM and SIGKILL
#   MVP_START_TIMEOUT [30]                                    seconds start waits for /healthz
#   MVP_LOCAL         [0]                                     1: run on this machine, without docker
#   DOCKER            [docker]                                the docker command
# The paths are absolute, inside the container (with MVP_LOCAL=1, a relative one is from where the script runs).
set -euo pipefail

MVP_CONTAINER="${MVP_CONTAINER:-mvp-ray-head}"
MVP_HOME="${MVP_HOME:-/workspace/mvp/v2}"
MVP_BIN="${MVP_BIN:-$MVP_HOME/bin/mvp}"
MVP_CONFIG="${MVP_CONFIG:-$MVP_HOME/configs/dev.yaml}"
MVP_DB_PATH="${MVP_DB_PATH:-}"
MVP_TOKEN_ENV="${MVP_TOKEN_ENV:-MVP_INTERNAL_TOKEN}"
MVP_PASS_ENV="${MVP_PASS_ENV-MVP_SECRETS_KEY RAY_AUTH_TOKEN}"
MVP_LOG="${MVP_LOG:-$MVP_HOME/logs/mvp.log}"
MVP_PIDFILE="${MVP_PIDFILE:-$MVP_HOME/run/mvp.pid}"
MVP_HEALTH_URL="${MVP_HEALTH_URL:-}"
MVP_STOP_TIMEOUT="${MVP_STOP_TIMEOUT:-30}"
MVP_START_TIMEOUT="${MVP_START_TIMEOUT:-30}"
MVP_LOCAL="${MVP_LOCAL:-0}"
DOCKER="${DOCKER:-docker}"

die() {
  echo "mvp: $*" >&2
  exit 1
}

# Paths: start.sh runs mvp serve from the folder above the binary's, so a relative path would name one file where
# it is checked and another where mvp reads it. With MVP_LOCAL=1 a relative path is taken from where the script
# runs; in the container, where docker exec starts in the image's WORKDIR, it must be absolute.
for v in MVP_HOME MVP_BIN MVP_CONFIG MVP_LOG MVP_PIDFILE; do
  [[ "${!v}" == /* ]] && continue
  [[ "$MVP_LOCAL" == 1 ]] || die "$v must be an absolute path inside the container, got '${!v:0:200}'"
  printf -v "$v" '%s' "$PWD/${!v}"
done

# The timeouts go into shell arithmetic, which evaluates text: only whole numbers of seconds pass.
for v in MVP_STOP_TIMEOUT MVP_START_TIMEOUT; do
  [[ "${!v}" =~ ^[0-9]{1,6}$ ]] || die "$v must be a whole number of seconds, got '${!v:0:40}'"
done

# pass_env: `-e NAME` for the API token's variable and each variable of MVP_PASS_ENV set here (by name: docker
# reads the value from this environment, so it is never on a command line).
# The names are checked first: ${!name} evaluates an array subscript's text (a[$(cmd)] runs cmd).
[[ "$MVP_TOKEN_ENV" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "MVP_TOKEN_ENV: '${MVP_TOKEN_ENV:0:40}' is not a variable name"
pass_env=(-e "$MVP_TOKEN_ENV")
for v in $MVP_PASS_ENV; do
  [[ "$v" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "MVP_PASS_ENV: '${v:0:40}' is not a variable name"
  [[ -n "${!v:+set}" ]] && pass_env+=(-e "$v") # :+set: a trace (bash -x) shows "set", never the value
done

# env_hint LINE: when LINE (mvp serve's last word) names a variable, $NAME, that was not handed to the container,
# say which setting hands it over: mvp serve sees only the variables handed over by name.
env_hint() {
  [[ "$1" =~ \$([A-Za-z_][A-Za-z0-9_]*) ]] || return 0
  local name="${BASH_REMATCH[1]}"
  [[ "$MVP_LOCAL" == 1 || " ${pass_env[*]} " == *" $name "* ]] && return 0
  echo "mvp: \$$name does not reach mvp serve: the container gets \$$MVP_TOKEN_ENV (MVP_TOKEN_ENV) and the variables of MVP_PASS_ENV ($MVP_PASS_ENV) set on this host, by name. Export $name here, and set MVP_TOKEN_ENV=$name if dev.yaml's v2.auth.token_env names it, or add it to MVP_PASS_ENV" >&2
}

# usage_header prints the settings above (the lines of this file's header) for --help.
usage_settings() {
  sed -n '/^# Settings/,/^set -euo/p' "$(dirname "${BASH_SOURCE[0]}")/lib.sh" | sed '$d' | sed 's/^# \{0,1\}//'
}

# no_arguments SCRIPT ARGS…: SCRIPT takes no arguments (its settings are variables); refuse any rather than ignore it.
no_arguments() {
  local script="$1"
  shift
  [[ $# -eq 0 ]] || die "unknown argument '${1:0:80}' ($script takes none: its settings are environment variables, e.g. MVP_CONFIG=/path/dev.yaml $script; --help lists them)"
}

# docker_down_exit is the exit code when docker cannot be used here (not installed, or its daemon cannot be
# reached): nothing is known then of the container or of mvp. status.sh sets its own (4), distinct from "not running".
docker_down_exit=1

# need_container fails with a clear message unless the Ray head container exists and runs (skipped in local mode).
need_container() { need_named_container "$MVP_CONTAINER" "MVP_CONTAINER to the Ray head container's name"; }

# need_named_container NAME HINT: the same for container NAME; HINT says what to set when it does not exist.
need_named_container() {
  [[ "$MVP_LOCAL" == 1 ]] && return 0
  local name="$1" hint="$2"
  if ! command -v "$DOCKER" >/dev/null 2>&1; then
    echo "mvp: '$DOCKER' is not installed or not on PATH (set DOCKER to the docker command, or MVP_LOCAL=1 to run without docker)" >&2
    exit "$docker_down_exit"
  fi
  local running
  # --type container: docker inspect finds any object by the name (an image's, say), which has no .State.
  if ! running="$("$DOCKER" inspect --type container -f '{{.State.Running}}' "$name" 2>&1)"; then
    if [[ "$running" == *"No such"* || "$running" == *"no such"* ]]; then
      die "container '$name' does not exist (set $hint)"
    fi
    # Not a missing container: when docker cannot ask its daemon either (it is down, this user may not use its
    # socket, or docker asks another daemon than the one that runs the container), nothing is known of the container.
    if ! "$DOCKER" version --format '{{.Server.Version}}' >/dev/null 2>&1; then
      echo "mvp: cannot reach the docker daemon, so container '$name' cannot be asked after: ${running:0:2000}" >&2
      echo "mvp: start the daemon, or let this user use its socket (the docker group), or point docker at the daemon that runs '$name' (${hint%% *}) with DOCKER_HOST or 'docker context use'; DOCKER is the docker command these scripts run (now '$DOCKER'); MVP_LOCAL=1 runs mvp on this machine without docker" >&2
      exit "$docker_down_exit"
    fi
    die "'$DOCKER inspect $name' failed: ${running:0:2000}"
  fi
  running="${running##*$'\n'}" # the answer is the last line (docker may warn before it)
  [[ "$running" == "true" ]] || die "container '$name' exists but is not running; start it first"
}

# in_target SCRIPT ARGS…: run a bash script in the container (or here with MVP_LOCAL=1). Values travel as
# positional arguments ($1, $2, …), never spliced into the script text. It reads nothing of this script's stdin
# (docker exec -i would read all of it: a caller's `while read` loop would lose its lines).
in_target() {
  local script="$1"
  shift
  if [[ "$MVP_LOCAL" == 1 ]]; then
    bash -c "$script" mvp "$@" </dev/null
  else
    "$DOCKER" exec "${pass_env[@]}" "$MVP_CONTAINER" bash -c "$script" mvp "$@" </dev/null
  fi
}

# in_target_stdin SCRIPT ARGS…: as in_target, with this script's stdin handed to SCRIPT (docker exec -i).
in_target_stdin() {
  local script="$1"
  shift
  if [[ "$MVP_LOCAL" == 1 ]]; then
    bash -c "$script" mvp "$@"
  else
    "$DOCKER" exec -i "${pass_env[@]}" "$MVP_CONTAINER" bash -c "$script" mvp "$@"
  fi
}

# CLOCK defines now_ms (the clock in milliseconds) and deadline_ms SECONDS (now_ms that far ahead), here and for the
# scripts that run in the target: bash's SECONDS counts whole seconds of the clock, so `SECONDS + N` came up to a
# second short of N. Without a clock finer than seconds (bash < 5 and a date without %N), the deadline is one second
# later: the wait is never shorter than asked.
# shellcheck disable=SC2016
CLOCK='now_ms() {
  local t="${EPOCHREALTIME:-}"
  if [[ "$t" =~ ^([0-9]+)[.,]([0-9]{3}) ]]; then echo "${BASH_REMATCH[1]}${BASH_REMATCH[2]}"; return; fi
  t="$(date +%s%N 2>/dev/null)" || t=""
  if [[ "$t" =~ ^[0-9]{13,}$ ]]; then echo "${t:0:${#t}-6}"; return; fi
  echo $(( $(date +%s) * 1000 ))
}
deadline_ms() {
  local t="${EPOCHREALTIME:-}" late=0
  if [[ ! "$t" =~ ^[0-9]+[.,][0-9]{3} && ! "$(date +%N 2>/dev/null)" =~ ^[0-9]{9}$ ]]; then late=1000; fi
  echo $(( $(now_ms) + $1 * 1000 + late ))
}
'
eval "$CLOCK"

# The scripts that run in the target. Each reads only its positional arguments.
# PID_OF PIDFILE BIN prints the pid in PIDFILE if that process is BIN's `serve` as start.sh runs it: a pidfile that
# outlived its service (pids start again from 1 when the container restarts) may name another process. BIN is
# compared as a path, not as text: started with MVP_HOME=/x/ and stopped with MVP_HOME=/x, it was "not running".
# shellcheck disable=SC2016
PID_OF='pidfile="$1" bin="$2"; [[ -f "$pidfile" ]] || exit 1; pid="$(cat "$pidfile")"
[[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || exit 1
argv0="$(tr "\0" "\n" <"/proc/$pid/cmdline" 2>/dev/null | sed -n 1p)" || exit 1
[[ "$(tr "\0" "\n" <"/proc/$pid/cmdline" 2>/dev/null | sed -n 2p)" == serve ]] || exit 1
if [[ "$argv0" != "$bin" ]]; then
  command -v realpath >/dev/null && [[ "$(realpath -m -- "$argv0")" == "$(realpath -m -- "$bin")" ]] || exit 1
fi
echo "$pid"'
# HEALTH URL prints /healthz's answer. Exit 0: it says "ok"; 3: it answers but is not ok (degraded: Ray, the
# database or shared_root; the answer says which); 1: no answer.
# shellcheck disable=SC2016
HEALTH='python3 - "$1" <<PY
import json, sys, urllib.error, urllib.request
def judge(status, body):
    try:
        doc = json.loads(body)
        print(json.dumps(doc, indent=2))  # mvp answers one line of JSON: shown indented, for a person
        ok = status == 200 and doc.get("status") == "ok"
    except ValueError:
        print(body)
        ok = False
    sys.exit(0 if ok else 3)
# No proxy: urllib sends even 127.0.0.1 through $http_proxy unless no_proxy lists it, and the answer of a proxy (a
# 502) read as "something else answers here" (start.sh refused to start) or as a degraded mvp.
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    with opener.open(sys.argv[1], timeout=3) as r:
        judge(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    judge(e.code, e.read().decode())
except Exception as e:
    print(e); sys.exit(1)
PY'

# need_mvp fails with a message naming the setting unless mvp's binary and config are where the settings say, in
# the target.
need_mvp() {
  local where="in container '$MVP_CONTAINER'"
  [[ "$MVP_LOCAL" == 1 ]] && where="on this machine (MVP_LOCAL=1)"
  # shellcheck disable=SC2016
  in_target 'bin="$1" cfg="$2" where="$3"
[[ -x "$bin" ]] || { echo "mvp: no executable mvp binary at $bin $where: set MVP_BIN, or MVP_HOME to the folder holding bin/mvp and configs/dev.yaml" >&2; exit 1; }
[[ -f "$cfg" ]] || { echo "mvp: no config at $cfg $where: set MVP_CONFIG, or MVP_HOME to the folder holding configs/dev.yaml" >&2; exit 1; }' \
    "$MVP_BIN" "$MVP_CONFIG" "$where" || exit 1
}

running_pid() { in_target "$PID_OF" "$MVP_PIDFILE" "$MVP_BIN"; }
health() { in_target "$HEALTH" "$MVP_HEALTH_URL"; }

# read_health_url prints the URL of /healthz: MVP_HEALTH_URL, or from the config's v2.api (host and port) as mvp
# reads it (`mvp serve --print-url`), in the target; when it cannot, it prints why and returns 1.
read_health_url() {
  if [[ -n "$MVP_HEALTH_URL" ]]; then
    echo "$MVP_HEALTH_URL"
    return 0
  fi
  local url
  # shellcheck disable=SC2016
  if ! url="$(in_target 'exec "$1" serve --config "$2" --print-url' "$MVP_BIN" "$MVP_CONFIG" 2>&1)"; then
    echo "cannot read the API's address from $MVP_CONFIG: ${url:0:2000} (or set MVP_HEALTH_URL)"
    return 1
  fi
  echo "${url##*$'\n'}/healthz"
}

# resolve_health_url sets MVP_HEALTH_URL (read_health_url), or fails saying why.
resolve_health_url() {
  local url
  url="$(read_health_url)" || die "$url"
  MVP_HEALTH_URL="$url"
}
