#!/usr/bin/env bash
# Hydra's own tests of its basic sweeper and launcher, run twice: as released, and with normlab's
# sweeper wherever an app asks for the basic one (scripts/hydra_swap/sitecustomize.py). Passes when
# every test that passes against the basic sweeper passes against normlab's too (make test-hydra).
#
# The tests come from the source release of the installed hydra-core (the version constraints.txt
# pins), fetched once into .cache/hydra-src with pip. That release ships tests/test_basic_launcher.py
# (Hydra's launcher, sweeper and integration suites) and tests/test_basic_sweeper.py, but not the
# apps of tests/test_apps: with HYDRA_SRC=<a checkout of facebookresearch/hydra at that version>,
# tests/test_hydra.py (the multirun tests) and the tests needing those apps run too.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
root=$PWD
py=${PYTHON:-$root/.venv/bin/python}
ver=$("$py" -c "import hydra; print(hydra.__version__)")
pin=$(sed -n 's/^hydra-core==//p' constraints.txt)
[[ $ver == "$pin" ]] || echo "test_hydra.sh: note: hydra-core $ver is installed, constraints.txt pins $pin" >&2
src=${HYDRA_SRC:-$root/.cache/hydra-src/hydra_core-$ver}
if [[ ! -d $src/tests ]]; then
  mkdir -p "$root/.cache/hydra-src"
  "$py" -m pip download --quiet --no-deps --no-binary :all: --no-build-isolation "hydra-core==$ver" \
    -d "$root/.cache/hydra-src" 2>&1 | grep -v "is ignored: it is neither" >&2 || true
  tar xzf "$root/.cache/hydra-src/hydra_core-$ver.tar.gz" -C "$root/.cache/hydra-src"
fi
tests=(tests/test_basic_launcher.py tests/test_basic_sweeper.py)
if [[ -d $src/tests/test_apps ]]; then
  tests+=(tests/test_hydra.py)
else
  echo "test_hydra.sh: $src has no tests/test_apps (the PyPI release leaves them out): running ${tests[*]};" \
    "HYDRA_SRC=<a hydra checkout at v$ver> adds tests/test_hydra.py" >&2
fi
out=${TEST_HYDRA_OUT:-$root/runs/test-hydra}
mkdir -p "$out"
export PYTHONPATH=$root/scripts/hydra_swap:$root${PYTHONPATH:+:$PYTHONPATH}

# the swap itself, checked: a sweep of a plain app must be run by normlab's sweeper
probe=$(cd "$out" && NORMLAB_SWAP_SWEEPER=1 "$py" -c '
import hydra
from hydra.core.hydra_config import HydraConfig
@hydra.main(version_base=None, config_path=None)
def app(cfg):
    print("PROBE", HydraConfig.get().sweeper._target_)
app()' -m +x=1 "hydra.sweep.dir=$out/probe" hydra/hydra_logging=disabled hydra/job_logging=disabled | sed -n 's/^PROBE //p')
[[ $probe == *NormlabSweeper ]] || { echo "test_hydra.sh: the swap did not take: the sweep ran $probe" >&2; exit 1; }

for swap in 0 1; do
  (cd "$src" && NORMLAB_SWAP_SWEEPER=$swap "$py" -m pytest -q -p no:cacheprovider -W ignore::pytest.PytestAssertRewriteWarning \
     --junitxml="$out/swap$swap.xml" "${tests[@]}" > "$out/swap$swap.log" 2>&1) || true
  tail -n 1 "$out/swap$swap.log" | sed "s/^/[$( ((swap)) && echo normlab || echo basic) sweeper] /"
done
"$py" - "$out/swap0.xml" "$out/swap1.xml" <<'PY'
import sys
import xml.etree.ElementTree as ET

def outcomes(path):
    res = {}
    for case in ET.parse(path).iter("testcase"):
        bad = [c.tag for c in case if c.tag in ("failure", "error", "skipped")]
        res[f"tests.{case.get('classname').split('.tests.')[-1]}::{case.get('name')}"] = bad[0] if bad else "passed"
    return res

basic, normlab = outcomes(sys.argv[1]), outcomes(sys.argv[2])
lost = sorted(t for t, o in basic.items() if o == "passed" and normlab.get(t) != "passed")
passed = sum(o == "passed" for o in normlab.values())
print(f"Hydra's tests: {passed} of {len(normlab)} pass with normlab's sweeper, "
      f"{sum(o == 'passed' for o in basic.values())} of {len(basic)} with the basic one")
for t, o in sorted(basic.items()):
    if o != "passed":
        print(f"  {o} with the basic sweeper too: {t}")
for t in lost:
    print(f"  FAILS only with normlab's sweeper: {t}")
sys.exit(1 if lost or not basic else 0)
PY
