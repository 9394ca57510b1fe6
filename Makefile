# The two set-up commands: `make run` and `make test` (Debian/Ubuntu, or Rocky/RHEL 9, as root;
# docs/install.md), and `make dist`, the offline bundle.
VENV := .venv
BIN := $(VENV)/bin


.PHONY: deps deps-run run test bench bench-all dist clean

# What `make run` needs and nothing more: fio, util-linux, the filesystem and LVM tools, a
# Python >= 3.10 and the venv with backupbench (apt or dnf; docs/install.md).
deps-run:
	@bash scripts/install-deps.sh

# Everything only the tests need besides: iostat, a browser and font, the test extras (pytest,
# hypothesis, vermin, tomli); the lab VM's host packages; MinIO and the S3 load generator (Go);
# ZFS for the lab guest (Debian's contrib/backports packages, the module built once with DKMS).
deps: deps-run
	@bash scripts/install-deps.sh --test
	@bash scripts/install-lab-deps.sh
	@bash scripts/install-minio.sh
	@bash scripts/install-zfs.sh

# The main job: the backup-operation suite on a scratch directory made (and removed) here.
run: deps-run
	$(BIN)/backupbench run --backup-size 10TiB

test: deps
	$(BIN)/python -m pytest

bench: deps
	$(BIN)/python bench/fio_overhead.py

# Every benchmark; each prints a ratio against a reference measured in the same run.
bench-all: deps
	$(BIN)/python bench/fio_overhead.py
	$(BIN)/python bench/monitor_overhead.py
	$(BIN)/python bench/smallfiles.py
	$(BIN)/python bench/s3.py
	$(BIN)/python bench/s3_servers.py
	$(BIN)/python bench/lab.py
	$(BIN)/python bench/field_note_d.py
	$(BIN)/python bench/rebuild.py
	$(BIN)/python bench/signal_trials.py
	$(BIN)/python bench/agent_flood.py

# The offline bundle for servers with no package index: dist/backupbench-<version>-offline.tar.gz
# (wheels for CPython 3.10-3.12, a single-file pex per Python, the static S3 loader, install.sh).
# DIST_FLAGS=--with-minio adds MinIO (~110 MB), DIST_FLAGS=--no-pex leaves the pex files out;
# BACKUPBENCH_DIST_PYTHONS="3.11" narrows the Pythons.
dist: deps-run
	@bash scripts/make-dist.sh $(DIST_FLAGS)

clean:
	rm -rf $(VENV) build dist src/*.egg-info .tools
