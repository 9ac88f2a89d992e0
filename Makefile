# entity_resolver — `make test` and `make demo` set up everything they need.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test unit test-citus citus demo lint setup system-deps bench soak clean

test: setup lint
	$(PY) -m pytest -q

unit: setup
	$(PY) -m pytest -q tests/unit

# The distributed tests: a Citus coordinator and workers on this machine.
# Citus is built from ../shared/citus when it is not installed (once per
# machine, a few minutes); elsewhere install Citus's own packages first.
CITUS_BUILD ?= ../shared/citus/build.sh

test-citus: setup citus
	$(PY) -m pytest -q tests/citus

citus: setup
	@if $(PY) -c 'import sys; from entity_resolver.citus_cluster import citus_installed; sys.exit(not citus_installed())'; then \
		:; \
	elif [ -x "$(CITUS_BUILD)" ]; then \
		"$(CITUS_BUILD)"; \
	else \
		echo "Citus is not installed for this PostgreSQL and $(CITUS_BUILD) is missing: install Citus (https://docs.citusdata.com)"; exit 1; \
	fi

demo: setup
	$(VENV)/bin/entity-resolver demo

lint: setup
	$(VENV)/bin/sqlfluff lint sql migrations

setup: system-deps $(STAMP)

system-deps:
	@./scripts/system-deps.sh

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

bench: setup
	$(VENV)/bin/entity-resolver bench

soak: setup
	$(PY) -m bench.soak

clean:
	rm -rf $(VENV) build dist *.egg-info
