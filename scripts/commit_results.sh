#!/usr/bin/env bash
# Commit a results folder while its grid is still running: stage the run copies that exist now,
# write the tables from exactly those copies (in a scratch folder: a run finishing meanwhile
# would otherwise be in the commit but not in its tables), and commit both.
#
#   scripts/commit_results.sh results/mini-tuned "results/mini-tuned: MNIST complete"
#   scripts/commit_results.sh results/mini "results/mini: detach_mean and detach_var added"
#
# Tables are written by the current checkout; keep its code clean (`git status normlab scripts`).
set -euo pipefail
res=${1:?usage: scripts/commit_results.sh results/<scale>[-tuned] "commit message"}
msg=${2:?a commit message}
res=${res%/}
name=$(basename "$res")
scale=${name%-tuned}
py=${PYTHON:-.venv/bin/python}
cd "$(git rev-parse --show-toplevel)"
snap=$(mktemp -d)
trap 'rm -rf "$snap"' EXIT
git add "$res/runs" $(ls "$res/reproduce.json" 2>/dev/null)   # the record keeps the grid's settings
git archive "$(git write-tree)":"$res" | tar -x -C "$snap"
rc=0
if [[ $name == *-tuned ]]; then
  "$py" scripts/reproduce_tuned.py --scale "$scale" --no-train --out "$snap" --record-out "$res" > "$snap.log" || rc=$?
else
  "$py" scripts/reproduce.py --scale "$scale" --report-only --out "$snap" --record-out "$res" > "$snap.log" || rc=$?
fi
tail -1 "$snap.log"; rm -f "$snap.log"
# 3: the grid has jobs left, which is why this script exists
if (( rc != 0 && rc != 3 )); then echo "the report failed (exit $rc); nothing committed" >&2; exit 1; fi
# the tuned report also copies runs finished since (final runs never change): keep those it used
(cd "$snap" && find . -type f) | while read -r f; do
  mkdir -p "$res/$(dirname "$f")" && cp "$snap/$f" "$res/$f" && git add "$res/$f"
done
git commit -qm "$msg" && echo "committed $(git rev-parse --short HEAD): $res"
