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
# the study, scale, family membership and family folders of $res (a folder of no declared study: exit)
read -r _ scale member family < <("$py" scripts/study_of_folder.py "$res") || exit 1
git add -A -- "$res/runs" $(ls "$res/reproduce.json" 2>/dev/null)
if [[ -e $stage ]] || git ls-files --error-unmatch "$stage" > /dev/null 2>&1; then git add -A -- "$stage"; fi
# report FOLDER OUT: the folder's tables from its indexed copies, written into OUT
report() {
  local folder=$1 out=$2 rc=0 study scale
  mkdir -p "$out"
  git archive "$(git write-tree)":"$folder" | tar -x -C "$out"
  read -r study scale _ < <("$py" scripts/study_of_folder.py "$folder")
  "$py" -m normlab.campaigns.xu2019 --study "$study" --scale "$scale" --report-only --out "$out" --record-out "$folder" > "$out.log" 2>&1 || rc=$?
  tail -1 "$out.log"; rm -f "$out.log"
  return $rc
}
if ! report "$res" "$snap/main"; then echo "the report failed; nothing committed" >&2; exit 1; fi
(cd "$snap/main" && find . -type f) | while read -r f; do
  mkdir -p "$res/$(dirname "$f")" && cp "$snap/main/$f" "$res/$f" && git add "$res/$f"
done
# The studies of claims.yaml's family are corrected over one family of tests, so when this folder
# is one of them the others' findings change with its runs: their tables are re-written too (from
# their own committed copies, which stay as they are), and the generated results sections of the
# README and docs/results.md. A folder outside the family (the placement study's) changes none.
for other in $family; do
  [[ $member == 1 && $other != "$res" && -d $other/runs ]] || continue
  if ! report "$other" "$snap/other"; then echo "the report of $other failed; nothing committed" >&2; exit 1; fi
  (cd "$snap/other" && find . -type f -not -path './runs/*') | while read -r f; do
    mkdir -p "$other/$(dirname "$f")" && cp "$snap/other/$f" "$other/$f" && git add "$other/$f"
  done
  rm -rf "$snap/other"
done
if [[ $scale == mini ]]; then "$py" scripts/readme_results.py > /dev/null && git add README.md docs/results.md; fi
if git diff --cached --quiet; then echo "nothing new in $res"; exit 0; fi
git commit -qm "$msg" && echo "committed $(git rev-parse --short HEAD): $res"
