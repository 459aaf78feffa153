#!/usr/bin/env bash
# The GPU measurements in one device call. The GPU machine (Python 3.12, torch with CUDA,
# no network) lacks hydra-core, omegaconf, antlr4 and sacremoses: `make gpu-wheels` puts them in
# .whl/ here (once), and the call carries them:
#   device run: command "bash scripts/gpu_check.sh", carry [".whl"], timeout_s 600
# Writes $OUT/gpu.md (scripts/bench_gpu.py's tables: copy it to results/bench/gpu.md and commit),
# $OUT/bench.log and $OUT/nvidia-smi.txt. Extra arguments go to bench_gpu.py; a dry run on the CPU:
#   OUT=/tmp/out bash scripts/gpu_check.sh --quick
set -o pipefail
OUT=${OUT:?set OUT to the folder that receives the results}
if ls .whl/*.whl >/dev/null 2>&1 && ! python3 -c "import hydra, omegaconf, sacremoses" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "gpu_check: installing .whl/*.whl failed"; exit 1; }
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || echo "no nvidia-smi") >"$OUT/nvidia-smi.txt" 2>&1
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" | tee "$OUT/bench.log"
# 600 s per call: the bench stops starting new parts at 500 s, leaving time to write its tables
python3 scripts/bench_gpu.py --budget-s 500 --out "$OUT/gpu.md" "$@" 2>&1 | tee -a "$OUT/bench.log"
