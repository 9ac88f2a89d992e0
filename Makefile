# entity_resolver — `make test` and `make demo` set up everything they need.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test unit demo lint setup system-deps bench soak clean extension install-extension

test: setup lint install-extension
	$(PY) -m pytest -q

unit: setup
	$(PY) -m pytest -q tests/unit

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

# The extension's control file and scripts, generated from the same sources
# the Python installer runs (src/entity_resolver/build.py).
PG_CONFIG ?= $(lastword $(sort $(wildcard /usr/lib/postgresql/*/bin/pg_config)))
extension: setup
	$(PY) -c "import sys; from entity_resolver.build import main; sys.exit(main(sys.argv[1:]))" build/extension

install-extension: extension
	install -m 644 build/extension/* "$$($(PG_CONFIG) --sharedir)/extension/"

# The benchmark is tooling (bench/), not part of the package; options as for
# entity-resolver bench, e.g. make bench BENCH_ARGS='--sizes 1000000 --batches 6'.
bench: setup
	$(PY) -m bench $(BENCH_ARGS)

soak: setup
	$(PY) -m bench.soak

clean:
	rm -rf $(VENV) build dist *.egg-info
