# The two set-up commands: `make run` and `make test` (Debian/Ubuntu, or Rocky/RHEL 9, as root;
# docs/install.md), `make check` (the quick tier, nothing installed) and `make dist`, the
# offline bundle.
VENV ?= .venv
BIN := $(VENV)/bin
# The tests run this tree's code, also from a worktree whose .venv was made for another tree.
PYTEST := PYTHONPATH=$(CURDIR)/src $(BIN)/python -m pytest
# Bytecode caches on: with PYTHONDONTWRITEBYTECODE set, every test process and every CLI the
# tests start compiles the package and pytest rewrites every test module again (seconds each).
unexport PYTHONDONTWRITEBYTECODE
# make check's pytest workers: one per core. Each test module goes whole to one worker
# (--dist loadfile), so a module-scoped fixture (a rendered report page) is made once. Of
# -n 2/-n 3 with load, loadfile, loadscope and worksteal, -n 2 loadfile took the least time
# and CPU here (docs/development.md, "Tests").
CHECK_WORKERS ?= 2
# bash, for `time`: make test prints each session's wall and CPU time (what bounds the suite on
# two cores is the CPU seconds the sessions need, not only their wall time).
SHELL := /bin/bash


.PHONY: deps deps-run run check test bench-smoke-lab bench bench-all dist clean

# What `make run` needs and nothing more: fio, util-linux, the filesystem and LVM tools, a
# Python >= 3.10 and the venv with backupbench (apt or dnf; docs/install.md).
deps-run:
	@bash scripts/install-deps.sh

# Everything only the tests need besides: iostat, a browser and font, the test extras (pytest,
# pytest-xdist, hypothesis, vermin, ruff, tomli); the lab VM's host packages; MinIO and the S3
# load generator (Go); ZFS for the lab guest (Debian's contrib/backports packages, the module built once with DKMS).
deps: deps-run
	@bash scripts/install-deps.sh --test
	@bash scripts/install-lab-deps.sh
	@bash scripts/install-minio.sh
	@bash scripts/install-zfs.sh

# The main job: the backup-operation suite on a scratch directory made (and removed) here.
run: deps-run
	$(BIN)/backupbench run --backup-size 10TiB

# The quick tier, for every edit: ruff over src/, tests/ and bench/, then every test of
# tests/unit that needs neither root nor the lab VM, on CHECK_WORKERS workers. Installs nothing: it uses
# the venv `make test` made (docs/development.md, "Tests", has the tiers and their times).
check:
	@$(BIN)/python -c "import pytest, xdist, ruff" 2>/dev/null || { echo "run make test (or make deps) first"; exit 2; }
	$(BIN)/ruff check src tests bench
	$(PYTEST) -q -n $(CHECK_WORKERS) --dist loadfile -m "not root and not vm" tests/unit

# The whole suite, in four sessions. What needs neither root nor the lab VM, and then what needs
# root (loop devices, mounts, namespaces), each on four workers: these tests wait on fio's timed
# phases, hosts and servers more than they compute (on two workers the machine's two cores were
# about half idle), so four workers take 9.4 min and 5.3 min where two took 15.8 and 9.0.
# A root module stays whole on one worker (its namespaces and servers). Then the few tests that
# read a counter the whole machine shares (marked `alone`: the disk under /tmp, 1 s CPU windows)
# one at a time, then the lab VM tests one at a time (two emulated guests would share two cores).
# Every session runs even when one fails; the target fails if any did. Each prints its 25
# slowest tests, where the suite's time goes, and its wall time and the CPU time of it and its
# children (CPU / wall = the cores it kept busy).
test: deps
	@failed=0; TIMEFORMAT='session: %0R s wall, %0U s user + %0S s system CPU'; \
	time $(PYTEST) -n 4 --dist loadscope --durations=25 -m "not root and not vm and not alone" || failed=1; \
	time $(PYTEST) -n 4 --dist loadfile --durations=25 -m "root and not vm and not alone" || failed=1; \
	time $(PYTEST) --durations=25 -m "alone and not vm" || failed=1; \
	time $(PYTEST) --durations=25 -m "vm and not lab_bench" || failed=1; \
	exit $$failed

# The lab benches' smoke runs (tests/integration/test_benches.py, marked lab_bench): each boots
# the lab VM once or twice, about 13 min together, which would take make test past CI's limit.
bench-smoke-lab: deps
	$(PYTEST) -m lab_bench tests/integration/test_benches.py

bench: deps
	$(BIN)/python bench/fio_overhead.py

# Every benchmark; each prints a ratio against a reference measured in the same run.
bench-all: deps
	$(BIN)/python bench/fio_overhead.py
	$(BIN)/python bench/monitor_overhead.py
	$(BIN)/python bench/restore_files.py
	$(BIN)/python bench/live_display.py
	$(BIN)/python bench/default_run.py
	$(BIN)/python bench/aa.py --runtime 3s
	$(BIN)/python bench/smallfiles.py
	$(BIN)/python bench/s3.py
	$(BIN)/python bench/s3_servers.py
	$(BIN)/python bench/lab.py
	$(BIN)/python bench/lab_seek.py
	$(BIN)/python bench/field_note_d.py
	$(BIN)/python bench/rebuild.py
	$(BIN)/python bench/lab_ab.py
	$(BIN)/python bench/aging_lab.py
	$(BIN)/python bench/signal_trials.py
	$(BIN)/python bench/agent_flood.py
	$(BIN)/python bench/ramp.py

# The offline bundle for servers with no package index: dist/backupbench-<version>-offline.tar.gz
# (wheels for CPython 3.10-3.12, a single-file pex per Python, the static S3 loader, install.sh).
# DIST_FLAGS=--with-minio adds MinIO (~110 MB), DIST_FLAGS=--no-pex leaves the pex files out;
# BACKUPBENCH_DIST_PYTHONS="3.11" narrows the Pythons.
dist: deps-run
	@bash scripts/make-dist.sh $(DIST_FLAGS)

# The JSON Schemas of the --json documents, generated from their models (cli/documents.py)
# into src/backupbench/results/schema/; a unit test fails while they differ.
.PHONY: schemas
schemas:
	PYTHONPATH=src $(BIN)/python -m backupbench.cli.documents src/backupbench/results/schema

# docs/options.md, the option reference, generated from the option models (cli/option_docs.py);
# tests/unit/test_option_docs.py fails while it differs.
.PHONY: options
options:
	PYTHONPATH=src $(BIN)/python -m backupbench.cli.option_docs docs/options.md

clean:
	rm -rf $(VENV) build dist src/*.egg-info .tools
