# The two commands of the README, plus helpers.  Every target sets up .venv first if needed.
VENV ?= .venv
PY := $(VENV)/bin/python
ROBOT ?= arm6

.PHONY: setup sim test test-fast test-slow bench bench-plots clean

setup:
	@bash .ci/setup-env

# The default robot driven by the demo controller, with a live status line; Ctrl-C stops it.
sim: setup
	@$(VENV)/bin/mb-sim-demo $(ROBOT)

# The suite on every core (pytest-xdist; a module's tests on one worker, so its fixtures compile once),
# compiled models shared through the model cache (test/conftest.py); tests marked slow are skipped.
TEST_WORKERS ?= auto
PYTEST := $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile

test: setup
	@$(PYTEST) test

# The edit loop: what starts no process (no node, no DDS peer, no mb-sim) and is not slow.
test-fast: setup
	@$(PYTEST) -m "not slow and not process" test

# The long scenarios `make test` skips (marked slow): the example-robot-data corpus against Pinocchio,
# Go1, Solo12 and G1 standing, the node audits (signals, recordings, hostile sources); CI runs them after it.
# Work stealing, not a module per worker: the corpus module alone is most of the work.
test-slow: setup
	@$(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal -m slow test

# Benchmarks: MuJoCo (bench/requirements.txt) is installed here only, not by set-up (tests and CI do not
# need it).  Writes bench/results/latest.json and latest.md; BENCH_ARGS="--quick" or "--humanoids".  Then
# the node's throughput (bench_node.py) into bench/results/node.json and node.md; NODE_BENCH_ARGS defaults
# to BENCH_ARGS's --quick.  Then the ground contact's step cost (bench_contact.py: Go1, Solo12 standing vs
# mid-air vs MuJoCo) into bench/results/contact.json and contact.md; then sweeps, batched rollouts against
# mujoco.rollout, warm and fresh-process start-up and G1's cold compilation (bench_sweep.py) into sweep.json and .md;
# then objects in contact side by side with MuJoCo (bench_objects.py: a cube tower, a resting pair, a grasp);
# then spawning and deleting in a running node (bench_spawn.py) into bench/results/spawn.md; then the first
# load of chains and humanoids with MuJoCo's load beside it (bench_cold.py) into bench/results/cold.md, and
# the same robots through a peer code generator (bench_codegen_peer.py: ABA in CasADi) into codegen_peer.md; then
# identifying arm6 from a 60 s recording at 1 kHz, with Pinocchio's regressor beside it (bench_identify.py).
NODE_BENCH_ARGS ?= $(filter --quick,$(BENCH_ARGS))

bench: setup
	@$(PY) -m pip install -q --disable-pip-version-check -r bench/requirements.txt
	@$(PY) -W ignore bench/bench_dynamics.py $(BENCH_ARGS)
	@$(PY) -W ignore bench/bench_node.py --json bench/results/node.json --markdown bench/results/node.md \
		$(NODE_BENCH_ARGS)
	@$(PY) -W ignore bench/bench_contact.py --json bench/results/contact.json --markdown bench/results/contact.md \
		$(NODE_BENCH_ARGS)
	@$(PY) -W ignore bench/bench_sweep.py --json bench/results/sweep.json --markdown bench/results/sweep.md \
		$(NODE_BENCH_ARGS)
	@$(PY) -W ignore bench/bench_objects.py --json bench/results/objects.json --markdown bench/results/objects.md \
		$(NODE_BENCH_ARGS)
	@$(PY) -W ignore bench/bench_spawn.py --markdown bench/results/spawn.md
	@$(PY) -W ignore bench/bench_cold.py --markdown bench/results/cold.md $(NODE_BENCH_ARGS)
	@$(PY) -W ignore bench/bench_codegen_peer.py --markdown bench/results/codegen_peer.md $(NODE_BENCH_ARGS)
	@$(PY) -W ignore bench/bench_identify.py --markdown bench/results/identify.md

# The same plus the n-link chain sweep and its scaling plots (bench/results/scaling_*.png).
bench-plots: setup
	@$(PY) -m pip install -q --disable-pip-version-check -r bench/requirements.txt
	@$(PY) -W ignore bench/bench_dynamics.py --plots $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build install log .pytest_cache
