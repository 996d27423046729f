# The two commands of the README, plus helpers.  Every target sets up .venv first if needed.
VENV ?= .venv
PY := $(VENV)/bin/python
ROBOT ?= pendulum

.PHONY: setup sim test bench clean

setup:
	@bash .ci/setup-env

sim: setup
	@$(VENV)/bin/mb_sim_node --ros-args -p urdf_file:=$(ROBOT)

test: setup
	@$(PY) -m pytest -q test

bench: setup
	@$(PY) -W ignore bench/bench_dynamics.py

clean:
	rm -rf $(VENV) build install log .pytest_cache
