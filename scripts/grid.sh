#!/usr/bin/env bash
# A study's slice, detached: its own log and pid file, stopped cleanly (make grid-start/status/stop).
#
#   scripts/grid.sh start fixed 110 [extra driver arguments]   # STUDY, BUDGET_MIN
#   scripts/grid.sh status fixed
#   scripts/grid.sh stop fixed
#
# start: the study driver (python -m normlab.campaigns.xu2019 --study STUDY) in a session of its own, all three
# streams redirected, so it outlives the shell that started it and holds none of its pipes; it
# trains from the study's pinned worktree (.cache/code/<commit>), so main can move on meanwhile.
# stop: SIGTERM to the driver, which stops its jobs (each writes a checkpoint) and exits 0; waits
# up to GRID_STOP_WAIT seconds (default 300) for that. The log and pid file: runs/grid/<study>.*
set -uo pipefail
cmd=${1:?usage: scripts/grid.sh start|status|stop STUDY [BUDGET_MIN] [driver args]}
study=${2:?a study: fixed, tuned, prenorm or placement}
cd "$(git rev-parse --show-toplevel)"
py=${PYTHON:-.venv/bin/python}
dir=${GRID_DIR:-runs/grid}
pidf=$dir/$study.pid log=$dir/$study.log
case $study in
  fixed | prenorm | placement | tuned) driver=(-m normlab.campaigns.xu2019 --study "$study") ;;
  *) echo "grid.sh: unknown study '$study' (fixed, tuned, prenorm or placement)" >&2; exit 2 ;;
esac
alive() { [[ -f $pidf ]] && kill -0 "$(cat "$pidf")" 2>/dev/null; }
case $cmd in
  start)
    budget=${3:?start needs BUDGET_MIN (minutes after which no job starts)}
    shift 3
    if alive; then echo "grid.sh: $study already runs (pid $(cat "$pidf")); make grid-stop STUDY=$study first" >&2; exit 1; fi
    # The first slice of a study names its commit: otherwise the driver continues the grid that the
    # results folder reports, at that grid's (older) code.
    if [[ " $* " != *" --commit "* ]] && ! compgen -G "results/staging/*/runs" > /dev/null; then
      echo "grid.sh: nothing is staged yet: the first slice names the commit to train at (make grid-start ... COMMIT=<sha>, or --commit <sha>; docs/studies.md)" >&2
      exit 2
    fi
    mkdir -p "$dir"
    for s in fixed prenorm tuned placement; do
      if [[ $s != "$study" && -f $dir/$s.pid ]] && kill -0 "$(cat "$dir/$s.pid")" 2>/dev/null; then
        echo "grid.sh: study $s runs (pid $(cat "$dir/$s.pid")): one study at a time shares the cores" >&2; exit 1
      fi
    done
    echo "# $(date -u +%FT%TZ) ${driver[*]} --budget-min $budget $*" >> "$log"
    setsid nohup "$py" "${driver[@]}" --budget-min "$budget" "$@" >> "$log" 2>&1 < /dev/null &
    echo $! > "$pidf"
    echo "started $study (pid $!, budget $budget min); log: $log"
    ;;
  status)
    if alive; then echo "$study: running (pid $(cat "$pidf")); log: $log"; else echo "$study: not running"; fi
    [[ -f $log ]] && tail -n 5 "$log"
    "$py" "${driver[@]}" --plan "${@:3}" | tail -n 3
    ;;
  stop)
    if ! alive; then echo "$study: not running"; rm -f "$pidf"; exit 0; fi
    pid=$(cat "$pidf")
    kill -TERM "$pid"
    for ((i = 0; i < ${GRID_STOP_WAIT:-300}; i++)); do
      kill -0 "$pid" 2>/dev/null || { rm -f "$pidf"; echo "$study stopped (pid $pid)"; tail -n 2 "$log"; exit 0; }
      sleep 1
    done
    echo "grid.sh: $study (pid $pid) still runs after ${GRID_STOP_WAIT:-300} s; its jobs are writing checkpoints" >&2
    exit 1
    ;;
  *) echo "grid.sh: start, status or stop" >&2; exit 2 ;;
esac
