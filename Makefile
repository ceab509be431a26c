# mpistack: `make run` runs the main job, `make test` runs every test. Both install what they need first.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
MPISTACK := $(VENV)/bin/mpistack
DB ?= mpistack.db
# CI sets CI=true: bench builds then fail on any warning
WERROR := $(if $(filter true,$(CI)),1,0)

.PHONY: run test host venv bench bench-startup bench-store bench-recipes bench-report agreement agreement-replay doctor-check soak bench-build gpu-sources lint clean help

help:
	@echo "make run          set up this machine, then run the default job"
	@echo "make test         set up this machine, then run every test"
	@echo "make bench-store  ingest and query speed of the results store, peak memory of ingesting 200 MB"
	@echo "make bench-startup  start-up time of mpistack --help, results, runs, stack list"
	@echo "make bench-recipes  catalogue render time, cached image builds, cold and cached source builds (~1 h)"
	@echo "make bench-report  analysis and report time over one million stored results"
	@echo "make agreement    the default campaign 3 times: classes side by side, five targets with Wilson intervals"
	@echo "make agreement-replay  the targets at 6 to 96 launches per case, replayed from agreement.db's rounds"
	@echo "make doctor-check the fault campaign into faults.db, then the doctor scored on it"
	@echo "make soak         small campaigns at once into shared and own stores, killed and resumed: lost, duplicates, orphans"
	@echo "make -C bench sweep   mpistack-bench sweep speed (one launch, adaptive vs OSU-style)"
	@echo "make gpu-sources  what the D D check carries to a GPU machine, into .gpu-sources/ (docs/methodology.md 11)"

host:
	bash scripts/setup-host.sh

# The virtual environment is rebuilt when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet -e '.[test]'
	touch $@

venv: $(VENV)/.installed

# The build script, tarballs and wheel benchmarks/gpu_check.py needs on a GPU machine without a network.
gpu-sources: host venv
	$(VPY) benchmarks/gpu_check.py prepare --sources .gpu-sources

bench-build: host
	$(MAKE) -C bench MPICC=mpicc.mpich BUILD=build-mpich WERROR=$(WERROR)
	$(MAKE) -C bench MPICC=mpicc.openmpi BUILD=build-openmpi WERROR=$(WERROR)

# The default campaign on this machine; the published references are loaded beside it for comparison.
run: host venv
	$(MPISTACK) --db $(DB) ingest --reference all
	$(MPISTACK) --db $(DB) run examples/local.toml

test: host venv
	$(VPY) -m pytest tests

bench-store: host venv bench-startup
	$(VPY) benchmarks/store_speed.py
	$(VPY) benchmarks/ingest_memory.py --mb 200

# Start-up time of the verbs people type most (figures printed, nothing asserted).
bench-startup: host venv
	$(VPY) benchmarks/startup.py

bench-recipes: host venv
	$(VPY) benchmarks/recipes_speed.py

# with the store of the last make run, its three commands timed on it too
bench-report: host venv
	$(VPY) benchmarks/report_speed.py $(if $(wildcard mpistack.db),--db mpistack.db)

# Three back-to-back runs of the default campaign into agreement.db, then their classes and the targets.
agreement: host venv
	$(VPY) benchmarks/agreement.py examples/local.toml --runs 3 --db agreement.db

# From agreement.db's stored rounds (runs nothing): the targets for sets of three campaigns of N launches per case,
# each made of consecutive rounds none of the others uses (N needs 3N stored rounds).
agreement-replay: venv
	$(VPY) benchmarks/agreement.py --replay 6,8,12,16,32,48,96 --trials 8 --db agreement.db

# Known causes injected on purpose (examples/faults.toml), run into faults.db (each run a new campaign beside the
# earlier ones), then the doctor's findings on the latest scored against them: exit 1 when recall < 90% or
# precision < 95% (docs/doctor.md, "The fault matrix").
doctor-check: host venv
	$(MPISTACK) --db faults.db run examples/faults.toml
	$(MPISTACK) --db faults.db doctor --campaign faults --score

# Small campaigns at once (half into one store, half named alike into stores of their own), killed with
# SIGKILL or SIGTERM at random moments and resumed: prints results lost, duplicates, foreign results, orphan
# processes and containers, and exits 1 unless all are 0 (docs/guarantees.md).
soak: host venv
	$(VPY) benchmarks/soak.py

bench: bench-store bench-recipes bench-report
	$(MAKE) -C bench sweep

lint: venv
	$(VPY) -m pyflakes src tests benchmarks

clean:
	rm -rf $(VENV) bench/build* .pytest_cache .hypothesis
