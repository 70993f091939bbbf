# shellcheck shell=bash
# procgroup.sh — sourced by ray-up.sh and ray-down.sh: what is alive in a recorded process group.
#
# group_live PGID [MARK]: succeeds when process group PGID has a live process (a zombie is gone: a PID 1 that does
# not reap leaves them, and `kill -0 -PGID` still counts them) and, with MARK, one whose environment has
# MVP_RAY_NODE=MARK (ray-up.sh marks each node's processes so; a group id is handed out again once its group is
# gone, so only the mark says a recorded group is still the node it was).
group_live() {
  local p
  for p in /proc/[0-9]*; do
    proc_stat "$p" || continue
    [[ "$PROC_PGID" == "$1" && "$PROC_STATE" != Z ]] || continue
    [[ -z "${2:-}" ]] && return 0
    grep -qzxF -- "MVP_RAY_NODE=$2" "$p/environ" 2>/dev/null && return 0
  done
  return 1
}

# proc_stat /proc/PID: sets PROC_STATE (Z for a zombie) and PROC_PGID from its stat; fails when it is gone.
proc_stat() {
  local stat rest fields
  read -r stat 2>/dev/null <"$1/stat" || return 1
  rest="${stat##*) }" # after the command name, which may hold spaces and parentheses
  read -r -a fields <<<"$rest"
  PROC_STATE="${fields[0]:-}" PROC_PGID="${fields[2]:-}"
}

# node_live FILE: the group recorded in FILE (<dir>/<name>.pgid) is alive and is that node.
node_live() {
  local pg
  [[ -f "$1" ]] || return 1
  pg="$(cat "$1" 2>/dev/null)"
  [[ "$pg" =~ ^[0-9]+$ ]] || return 1
  group_live "$pg" "${1%.pgid}"
}

# node_has FILE COMM: the group recorded in FILE has a live process whose command name is COMM (a worker node is
# alive while its raylet is: killed alone, it may leave other processes of the node running in the group, such as
# a log monitor on a node started without --include-log-monitor=False).
node_has() {
  local pg p comm
  pg="$(cat "$1" 2>/dev/null)"
  [[ "$pg" =~ ^[0-9]+$ ]] || return 1
  for p in /proc/[0-9]*; do
    proc_stat "$p" || continue
    [[ "$PROC_PGID" == "$pg" && "$PROC_STATE" != Z ]] || continue
    read -r comm 2>/dev/null <"$p/comm" || continue
    [[ "$comm" == "$2" ]] && return 0
  done
  return 1
}

# marked_pids MARK…: the live processes (zombies left out) whose environment has MVP_RAY_NODE=<one of the MARKs>,
# one PID a line. Besides a node's own group this finds its jobs' drivers: Ray starts each in a session of its
# own, with the raylet's environment.
marked_pids() {
  local p m
  for p in /proc/[0-9]*; do
    proc_stat "$p" || continue
    [[ "$PROC_STATE" != Z ]] || continue
    for m in "$@"; do
      if grep -qzxF -- "MVP_RAY_NODE=$m" "$p/environ" 2>/dev/null; then
        echo "${p#/proc/}"
        break
      fi
    done
  done
}
