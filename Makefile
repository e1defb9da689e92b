# The two commands a new user needs are `make run` and `make test`; everything else is for developers.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run test lint fmt bench clean

install: $(STAMP)

# Re-installs only when pyproject.toml changed; `make install` is quick otherwise.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: install
	$(BIN)/python -m service serve

# pytest exits 5 when it collected no test; that must never pass silently.
test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS) || { rc=$$?; [ $$rc -ne 5 ] || echo "make test: no test ran" >&2; exit $$rc; }

lint: install
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache --no-logo  # import direction: [tool.importlinter] in pyproject.toml

fmt: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Benchmarks (not part of `make test`). The HTTP ones need wrk: apt-get install wrk.
# BENCH_REFERENCE=1 also measures the reference server (../shared/reference/setup.sh).
bench: install
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python -m tests.bench.append
	$(BIN)/python -m tests.bench.create
	$(BIN)/python -m tests.bench.clone
	$(BIN)/python -m tests.bench.tokens
	$(BIN)/python -m tests.bench.users

clean:
	rm -rf $(VENV) .data .pytest_cache .mypy_cache .ruff_cache
