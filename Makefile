# Two entry points: `make run` (the whole default DAG) and `make test`.
# Both create .venv and install the pinned stack from envs/ when it is missing or stale.
PY      := python3
VENV    := .venv
STAMP   := $(VENV)/.installed
CORES   ?= all
# pytest-xdist workers of `make test` (the smoke DAG runs beside them in the background)
TEST_WORKERS ?= 2

# `make ui`: MLflow's web UI on this run's store
UI_HOST ?= 127.0.0.1
UI_PORT ?= 5000
UI_STORE ?= $(CURDIR)/results/mlflow.db

.PHONY: run test smoke report reference clean-results ui

# pip's find-links (where a machine keeps its CPU build of torch) passed on to uv, which reads no pip config;
# `=`, not `:=`: pip is asked only when the install recipe runs, not on every make
FIND_LINKS = $(sort $(PIP_FIND_LINKS) $(shell $(PY) -m pip config get global.find-links 2>/dev/null))
UV = $(VENV)/bin/uv pip install -q --python $(VENV)/bin/python $(foreach l,$(FIND_LINKS),--find-links $(l))

$(STAMP): envs/requirements.lock pyproject.toml
	test -x $(VENV)/bin/python || $(PY) -m venv $(VENV)
	# uv (pinned in the lock) installs the lock in about 20 s where pip takes about 2 minutes; pip if uv fails
	$(VENV)/bin/python -m pip install -q $$(grep '^uv==' envs/requirements.lock)
	$(UV) -r envs/requirements.lock || $(VENV)/bin/python -m pip install -q -r envs/requirements.lock
	$(UV) --no-deps --no-build-isolation -e . || $(VENV)/bin/python -m pip install -q --no-deps --no-build-isolation -e .
	# dcor compiles its numba kernels at import (about 50 CPU-seconds) into a cache: compile them once here, so
	# parallel jobs and test workers load them instead of compiling them at the same time (a test worker
	# that did so from a fresh clone aborted inside LLVM)
	$(VENV)/bin/python -c "import dcor"
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/snakemake --cores $(CORES) --profile profiles/default
	$(VENV)/bin/snakemake --cores 1 --profile profiles/default --report results/report.html
	@echo ""
	@echo "Summary:  results/summary.md  (and results/summary.csv)"
	@echo "Figures:  results/<paper>/figures/*.png"
	@echo "Report:   results/report.html"
	@echo "Verdicts: results/summary.png, results/<paper>/figures/claims.png; $(VENV)/bin/neurips26 show <paper>"
	@echo "Tuning:   results/<paper>/figures/tuning.png, results/tuning.csv"
	@echo "MLflow:   make ui  (http://$(UI_HOST):$(UI_PORT), store sqlite:///$(UI_STORE))"
	@echo "Compared with the reference run (reference/): results/compare.md"
	@-$(VENV)/bin/neurips26 compare reference results | head -n 1

# After a change that moves results on purpose: record this run as the reference and
# regenerate every paper README's claims table and the README's picture (docs/summary.png) from it
# (commit them). With PAPERS="a b", only those papers' rows are replaced (after a run of those papers
# alone); the others keep theirs.
reference: $(STAMP)
	$(VENV)/bin/neurips26 reference --results results --out reference $(if $(PAPERS),--papers $(PAPERS))
	$(VENV)/bin/neurips26 readme --summary reference/summary.csv  # and each README's tuning table from reference/tuning.csv
	$(VENV)/bin/python -c "from neurips26.core import claims_plot, report; claims_plot.summary_figure(report.read_claims(['reference/summary.csv']), 'docs/summary.png')"

test: $(STAMP)
	# loadfile: one worker per test file, so the cluster tests (one file) share one SLURM cluster and the
	# smoke DAG's tests (test_workflow.py) its folder. loadgroup would be the finer choice, but with pytest 9.2
	# xdist 3.8 cannot write the group into the test ids and silently spreads a group over both workers
	$(VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

smoke: $(STAMP)
	$(VENV)/bin/snakemake --cores 2 --profile profiles/default --configfile config/smoke.yaml

# one web worker, no job-execution consumers, its own process group: Ctrl-C stops every process of it
ui: $(STAMP)
	$(VENV)/bin/neurips26 ui --store $(UI_STORE) --host $(UI_HOST) --port $(UI_PORT)
