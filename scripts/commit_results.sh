#!/usr/bin/env bash
# Commit a study's results: what a slice staged, or a complete results folder with its tables.
#
#   scripts/commit_results.sh results/staging/mini "results/staging/mini: 61 runs of slice 2"
#   scripts/commit_results.sh results/mini "results/mini: the evaluation seeds replace seeds 2-3"
#
# A staging folder (results/staging/<folder>) is committed as it is: run copies and the record, no
# tables (nothing reads them until the study is complete). A results folder is committed with its
# tables written from exactly the copies being committed (in a scratch folder: a run finishing
# meanwhile would otherwise be in the commit but not in its tables), together with the removal of
# its staging folder (the study's promotion). Nothing new to commit is not an error: exit 0.
# Tables are written by the current checkout; keep its code clean (`git status normlab scripts`).
set -euo pipefail
res=${1:?usage: scripts/commit_results.sh results/<folder> or results/staging/<folder> "commit message"}
msg=${2:?a commit message}
res=${res%/}
name=$(basename "$res")
py=${PYTHON:-.venv/bin/python}
cd "$(git rev-parse --show-toplevel)"
if [[ ! -d $res ]]; then echo "commit_results.sh: $res does not exist" >&2; exit 1; fi
if [[ $(basename "$(dirname "$res")") == staging ]]; then
  git add -A -- "$res"
  if git diff --cached --quiet -- "$res"; then echo "nothing new in $res"; exit 0; fi
  git commit -qm "$msg" -- "$res" && echo "committed $(git rev-parse --short HEAD): $res"
  exit 0
fi
stage=$(dirname "$res")/staging/$name
snap=$(mktemp -d)
trap 'rm -rf "$snap"' EXIT
git add -A -- "$res/runs" $(ls "$res/reproduce.json" 2>/dev/null)
if [[ -e $stage ]] || git ls-files --error-unmatch "$stage" > /dev/null 2>&1; then git add -A -- "$stage"; fi
git archive "$(git write-tree)":"$res" | tar -x -C "$snap"
rc=0
if [[ $name == *-tuned ]]; then
  "$py" scripts/reproduce_tuned.py --scale "${name%-tuned}" --no-train --out "$snap" --record-out "$res" > "$snap.log" 2>&1 || rc=$?
else
  study=fixed; scale=$name
  if [[ $name == *-enwik8-prenorm ]]; then study=prenorm; scale=${name%-enwik8-prenorm}; fi
  "$py" scripts/reproduce.py --study "$study" --scale "$scale" --report-only --out "$snap" --record-out "$res" > "$snap.log" 2>&1 || rc=$?
fi
tail -1 "$snap.log"; rm -f "$snap.log"
if (( rc != 0 )); then echo "the report failed (exit $rc); nothing committed" >&2; exit 1; fi
# the tuned report also copies runs finished since (final runs never change): keep those it used
(cd "$snap" && find . -type f) | while read -r f; do
  mkdir -p "$res/$(dirname "$f")" && cp "$snap/$f" "$res/$f" && git add "$res/$f"
done
if git diff --cached --quiet; then echo "nothing new in $res"; exit 0; fi
git commit -qm "$msg" && echo "committed $(git rev-parse --short HEAD): $res"
