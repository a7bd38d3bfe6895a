# Two entry points: `make run` (the whole default DAG) and `make test`.
# Both create .venv and install the pinned stack from envs/ when it is missing or stale.
PY      := python3
VENV    := .venv
STAMP   := $(VENV)/.installed
CORES   ?= all

.PHONY: run test smoke report clean-results

$(STAMP): envs/requirements.lock pyproject.toml
	test -x $(VENV)/bin/python || $(PY) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -r envs/requirements.lock
	$(VENV)/bin/python -m pip install -q --no-deps --no-build-isolation -e .
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/snakemake --cores $(CORES) --profile profiles/default
	$(VENV)/bin/snakemake --cores 1 --profile profiles/default --report results/report.html
	@echo ""
	@echo "Summary:  results/summary.md  (and results/summary.csv)"
	@echo "Figures:  results/<paper>/figures/*.png"
	@echo "Report:   results/report.html"
	@echo "MLflow:   $(VENV)/bin/mlflow ui --backend-store-uri sqlite:///$(CURDIR)/results/mlflow.db"

test: $(STAMP)
	$(VENV)/bin/python -m pytest -q

smoke: $(STAMP)
	$(VENV)/bin/snakemake --cores 2 --profile profiles/default --configfile config/smoke.yaml
