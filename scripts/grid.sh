#!/usr/bin/env bash
# A study's slice, detached: its own log and pid file, stopped cleanly (make grid-start/status/stop).
#
#   scripts/grid.sh start fixed 110 [extra driver arguments]   # STUDY, BUDGET_MIN
#   scripts/grid.sh start placement 130 --jobs 2 --then tuned --tasks enwik8 --jobs 2
#   scripts/grid.sh start confirm 110 --commit SHA       # the confirmatory study (its declaration)
#   scripts/grid.sh status fixed
#   scripts/grid.sh stop fixed
#
# start: the study driver (python -m normlab.campaigns.xu2019 --study STUDY) in a session of its own, all three
# streams redirected, so it outlives the shell that started it and holds none of its pipes; it
# trains from the study's pinned worktree (.cache/code/<commit>), so main can move on meanwhile.
# --then chains studies under the one budget: the next starts only once the one before completed
# (its tables written), with the minutes left, so a study that completes mid-slice leaves no core
# idle; one stopped by the budget, a signal or a failure ends the chain.
# stop: SIGTERM to the slice, which stops the running driver (each job writes a checkpoint) and
# starts no later study; waits up to GRID_STOP_WAIT seconds (default 300) for that.
# Each study's log and pid file: runs/grid/<study>.* (the pid file moves along the chain).
set -uo pipefail
cmd=${1:?usage: scripts/grid.sh start|status|stop STUDY [BUDGET_MIN] [driver args] [--then STUDY [args]]}
study=${2:?a study: fixed, tuned, prenorm, placement, confirm-lr or confirm}
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(git rev-parse --show-toplevel)"
py=${PYTHON:-.venv/bin/python}
dir=${GRID_DIR:-runs/grid}
known() { case $1 in fixed | prenorm | placement | tuned | confirm-lr | confirm) return 0 ;; esac; echo "grid.sh: unknown study '$1' (fixed, tuned, prenorm, placement, confirm-lr or confirm)" >&2; return 1; }
# confirm: the confirmatory study, trained from its declaration (a fixed kind's grid)
driver() {
  if [[ $1 == confirm ]]; then echo -m normlab.campaigns.xu2019 --declaration normlab/campaigns/xu2019/confirm.yaml
  else echo -m normlab.campaigns.xu2019 --study "$1"; fi
}
alive() { [[ -f $dir/$1.pid ]] && kill -0 "$(cat "$dir/$1.pid")" 2>/dev/null; }
[[ $cmd == _chain ]] || known "$study" || exit 2
pidf=$dir/$study.pid log=$dir/$study.log

# The detached slice: each study of the chain in turn, the pid file moved to the running one.
chain() {
  local deadline=$1 child="" stopping="" held="" s rc left from
  shift
  trap 'stopping=1; [[ -n $child ]] && kill -TERM "$child" 2>/dev/null' TERM INT HUP
  while (($#)); do
    s=$1 && shift
    local args=()
    while (($#)) && [[ $1 != --then ]]; do args+=("$1") && shift; done
    (($#)) && shift
    left=$(awk -v d="$deadline" -v n="$(date +%s)" 'BEGIN { printf "%.1f", (d - n) / 60 }')
    if awk -v l="$left" 'BEGIN { exit !(l < 1) }'; then
      echo "# $(date -u +%FT%TZ) grid.sh: no budget left to start $s" >> "$dir/$s.log"
      break
    fi
    echo $$ > "$dir/$s.pid" && rm -f "${held:-}" && held=$dir/$s.pid
    echo "# $(date -u +%FT%TZ) $(driver "$s") --budget-min $left ${args[*]}" >> "$dir/$s.log"
    from=$(($(wc -c < "$dir/$s.log") + 1))
    "$py" $(driver "$s") --budget-min "$left" "${args[@]}" >> "$dir/$s.log" 2>&1 < /dev/null &
    child=$!
    # a trapped signal ends `wait` early: wait again until the driver has stopped its jobs
    while wait "$child"; rc=$?; kill -0 "$child" 2>/dev/null; do :; done
    child=""
    [[ -n $stopping ]] && break
    if ((rc != 0)) || tail -c +"$from" "$dir/$s.log" | grep -q " jobs left"; then
      (($#)) && echo "# $(date -u +%FT%TZ) grid.sh: $s did not complete (exit $rc): the studies after it wait" >> "$dir/$s.log"
      break
    fi
  done
  rm -f "${held:-}"
}

case $cmd in
  _chain) shift 2 && chain "$@" ;;
  start)
    budget=${3:?start needs BUDGET_MIN (minutes after which no job starts)}
    shift 3
    studies=("$study") segs=("") expect=""
    for a in "$@"; do
      if [[ -n $expect ]]; then known "$a" || exit 2; studies+=("$a") segs+=("") expect="" && continue; fi
      [[ $a == --then ]] && expect=1 && continue
      segs[-1]+=" $a "
    done
    [[ -n $expect ]] && { echo "grid.sh: --then needs a study (fixed, tuned, prenorm or placement)" >&2; exit 2; }
    for ((i = 1; i < ${#studies[@]}; i++)); do
      # the study before it may complete and leave staging: then nothing staged would pin this one
      if [[ ${segs[i]} != *" --commit "* ]]; then
        echo "grid.sh: --then ${studies[i]}: a chained study names its commit (--commit <sha>: the one it is staged at, or a new study's)" >&2
        exit 2
      fi
    done
    if [[ $(printf '%s\n' "${studies[@]}" | sort | uniq -d) ]]; then echo "grid.sh: a study appears twice in the chain: ${studies[*]}" >&2; exit 2; fi
    # The first slice of a study names its commit: otherwise the driver continues the grid that the
    # results folder reports, at that grid's (older) code.
    if [[ ${segs[0]} != *" --commit "* ]] && ! compgen -G "results/staging/*/runs" > /dev/null; then
      echo "grid.sh: nothing is staged yet: the first slice names the commit to train at (make grid-start ... COMMIT=<sha>, or --commit <sha>; docs/studies.md)" >&2
      exit 2
    fi
    mkdir -p "$dir"
    for s in fixed prenorm tuned placement confirm-lr confirm; do
      if alive "$s"; then
        if [[ $s == "$study" ]]; then echo "grid.sh: $study already runs (pid $(cat "$dir/$s.pid")); make grid-stop STUDY=$study first" >&2
        else echo "grid.sh: study $s runs (pid $(cat "$dir/$s.pid")): one study at a time shares the cores" >&2; fi
        exit 1
      fi
    done
    deadline=$(awk -v b="$budget" -v n="$(date +%s)" 'BEGIN { printf "%d", n + b * 60 }')
    : >> "$log"  # there to follow at once
    setsid nohup bash "$self" _chain "$study" "$deadline" "$study" "$@" > /dev/null 2>&1 < /dev/null &
    echo $! > "$pidf"
    names=${studies[*]} logs=$(printf "$dir/%s.log " "${studies[@]}")
    echo "started ${names// / then } (pid $!, budget $budget min); log: ${logs% }"
    ;;
  status)
    if alive "$study"; then echo "$study: running (pid $(cat "$pidf")); log: $log"; else echo "$study: not running"; fi
    [[ -f $log ]] && tail -n 5 "$log"
    "$py" $(driver "$study") --plan "${@:3}" | tail -n 3
    ;;
  stop)
    if ! alive "$study"; then echo "$study: not running"; rm -f "$pidf"; exit 0; fi
    pid=$(cat "$pidf")
    kill -TERM "$pid"
    for ((i = 0; i < ${GRID_STOP_WAIT:-300}; i++)); do
      kill -0 "$pid" 2>/dev/null || { echo "$study stopped (pid $pid)"; tail -n 2 "$log"; exit 0; }
      sleep 1
    done
    echo "grid.sh: $study (pid $pid) still runs after ${GRID_STOP_WAIT:-300} s; its jobs are writing checkpoints" >&2
    exit 1
    ;;
  *) echo "grid.sh: start, status or stop" >&2; exit 2 ;;
esac
