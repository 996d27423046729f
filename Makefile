# The two commands of the README, plus helpers.  Every target sets up .venv first if needed.
VENV ?= .venv
PY := $(VENV)/bin/python
ROBOT ?= arm6

.PHONY: setup sim test bench clean

setup:
	@bash .ci/setup-env

# The default robot driven by the demo controller, with a live status line; Ctrl-C stops it.
sim: setup
	@$(VENV)/bin/mb-sim-demo $(ROBOT)

test: setup
	@$(PY) -m pytest -q test

bench: setup
	@$(PY) -W ignore bench/bench_dynamics.py

clean:
	rm -rf $(VENV) build install log .pytest_cache
