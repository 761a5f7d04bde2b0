# Two commands: `make repro` (reproduce every paper's pipeline) and `make test` (the test suite). Times: the 2-core
# build machine, 2026-11-29 (docs/performance.md).
# Both create .venv on first use (Python 3.11, pip) and install the project into it at constraints.txt's versions.
#   make install                the venv alone (PyPI once: about 7 GB installed, torch's wheels most of it)
#   make repro                  every paper with a pipeline (papers/*/dvc.yaml): about 22 minutes from a fresh clone
#   make repro PAPER=bivlc      one of them
#   make test                   the test suite, about 12 minutes (first `make browser`), but the pipeline builds:
#   make test-pipelines         the tests that build a pipeline from scratch through DVC (SugarCrepe's mini one, a toy
#                               paper's with a DVC remote): about 5 minutes
#   make browser                Chromium for the site's browser test: apt-get as root, announced; else a note
#   make rehearse [PAPER=...]   the full profile end to end on stand-ins, in a copy under build/rehearsal/ (CPU,
#                               about 16 minutes for the five papers; never the papers' numbers): stages ran and wall
#                               time per paper
#   make fetch                  the inputs data.dvc tracks (36 files, 20 MB), through the downloader (mirror or
#                               internet, sha256 checked)
#   make status [PAPER=...]     data.dvc's inputs and what each paper's pipeline still has to run, and the command
#   make metrics [PAPER=...]    each paper's DVC metrics, one short table per paper
#   make notebooks              Jupyter Lab on notebooks/ (the venv's kernel: the project installed)
#   make card MODEL=SPEC        a report card of a model on every benchmark (several: MODEL="A B"; SPEC: a zoo name,
#                               ARCH:TAG, ARCH:FILE or hf:REPO); files under build/cards/<profile>/
#   make site                   a static HTML site of results/ and the cards (open build/site/index.html offline)
#   make bench                  the benchmarks (timings only): evaluation engine and training input, ratios to bounds
#   make oracle [PAPER=...]     each paper's released evaluation code run beside this workspace's on the full
#                               profile's inputs and weights (after make repro with profile: full; make rehearse runs
#                               it on stand-ins): numbers and decisions compared, reports under build/oracle/
#   make constraints            rewrite constraints.txt from .venv (after a deliberate upgrade)
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PAPERS := $(sort $(patsubst papers/%/dvc.yaml,%,$(wildcard papers/*/dvc.yaml)))
PAPER ?= $(PAPERS)
TEST_WORKERS ?= auto
# pytest-xdist processes of `make test` (auto: one per core; TEST_WORKERS=0 runs the suite in one process)
MODEL ?=

# Arguments are checked as this file is read: a mistake is one line before the install (every target's prerequisite)
# starts, which takes minutes on a fresh clone.
ifneq ($(filter card,$(MAKECMDGOALS)),)
ifeq ($(strip $(MODEL)),)
$(error make card: give MODEL=SPEC (several: MODEL="A B"; python -m common zoo list))
endif
endif
UNKNOWN_PAPERS := $(filter-out $(PAPERS),$(PAPER))
ifneq ($(and $(filter repro rehearse status metrics oracle,$(MAKECMDGOALS)),$(UNKNOWN_PAPERS)),)
$(error make: no $(patsubst %,papers/%/dvc.yaml,$(UNKNOWN_PAPERS)) (PAPER=$(PAPER); papers: $(PAPERS)))
endif

.PHONY: repro rehearse fetch test test-pipelines pytest bench install status metrics notebooks clean-cache card site oracle browser \
  constraints

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade --quiet pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test,notebooks,spacy-model,hf,oracle]'
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name 'Python 3 (vlc-workspace .venv)' >/dev/null
	@touch $(STAMP)

# browser: Chromium and its driver for the site's browser test (tests/test_site.py), which skips without them. Only
# `make test` asks for it; it installs through apt-get only as root, saying so first, and never fails the build.
BROWSER_SKIPPED := the site's browser test will be skipped (Debian: apt-get install chromium chromium-driver)
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
	  if test "$$(id -u)" = 0 && command -v apt-get >/dev/null; then \
	    echo "make browser: installing chromium and chromium-driver with apt-get, for the site's browser test"; \
	    apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1 \
	      || echo "note: apt-get failed: $(BROWSER_SKIPPED)"; \
	  else echo "note: no chromium/chromedriver: $(BROWSER_SKIPPED)"; fi; }

# constraints: rewrite constraints.txt from the venv (after a deliberate upgrade; pyproject.toml keeps the ranges)
constraints: $(STAMP)
	@{ sed -n '/^#/p' constraints.txt; $(BIN)/python -m pip freeze --exclude-editable; } > constraints.txt.new \
	  && mv constraints.txt.new constraints.txt && echo "constraints.txt: $$(grep -vc '^#' constraints.txt) pins"

install: $(STAMP)

# repro: with a default DVC remote, first pull what it holds (one line if it cannot: the stages are then built here);
# then fetch and verify data.dvc's inputs; then dvc repro.
repro: $(STAMP)
	@. $(BIN)/activate && python -m common data pull $(PAPER) && python -m common data fetch --no-progress \
	  && python -m common data check $(PAPER)
	. $(BIN)/activate && dvc repro $(addprefix papers/,$(PAPER))
	@. $(BIN)/activate && for p in $(PAPER); do echo; python -m common report $$p && python -m common docs claims --line $$p \
	  || exit 1; done

# rehearse: every paper with stand-ins (tests/rehearsal/papers/<paper>.py) unless PAPER names some; the pinned released files come
# from VLC_MIRROR (default: ../shared/mirror when it exists).
REHEARSE_FLAGS ?=
REHEARSE_PAPERS := $(if $(filter command line environment,$(origin PAPER)),$(PAPER),)
rehearse: $(STAMP)
	@. $(BIN)/activate && VLC_MIRROR=$${VLC_MIRROR:-$$(test -d ../shared/mirror && cd ../shared/mirror && pwd)} \
	  python -m tests.rehearsal $(REHEARSE_FLAGS) $(REHEARSE_PAPERS)

# test: the suite but the pipeline builds (-m 'not pipeline'); test-pipelines: those alone (DVC from scratch on a copy of
# the workspace, minutes each). CI runs both. Exit 5 (nothing collected) fails either. Bytecode is written even where
# the shell sets PYTHONDONTWRITEBYTECODE (into the git- and DVC-ignored __pycache__/): the suite starts hundreds of
# Python processes, each of which would compile the workspace's modules afresh (0.6 s), and each pytest worker would
# rewrite every test module's asserts (12 s).
test: $(STAMP) browser
	@$(MAKE) --no-print-directory pytest PYTEST_MARK='not pipeline'

test-pipelines: $(STAMP)
	@$(MAKE) --no-print-directory pytest PYTEST_MARK='pipeline'

pytest: $(STAMP)
	@. $(BIN)/activate && PYTHONDONTWRITEBYTECODE= python -m pytest -q -n $(TEST_WORKERS) --dist worksteal \
	  -m "$(PYTEST_MARK)" || { status=$$?; \
	  if [ $$status -eq 5 ]; then echo "make: pytest collected no tests (exit 5): failing" >&2; fi; exit $$status; }

card: $(STAMP)
	@. $(BIN)/activate && python -m common card $(addprefix --model ,$(MODEL))

# site: the root stage `site` alone (--single-item): its dep results/ holds the outputs of every paper's stages, and
# the site shows the committed results as they are rather than re-running the pipelines upstream.
site: $(STAMP)
	@. $(BIN)/activate && dvc repro --single-item site

fetch: $(STAMP)
	@. $(BIN)/activate && python -m common data fetch

status: $(STAMP)
	@. $(BIN)/activate && python -m common data status && for p in $(PAPER); do \
	  dvc status --json --with-deps papers/$$p 2>/dev/null | python -c 'import json, sys; \
	  p = sys.argv[1]; stages = sorted(json.load(sys.stdin)); \
	  print(f"papers/{p}: up to date" if not stages else \
	        f"papers/{p}: {len(stages)} stage(s) to run ({(chr(44) + chr(32)).join(stages)}): make repro PAPER={p}")' $$p \
	  || echo "papers/$$p: dvc status failed: run dvc status papers/$$p"; done

metrics: $(STAMP)
	@. $(BIN)/activate && python -m common metrics $(PAPER)

notebooks: $(STAMP)
	$(BIN)/jupyter lab notebooks/

bench: $(STAMP)
	. $(BIN)/activate && python -m common bench eval && python -m common bench train

oracle: $(STAMP)
	@. $(BIN)/activate && python -m common oracle $(REHEARSE_PAPERS)

clean-cache:
	rm -rf .cache/embeddings
