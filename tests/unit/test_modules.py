"""The PL/Python modules as they ship: run inside PostgreSQL, loaded from table rows."""

import ast
import re
import sys
import types
from datetime import datetime, timezone

import pytest

from entity_resolver import build
from entity_resolver.build.sources import module_imports

PLPYTHON = build.data_dir() / "plpython"
MODULES = [name for name, _ in build.module_sources()]
# Decision code only: no database handle at all, so unit tests call them as they are.
PURE = ["errors", "words", "settings", "scoring", "screen", "decide", "clustering", "labels", "mentions"]
NOW = datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)


def source(name):
    return (PLPYTHON / (name + ".py")).read_text()


@pytest.mark.parametrize("name", MODULES)
def test_module_parses_as_python_3_9(name):
    ast.parse(source(name), feature_version=(3, 9))


@pytest.mark.parametrize("name", MODULES)
def test_module_never_case_folds_in_python(name):
    # Case folding is PostgreSQL's lower(); Python's disagrees on "İ".
    assert not re.search(r"\.(lower|casefold|upper)\(", source(name))


@pytest.mark.parametrize("name", [m for m in MODULES if m != "db"])
def test_only_db_calls_plpy(name):
    # db.py is the one door to the database: plans, statement counting, errors.
    assert not re.search(r"\bplpy\.", source(name))


@pytest.mark.parametrize("name", PURE)
def test_decision_modules_never_touch_the_database(name):
    text = source(name)
    assert "plpy" not in text
    assert not re.search(r"^\s*(import db|from db import)", text, re.M)


def test_every_module_is_installed_after_the_modules_it_imports():
    order = {name: i for i, name in enumerate(MODULES)}
    for name in MODULES:
        for imported in module_imports(source(name)):
            if imported in order:
                assert order[imported] < order[name], (name, imported)


def test_a_module_importing_a_missing_file_fails_the_build(tmp_path):
    (tmp_path / "plpython").mkdir()
    (tmp_path / "plpython" / "a.py").write_text("import missing_stage\n")
    with pytest.raises(build.BuildError, match="missing_stage"):
        build.module_sources(tmp_path)


def test_modules_load_from_source_rows_in_order(monkeypatch):
    # As _load_modules does: each source is exec'd, in install order, into a
    # module named "entity_resolver_<name>" that sys.modules knows only as
    # "<name>" (for "import words"). Dataclasses must not need their
    # __module__ there.
    for name in MODULES:
        monkeypatch.delitem(sys.modules, name, raising=False)
    for name in MODULES:
        module = types.ModuleType("entity_resolver_" + name)
        sys.modules[name] = module
        exec(compile(source(name), name + ".py", "exec"), module.__dict__)
    assert "entity_resolver_scoring" not in sys.modules
    _, chosen = sys.modules["decide"].evaluate(
        "wren", [sys.modules["scoring"].Candidate(1, "wren", 1.0, None)], [], NOW,
        sys.modules["settings"].DEFAULTS)
    assert chosen is not None
