# replaybook — the two commands a user needs:
#   make demo   render the bundled demo incident's review report and print the HTML path
#   make test   run the whole test suite
# Both create .venv and install the package into it first.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
REPORT_DIR ?= reports/demo

.PHONY: demo test bench demo-data clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e '.[test]'
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/replaybook report data/demo/incident.yaml --out $(REPORT_DIR)

test: $(VENV)/.installed
	$(PY) -m pytest $(PYTEST_ARGS)

bench: $(VENV)/.installed
	$(PY) bench/run.py $(BENCH_ARGS)
	$(PY) bench/door_bench.py $(DOOR_BENCH_ARGS)

# Regenerate the committed demo incident (needs the dev extra for the SAS transport writer).
demo-data: $(VENV)/.installed
	$(PIP) install --quiet -e '.[dev]'
	$(PY) scripts/make_demo.py data/demo

clean:
	rm -rf $(VENV) reports test-artifacts .pytest_cache
