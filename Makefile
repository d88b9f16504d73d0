# replaybook — the two commands a user needs:
#   make demo   render the bundled demo incident's review report and print the HTML path (the last line)
#   make test   run the whole test suite (make test PYTEST_ARGS='-rs -x' passes options to pytest)
# Both create .venv and install the package into it first.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
REPORT_DIR ?= reports/demo

.PHONY: demo test bench demo-data clean

# pip's own output goes to $(PIP_LOG), not the screen, where its warnings (on some machines one per
# package for every index folder pip's configuration names) buried what make demo prints. All of it
# is shown when pip fails or says anything but warnings; else only how many warnings it gave.
PIP_LOG     := $(VENV)/pip.log
PIP_INSTALL := $(PIP) install --quiet --disable-pip-version-check --no-warn-script-location

# $(call logged_pip,what it installs,shell command running pip)
define logged_pip
@echo "make: installing $(1) into $(VENV) (pip's output: $(PIP_LOG))"
@if ! ( $(2) ) >$(PIP_LOG) 2>&1; then \
  cat $(PIP_LOG); echo "make: pip failed: its output is above, and in $(PIP_LOG)" >&2; exit 1; \
elif grep -qv '^WARNING: ' $(PIP_LOG); then \
  cat $(PIP_LOG); \
elif [ -s $(PIP_LOG) ]; then \
  echo "make: pip gave $$(grep -c '^WARNING: ' $(PIP_LOG)) warnings, all in $(PIP_LOG); the first:"; \
  grep -m 1 '^WARNING: ' $(PIP_LOG); \
fi
endef

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(call logged_pip,replaybook with its test extras,$(PIP_INSTALL) --upgrade pip && $(PIP_INSTALL) -e '.[test]')
	@touch $@

# The report command prints the HTML path alone on stdout; make demo prints it last, labelled.
DEMO_REPORT := $(VENV)/bin/replaybook report data/demo/incident.yaml --out $(REPORT_DIR)

demo: $(VENV)/.installed
	@echo "$(DEMO_REPORT)"
	@html=$$($(DEMO_REPORT)) && echo "demo report (open in a browser): $$html"

test: $(VENV)/.installed
	$(PY) -m pytest $(PYTEST_ARGS)

bench: $(VENV)/.installed
	$(PY) bench/run.py $(BENCH_ARGS)
	$(PY) bench/door_bench.py $(DOOR_BENCH_ARGS)

# Regenerate the committed demo incident (needs the dev extra for the SAS transport writer).
demo-data: $(VENV)/.installed
	$(call logged_pip,replaybook's dev extras,$(PIP_INSTALL) -e '.[dev]')
	$(PY) scripts/make_demo.py data/demo

clean:
	rm -rf $(VENV) reports test-artifacts .pytest_cache
