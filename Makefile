# `make demo` and `make test` each set up what they need (a .venv with jaxlings installed).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: setup demo test test-fast lint format build bench device-check student-dist clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	# JupyterHub's proxy, for the test that runs the course on a real hub (skipped without npm)
	if command -v npm >/dev/null 2>&1; then npm install --silent --no-fund --no-audit --prefix $(VENV) configurable-http-proxy; fi
	touch $(STAMP)

setup: $(STAMP)

## The grading service end to end: serve on SQLite with one worker, `grade submit --wait` the bundled
## submission, print its table and the gradebook's URL, stop the service.
demo: setup
	$(BIN)/python demo/service_demo.py

## Run every test, a test file per process on TEST_JOBS processes (the suite is sized for 2 cores).
TEST_JOBS ?= 2
test: setup
	$(BIN)/python -m pytest -q -n $(TEST_JOBS) --dist loadfile --durations=20

## The fast tier, under 5 minutes on 2 cores: every test not marked `slow` (tests/topics/ and the tests that grade
## whole topics or run a service for long are the full suite's). Every place of the package is in it.
test-fast: setup
	$(BIN)/python -m pytest -q -n $(TEST_JOBS) --dist loadfile -m "not slow" --durations=10

## Lint, format check, types and the layering contracts (configured in pyproject.toml; CI runs it before the tests). Seconds.
lint: setup
	@status=0; \
	$(BIN)/ruff check . || status=1; \
	$(BIN)/ruff format --check . || status=1; \
	$(BIN)/mypy || status=1; \
	$(BIN)/lint-imports --no-cache --no-logo || status=1; \
	exit $$status

## Apply the formatter and ruff's safe fixes (exercises/, course/ and the crafted submissions are left alone).
format: setup
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

## Regenerate the student stubs from the solutions.
build: setup
	$(BIN)/grade build

## Where grading time goes, per topic and check (a benchmark; prints tables).
bench: setup
	$(BIN)/python benchmarks/bench.py --modes check --each
	$(BIN)/python benchmarks/bench.py --modes hidden

## On the grading machine (a TPU or GPU; the CPU elsewhere): speed verdicts of the reference, 2x and
## 10x slower versions, and the whole course's grading, in one call of a few minutes.
device-check: setup
	$(BIN)/python benchmarks/device_check.py

## Build the student package (wheel + sdist, nothing hidden in it) into dist/.
# The student package builds in an environment of its own (requirements-dist.txt), not the development one.
DIST_VENV := .venv-dist
DIST_STAMP := $(DIST_VENV)/.installed-stamp

$(DIST_STAMP): requirements-dist.txt
	$(PYTHON) -m venv $(DIST_VENV)
	$(DIST_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(DIST_VENV)/bin/python -m pip install --quiet -r requirements-dist.txt
	touch $(DIST_STAMP)

student-dist: $(DIST_STAMP)
	PYTHONPATH=$(CURDIR) $(DIST_VENV)/bin/python -m jaxlings.course.dist dist

clean:
	rm -rf $(VENV) $(DIST_VENV) demo/results.json .jaxlings
