# The two set-up commands: `make run` and `make test` (Debian, as root).
VENV := .venv
BIN := $(VENV)/bin

.PHONY: deps run test bench clean

deps:
	@bash scripts/install-deps.sh

# The main job: the backup-operation suite on a scratch directory made (and removed) here.
run: deps
	$(BIN)/backupbench run --backup-size 10TiB

test: deps
	$(BIN)/python -m pytest

bench: deps
	$(BIN)/python bench/fio_overhead.py

clean:
	rm -rf $(VENV) build src/*.egg-info
