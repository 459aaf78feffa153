# normlab: `make help` lists the targets.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
# CPU-only machines: torch 2.13 (a bare `torch` may pull a multi-GB CUDA build; see docs/install.md).
TORCH_SPEC ?= torch==2.13.*
SCALE ?= mini
TASKS ?=
SEEDS ?=
STUDY ?= fixed
JOBS ?= 2
TASK ?= rt
NORM ?= layernorm
SEED ?= 1
# normlab's one default data folder, as in normlab/configs/paths/default.yaml: ./data
export NORMLAB_DATA ?= $(abspath data)

.PHONY: help install demo example test test-slow test-docs test-hydra lint docs format train sweep reproduce-table reproduce-tuned select-confirm-lr reproduce-prenorm reproduce-placement grid-start grid-status grid-stop gpu-wheels bench clean fairseq-env test-fairseq bench-fairseq compare-fairseq

help:  ## show this help
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

# A fresh clone: the targets that run Python depend on the venv's interpreter, so `make demo` or
# `make test` installs first when .venv is missing (and only then).
$(PY):
	$(MAKE) install

install:  ## create .venv and install normlab with pinned dependencies
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -c constraints.txt -e ".[dev,docs,wandb,tensorboard,dashboard,launchers,tune]"
	@# build the C++ CPU norm kernels now (~20 s, once) rather than in the first run
	$(PY) -c "from normlab.norms import native; print('native norm kernels:', native.describe())"

demo: $(PY)  ## train 3 norms on generated data (no download), print a table, write a loss-curve figure
	$(PY) scripts/demo.py $(if $(DEMO_ROOT),--root $(DEMO_ROOT))

example: $(PY)  ## install examples/normlab-example (a norm of one's own package) and train it on rt and mnist
	$(PY) -m pip install -q --no-deps -e examples/normlab-example
	$(PY) -m normlab.train -m task=rt,mnist norm=lpnorm scale=smoke progress=false
	$(PY) -m normlab.make_report --no-figures --out runs/example-report runs/smoke/default
	@grep "LpNorm" runs/example-report/summary.md

# Tests run on every core (pytest-xdist), a test file per worker so that its fixtures are built once.
XDIST = -n auto --dist loadfile

test: $(PY)  ## run the test suite (real data from NORMLAB_DATA, default ./data); the 15 slowest tests last
	$(PY) -m pytest -q $(XDIST) --durations=15

test-slow: $(PY)  ## run only the slow tests (longer end-to-end runs)
	$(PY) -m pytest -q $(XDIST) -m slow

LINTED := normlab tests scripts hydra_plugins

lint: $(PY)  ## ruff: the rules written down in pyproject.toml, and the formatting (make format applies it)
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)

docs: $(PY)  ## the documentation site (mkdocs-material; API reference from the docstrings) into .cache/site, warnings as errors
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

format: $(PY)  ## format the tree with ruff and apply its safe fixes
	$(VENV)/bin/ruff format $(LINTED)
	$(VENV)/bin/ruff check --fix $(LINTED)

test-docs: $(PY)  ## run every runnable command of the README and the guides at smoke scale (slow)
	$(PY) -m pytest -q -m slow tests/test_docs_commands.py

test-hydra: $(PY)  ## Hydra's own sweeper/launcher tests, against the basic sweeper and against normlab's
	PYTHON=$(abspath $(PY)) scripts/test_hydra.sh

train: $(PY)  ## one job: make train TASK=rt NORM=adanorm SEED=1 SCALE=mini
	$(VENV)/bin/normlab-train task=$(TASK) norm=$(NORM) seed=$(SEED) scale=$(SCALE)

sweep: $(PY)  ## task x norm x seed grid: make sweep TASKS=rt NORMS=layernorm,layernorm_simple SEEDS=1,2,3
	$(VENV)/bin/normlab-train --multirun task=$(or $(TASKS),'glob(*,exclude=synthetic_cls)') norm=$(or $(NORMS),layernorm,layernorm_simple) seed=$(or $(SEEDS),1,2,3) scale=$(SCALE)

# The studies (docs/studies.md). SEEDS: the evaluation seeds by default (normlab/configs/study/seeds.yaml);
# MAX_SEEDS: add seeds to the unresolved primary rows, look by look, up to that many (--until-resolved);
# BUDGET_MIN: start no job after that many minutes; COMMIT: train at that commit; OVERRIDES: Hydra
# overrides for every job of reproduce-table, reproduce-prenorm and reproduce-placement (e.g. OVERRIDES=logger=wandb).
STUDY_ARGS = --scale $(SCALE) --jobs $(JOBS) $(if $(BUDGET_MIN),--budget-min $(BUDGET_MIN)) $(if $(COMMIT),--commit $(COMMIT))

reproduce-table: $(PY)  ## the fixed-lr study, then its tables: make reproduce-table [SCALE=mini] [TASKS=...] [SEEDS=...] [MAX_SEEDS=20] [BUDGET_MIN=60] [OVERRIDES=...]
	$(PY) -m normlab.campaigns.xu2019 --study fixed $(STUDY_ARGS) $(if $(TASKS),--tasks $(TASKS)) $(if $(SEEDS),--seeds $(SEEDS)) $(if $(MAX_SEEDS),--until-resolved --max-seeds $(MAX_SEEDS)) $(if $(OVERRIDES),-- $(OVERRIDES))

# Each norm at its own lr: seed 1 (the selection seed) at 5 lrs spanning 8x, the best on validation, then
# the evaluation seeds at it; the selection already committed is read, not re-trained.
reproduce-tuned: $(PY)  ## each norm at its own lr: make reproduce-tuned [SCALE=mini] [TUNED_TASKS=rt,sst2] [SEEDS=...] [BUDGET_MIN=60]
	$(PY) -m normlab.campaigns.xu2019 --study tuned $(STUDY_ARGS) $(if $(TUNED_TASKS),--tasks $(TUNED_TASKS)) \
	  $(if $(SEEDS),--evaluation-seeds $(SEEDS))

# The confirmatory study's lrs: seed 1 at every lr of the tuned grid for each norm of the paper's
# claims (the tuned study's selection runs at the same presets are reused); it reports nothing.
select-confirm-lr: $(PY)  ## the confirmatory study's lr selection: make select-confirm-lr [TUNED_TASKS=...] [BUDGET_MIN=60]
	$(PY) -m normlab.campaigns.xu2019 --study confirm-lr --extend 3 $(STUDY_ARGS) $(if $(TUNED_TASKS),--tasks $(TUNED_TASKS))

reproduce-prenorm: $(PY)  ## enwik8 with pre-norm, all 9 norms: make reproduce-prenorm [SEEDS=...] [BUDGET_MIN=60]
	$(PY) -m normlab.campaigns.xu2019 --study prenorm $(STUDY_ARGS) $(if $(SEEDS),--seeds $(SEEDS)) $(if $(OVERRIDES),-- $(OVERRIDES))

reproduce-placement: $(PY)  ## IWSLT14 and enwik8, 4 norms x 6 placements: make reproduce-placement [SEEDS=...] [BUDGET_MIN=60]
	$(PY) -m normlab.campaigns.xu2019 --study placement $(STUDY_ARGS) $(if $(SEEDS),--seeds $(SEEDS)) $(if $(OVERRIDES),-- $(OVERRIDES))

grid-start: $(PY)  ## a detached slice: make grid-start STUDY=fixed|tuned|prenorm|placement|confirm BUDGET_MIN=110 [COMMIT=sha] [THEN='tuned --commit sha']
	@test -d "$(NORMLAB_DATA)" || { echo "no data folder at $(NORMLAB_DATA): set NORMLAB_DATA or link ./data" >&2; exit 2; }
	scripts/grid.sh start $(STUDY) $(or $(BUDGET_MIN),$(error BUDGET_MIN= is required)) --scale $(SCALE) --jobs $(JOBS) \
	  $(if $(COMMIT),--commit $(COMMIT)) $(if $(THEN),--then $(THEN) --scale $(SCALE) --jobs $(JOBS))

grid-status:  ## is the slice running, its log's tail, and the study's plan: make grid-status STUDY=fixed
	scripts/grid.sh status $(STUDY) --scale $(SCALE)

grid-stop:  ## stop the slice cleanly (its jobs write checkpoints): make grid-stop STUDY=fixed
	scripts/grid.sh stop $(STUDY)

# The GPU machine of the device tool has no network and lacks these pure-Python packages.
gpu-wheels: $(PY)  ## .whl/: hydra-core, omegaconf, antlr4, sacremoses for scripts/gpu_check.sh on a GPU machine
	mkdir -p .whl
	grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
	$(PY) -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
	  --platform manylinux2014_x86_64 -d .whl -c constraints.txt hydra-core omegaconf sacremoses
	$(PY) -m pip wheel -q --no-deps -c constraints.txt antlr4-python3-runtime -w .whl  # sdist only on PyPI

bench: $(PY)  ## norm-layer, training-step and data-cache benchmarks (ratios)
	$(PY) scripts/bench_norms.py
	$(PY) scripts/bench_step.py
	$(PY) scripts/bench_data.py

clean:  ## remove caches and local run outputs (not results/)
	rm -rf .cache runs outputs multirun .pytest_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# fairseq in its own venv: fairseq-fixed 0.12.3.1 pins hydra-core==1.3.2 (normlab's pins say 1.3.8)
FAIRSEQ_VENV ?= .venv-fairseq
FAIRSEQ_PY := $(FAIRSEQ_VENV)/bin/python

$(FAIRSEQ_PY):
	$(MAKE) fairseq-env

fairseq-env:  ## .venv-fairseq: fairseq-fixed 0.12.3.1 + normlab for the fairseq plugin (~4 min, once)
	test -x $(FAIRSEQ_PY) || python3 -m venv $(FAIRSEQ_VENV)
	$(FAIRSEQ_PY) -m pip install -q --upgrade pip
	$(FAIRSEQ_PY) -m pip install -q "$(TORCH_SPEC)"
	$(FAIRSEQ_PY) -m pip install -q -c constraints-fairseq.txt "fairseq-fixed==0.12.3.1" pytest -e .

test-fairseq: $(FAIRSEQ_PY)  ## the fairseq plugin's tests (tests/fairseq/), in .venv-fairseq
	$(FAIRSEQ_PY) -m pytest -q -o addopts="" tests/fairseq

# normlab's trainer in .venv, fairseq-train in .venv-fairseq, on the same exported data and recipe
RECIPE ?= mini
CMP_SEEDS ?= 1,2
CMP_INIT ?= fairseq
CMP_NAME = $(RECIPE)$(if $(filter torch,$(CMP_INIT)),-torch-init)
bench-fairseq: $(PY) $(FAIRSEQ_PY)  ## normlab vs fairseq-train in updates/s and target tokens/s (mini and 6+6) -> results/bench/fairseq.md
	$(PY) scripts/bench_fairseq.py --fairseq-python $(FAIRSEQ_PY) --out results/bench/fairseq.md

compare-fairseq: $(PY) $(FAIRSEQ_PY)  ## normlab-train vs fairseq-train valid loss: make compare-fairseq [RECIPE=mini|tiny] [CMP_SEEDS=1,2] [CMP_INIT=fairseq|torch]
	OMP_NUM_THREADS=1 $(PY) scripts/compare_fairseq.py --recipe $(RECIPE) --seeds $(CMP_SEEDS) \
		--fairseq-python $(FAIRSEQ_PY) --fairseq-attention-init $(CMP_INIT) \
		--work runs/compare_fairseq/$(CMP_NAME) --json runs/compare_fairseq/$(CMP_NAME).json
