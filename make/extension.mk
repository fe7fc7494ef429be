# VS Code extension: build, lint, unit tests, vsix, end-to-end tests in a real workbench, demo.
# Included from the top-level Makefile (`include make/extension.mk`).

EXT_PYTHON ?= .venv/bin/python
EXT_VERSION := $(shell node -p "require('./package.json').version" 2>/dev/null)
EXT_VSIX := exportlens-$(EXT_VERSION).vsix
EXT_NODE_MODULES := node_modules/.package-lock.json
EXT_SOURCES := $(wildcard extension/*.ts extension/lib/*.ts) package.json tsconfig.json esbuild.mjs
EXT_PY_SOURCES := $(shell find server/exportlens -name '*.py' 2>/dev/null)
# The project venv (the top-level Makefile's rule builds it): the bundle's source and the e2e interpreter.
EXT_VENV_STAMP ?= .venv/.installed
# Upper bound for the whole e2e run (seconds); the runner stops itself and cleans up past it.
E2E_TIMEOUT ?= 1200

.PHONY: ext-deps ext-build ext-lint ext-unit vsix e2e-setup e2e demo

$(EXT_NODE_MODULES): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

ext-deps: $(EXT_NODE_MODULES)

ext-build: $(EXT_NODE_MODULES)
	node esbuild.mjs

ext-lint: $(EXT_NODE_MODULES)
	npx --no-install tsc --noEmit -p .
	npx --no-install tsc --noEmit -p tests/e2e
	npx --no-install eslint extension tests/extension tests/e2e esbuild.mjs eslint.config.mjs

ext-unit: $(EXT_NODE_MODULES)
	node --import tsx --test tests/extension/*.test.ts

# The server's pure-Python dependencies and the exportlens package, copied from the venv.
dist/.bundled-libs.stamp: $(EXT_PY_SOURCES) tools/bundle_python.py | $(EXT_VENV_STAMP)
	$(EXT_PYTHON) tools/bundle_python.py --out bundled/libs --server server/exportlens
	@mkdir -p dist && touch $@

$(EXT_VSIX): $(EXT_NODE_MODULES) $(EXT_SOURCES) dist/.bundled-libs.stamp .vscodeignore
	rm -f exportlens-*.vsix
	npx --no-install vsce package --no-dependencies --allow-missing-repository --skip-license \
	  --no-rewrite-relative-links --out $(EXT_VSIX)

vsix: $(EXT_VSIX)

# Chromium + libkrb5-dev (apt), Node 24 and code-server (npm), cached under .e2e-cache/.
e2e-setup:
	bash tools/e2e-setup.sh

e2e: $(EXT_VSIX) e2e-setup | $(EXT_VENV_STAMP)
	node --import tsx tests/e2e/run.ts --vsix $(EXT_VSIX) --timeout $(E2E_TIMEOUT)

# A real VS Code workbench on 127.0.0.1 with the extension and a copy of examples/; Ctrl+C stops it.
demo: $(EXT_VSIX) e2e-setup | $(EXT_VENV_STAMP)
	node --import tsx tests/e2e/demo.ts --vsix $(EXT_VSIX)
