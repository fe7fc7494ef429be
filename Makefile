# Two commands do all set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The library example's own library, installed (not editable) so its files live in site-packages.
MINILIB := examples/library_project/libsrc
MINILIB_FILES := $(MINILIB)/pyproject.toml $(wildcard $(MINILIB)/minilib/*.py) $(wildcard $(MINILIB)/minilib/*/*.py)

.PHONY: run test check lint format-check pytest pytest-quick bench compat other-torch clean

include make/extension.mk

$(STAMP): pyproject.toml requirements-dev.txt $(MINILIB_FILES)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e . -r requirements-dev.txt
	$(BIN)/pip install -q --force-reinstall --no-deps ./$(MINILIB)
	rm -rf $(MINILIB)/build $(MINILIB)/minilib.egg-info
	touch $@

## make run: install, then run ExportLens on the bundled examples (problems found exit 1: expected)
run: $(STAMP)
	$(BIN)/exportlens check examples/; status=$$?; test $$status -le 1

## make test: everything CI checks (Python lint + tests, extension lint + unit tests, real VS Code e2e)
test: lint format-check pytest ext-lint ext-unit e2e

## make check: the quick tier, in minutes: lint, format, types, and every test that needs no torch run
## (pytest's `quick` marker, tests/conftest.py; pytest exits 5 when it selects nothing: a failure too)
check: lint format-check ext-lint pytest-quick ext-unit

lint: $(STAMP)
	$(BIN)/ruff check server tests bench tools
	$(BIN)/mypy

## make format-check: ruff format and prettier agree with the code (part of `make test`)
format-check: $(STAMP) $(EXT_NODE_MODULES)
	$(BIN)/ruff format --check server tests bench tools
	npx --no-install prettier --check extension tests/extension tests/e2e esbuild.mjs eslint.config.mjs

## pytest-xdist: each of PYTEST_WORKERS processes has its own warm engine (tests/conftest.py); every
## test file stays on one of them, in its order (an LSP module is one server's scenario); the runs every
## example shares are made once per test run, whichever process asks first
PYTEST_WORKERS ?= 2
pytest: $(STAMP)
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

## the quick tier runs in one process: it is mostly collection, which each xdist process would repeat
pytest-quick: $(STAMP)
	$(BIN)/python -m pytest -m quick -q

## make bench: latency and memory figures, measured side by side (a benchmark, not a test)
bench: $(STAMP)
	$(BIN)/python bench/engine_latency.py
	$(BIN)/python bench/plain_first.py
	$(BIN)/python bench/server_startup.py
	$(BIN)/python bench/server_code_action.py
	$(BIN)/python bench/server_save.py
	$(BIN)/python bench/server_first_squiggle.py
	$(BIN)/python bench/verify_fixes.py
	$(BIN)/python bench/trace_warnings.py

## make compat: findings on torch 2.8 / 2.10 / 2.12 / 2.14.1 against the pinned torch (a report, not a test;
## venvs of a few GB each are built once into ${XDG_CACHE_HOME:-~/.cache}/exportlens/compat/)
compat: $(STAMP)
	$(BIN)/python bench/compat.py

## make other-torch: the cached torch 2.14.1 venv (a local wheel here) that tests/test_other_torch.py uses;
## CI builds it so every run tests a second torch (without it those tests skip)
other-torch: $(STAMP)
	$(BIN)/python bench/compat.py --build-only 2.14.1

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
