# Two commands: `make repro` (reproduce SugarCrepe end to end) and `make test` (the test suite).
# Both create .venv on first use (Python 3.11, pip) and install the project into it.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: repro test bench install clean-cache

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade --quiet pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

install: $(STAMP)

repro: $(STAMP)
	. $(BIN)/activate && dvc repro papers/sugarcrepe
	. $(BIN)/activate && python -m common report sugarcrepe

test: $(STAMP)
	@. $(BIN)/activate && python -m pytest -q || { status=$$?; \
	  if [ $$status -eq 5 ]; then echo "make test: pytest collected no tests (exit 5): failing" >&2; fi; exit $$status; }

bench: $(STAMP)
	. $(BIN)/activate && python -m common bench

clean-cache:
	rm -rf .cache/embeddings
