# accelgraph — make targets for everything a person repeats. `make` alone prints this list.
##   make help      this list
##   make install   create .venv/ with accelgraph and its test tools (the CUDA extra where a driver is)
##   make demo      capture, replay and dump a bundled scenario (GPU), or show a recorded dump (no GPU)
##   make test      install what the tests need, then run the whole suite (GPU tier skips without a GPU)
##   make test-cpu  the CPU tier alone (what CI runs on machines without a GPU, minus the skips)
##   make test-gpu  the GPU tier alone, from the source tree, no network needed (for GPU machines)
##   make fixtures  record the DOT dumps, profiles and audits the CPU tests read (GPU), into tests/data/
##   make bench     benchmarks (GPU parts skip without a GPU), into bench/results/local/;
##                  make bench RECORD=1 writes bench/results/ instead, to commit
##   make wheel     build dist/accelgraph-*.whl afresh (no build/ left from an earlier build)
##   make lint      ruff
##   make mutate    mutation testing of the GPU-free core (slow: see README); MODULE=run.smoke for one
##   make clean     remove .venv/ and build outputs
##   After make install/demo/test: run .venv/bin/accelgraph, or `source .venv/bin/activate` first.

.DEFAULT_GOAL := help

PYTHON ?= python3
VENV   ?= .venv
VPY    := $(VENV)/bin/python
# A CUDA extra only where an NVIDIA driver is present: cuda13 for drivers that run CUDA 13, else cuda12.
CUDA_EXTRA := $(shell if command -v nvidia-smi >/dev/null 2>&1; then \
	v=$$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9]*\).*/\1/p' | head -n1); \
	if [ -n "$$v" ] && [ "$$v" -ge 13 ]; then echo ",cuda13"; elif [ -n "$$v" ]; then echo ",cuda12"; fi; fi)
# GPU machines without network: wheels carried in .whl/ go to a private site dir, inside the
# checkout (ignored by git) so nothing is written outside it.
GPU_SITE ?= .gpu-site
# Temporary files of those runs (pytest's tmp_path, pip) stay inside the checkout too.
GPU_TMP  ?= .gpu-tmp
GPU_ENV  := PYTHONPATH=$(abspath $(GPU_SITE)):$(CURDIR) PYTHONUNBUFFERED=1 TMPDIR=$(abspath $(GPU_TMP))
# The venv's python where `make install` made one, else the system python3 with carried wheels
# (the GPU machine, which has no network).
RUN_PY := $(if $(wildcard $(VPY)),$(VPY),$(PYTHON))

.PHONY: help install graphviz test test-cpu test-gpu demo fixtures bench wheel lint mutate clean

help:
	@sed -n 's/^##//p' $(MAKEFILE_LIST)

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -e ".[dev$(CUDA_EXTRA)]"
	touch $@

install: $(VENV)/.installed graphviz
	@echo "accelgraph installed in $(VENV) (extras: dev$(CUDA_EXTRA)); run $(VENV)/bin/accelgraph --help"

# Graphviz draws --format svg/png; optional, so a failure here only warns.
graphviz:
	@command -v dot >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    (apt-get update -qq && apt-get install -y -qq graphviz >/dev/null) \
	      || echo "warning: could not install Graphviz; --format svg/png will say how"; \
	  else echo "note: Graphviz (dot) not found; install it for --format svg/png"; fi; }

# Graphviz first, so the drawing tests run instead of skipping (-ra says why any test skips).
test: $(VENV)/.installed graphviz
	$(VPY) -m pytest

test-cpu: $(VENV)/.installed
	$(VPY) -m pytest -m "not gpu"

$(GPU_SITE)/.installed:
	@mkdir -p $(GPU_SITE) $(GPU_TMP)
	@if ls .whl/*.whl >/dev/null 2>&1; then \
	  TMPDIR=$(abspath $(GPU_TMP)) $(RUN_PY) -m pip install -q --no-index --no-deps --no-compile --target $(GPU_SITE) .whl/*.whl; fi
	@touch $@

test-gpu: $(GPU_SITE)/.installed
	@mkdir -p $(GPU_TMP)
	$(GPU_ENV) $(RUN_PY) -m pytest tests/gpu -m gpu -p no:cacheprovider --durations=15

fixtures: $(GPU_SITE)/.installed
	@mkdir -p $(GPU_TMP)
	@$(GPU_ENV) $(RUN_PY) -m tools.fixtures tests/data

demo: $(VENV)/.installed
	@if $(VPY) -c "from accelgraph_cli.cuda.device import gpu_available; raise SystemExit(0 if gpu_available() else 1)"; then \
	  set -e; \
	  $(VENV)/bin/accelgraph capture scenarios/fork_join.py --out demo-out; \
	  $(VENV)/bin/accelgraph replay --iters 500; \
	  $(VENV)/bin/accelgraph dump --out demo-out/fork_join.dot; \
	else \
	  echo "No CUDA GPU here: make demo captures, replays and dumps scenarios/fork_join.py on a GPU machine."; \
	  if [ -f tests/data/dumps/scenario_fork_join_verbose.dot ]; then \
	    echo "Showing its graph as recorded on a GPU by make fixtures instead (tests/data/dumps/scenario_fork_join_verbose.dot)."; \
	    echo; $(VENV)/bin/accelgraph show tests/data/dumps/scenario_fork_join_verbose.dot; \
	  else \
	    echo "No recorded dump is bundled yet (make fixtures on a GPU machine records them into tests/data/dumps)."; \
	    echo "accelgraph show works on any CUDA graph dump you have: $(VENV)/bin/accelgraph show FILE.dot"; \
	  fi; \
	fi

bench: $(GPU_SITE)/.installed
	@mkdir -p $(GPU_TMP)
	$(GPU_ENV) $(RUN_PY) bench/run_all.py $(if $(RECORD),--record)

# Mutation testing ([tool.mutmut] in pyproject.toml): mutants of the GPU-free core (model,
# dot parser, diff, render, scenario loader, diagnose, smoke), each run against the tests that
# reach the mutated function. MODULE=run.smoke (a dotted path under accelgraph_cli) limits it.
# Results stay in mutants/ (a rerun only retests what changed); tests/mutation/score.py prints
# the per-module table that tests/mutation/REPORT.md records.
MODULE ?=
mutate: $(VENV)/.installed
	$(VENV)/bin/mutmut run $(if $(MODULE),"accelgraph_cli.$(MODULE).*")
	$(VPY) tests/mutation/score.py

# setuptools reuses a build/ left by an earlier build, which would ship files deleted since.
wheel:
	rm -rf build *.egg-info dist/accelgraph-*.whl
	$(RUN_PY) -m pip wheel --no-deps -q -w dist .
	@ls dist/accelgraph-*.whl

lint: $(VENV)/.installed
	$(VPY) -m ruff check accelgraph_cli tests bench scenarios tools

clean:
	rm -rf $(VENV) $(GPU_SITE) $(GPU_TMP) .pytest_cache build *.egg-info dist mutants
