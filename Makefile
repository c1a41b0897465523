# `make demo` and `make test` each set up what they need (a .venv with jaxlings installed).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: setup demo test build clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	# JupyterHub's proxy, for the test that runs the course on a real hub (skipped without npm)
	if command -v npm >/dev/null 2>&1; then npm install --silent --no-fund --no-audit --prefix $(VENV) configurable-http-proxy; fi
	touch $(STAMP)

setup: $(STAMP)

## Grade the bundled example submission on this machine and print the score table.
demo: setup
	$(BIN)/grade grade demo/submission --topics prng --topics at_updates --sandbox auto --json demo/results.json

## Run every test.
test: setup
	$(BIN)/python -m pytest -q --durations=20

## Regenerate the student stubs from the solutions.
build: setup
	$(BIN)/grade build

clean:
	rm -rf $(VENV) demo/results.json .jaxlings
