# The two set-up commands: `make run` and `make test` (Debian, as root).
VENV := .venv
BIN := $(VENV)/bin


.PHONY: deps deps-run run test bench bench-all clean

# What `make run` needs: Debian packages and the venv.
deps-run:
	@bash scripts/install-deps.sh

# Everything the tests need besides: the lab VM's host packages; MinIO and the S3 load generator (Go);
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
	$(BIN)/python bench/lab.py
	$(BIN)/python bench/field_note_d.py
	$(BIN)/python bench/rebuild.py
	$(BIN)/python bench/signal_trials.py

clean:
	rm -rf $(VENV) build src/*.egg-info .tools
