"""The sources the build reads: migrations/, sql/, sql/citus/, plpython/, data/ and the version.

* ``migrations/NNNN_name.sql`` - incremental, applied once each, frozen once released.
* ``sql/NNN_name.sql`` - idempotent, re-applied on every install in filename order
  (only the files directly in sql/: sql/citus/ is the distributed flavour's).
* ``plpython/*.py`` - the resolver's modules, in import order.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import re
import sys
import threading
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from entity_resolver.build.errors import BuildError
from entity_resolver.build.names import DEFAULT_SCHEMA


def data_dir() -> Path:
    """Where sql/, migrations/ and plpython/ are: in the wheel, or in the repository."""
    packaged = Path(str(resources.files("entity_resolver"))) / "_data"
    if (packaged / "migrations").is_dir():
        return packaged
    repo = Path(__file__).resolve().parents[3]
    if (repo / "migrations").is_dir():
        return repo
    raise BuildError("entity_resolver data files (sql/, migrations/, plpython/) not found")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    text: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


def migrations(base: Optional[Path] = None) -> List[Migration]:
    """Every incremental migration, in order; numbers must run 1..n without gaps."""
    base = base or data_dir()
    out = [Migration(int(p.name[:4]), p.stem, p.read_text(encoding="utf-8"))
           for p in sorted((base / "migrations").glob("[0-9][0-9][0-9][0-9]_*.sql"))]
    versions = [m.version for m in out]
    if versions != list(range(1, len(versions) + 1)):
        raise BuildError(f"migration numbers must be 1..n without gaps, got {versions}")
    return out


def sql_sources(base: Optional[Path] = None) -> List[Tuple[str, str]]:
    """The idempotent files, in filename order (the order they are applied in)."""
    base = base or data_dir()
    return [(p.name, p.read_text(encoding="utf-8")) for p in sorted((base / "sql").glob("*.sql"))]


def citus_sources(base: Optional[Path] = None) -> List[Tuple[str, str]]:
    """The idempotent files only a distributed installation runs (sql/citus/), after sql/."""
    base = base or data_dir()
    return [("citus/" + p.name, p.read_text(encoding="utf-8"))
            for p in sorted((base / "sql" / "citus").glob("*.sql"))]


# CPython 3.11 keeps ast.parse's recursion counter in shared state: two threads
# parsing at once (install() in two threads) can fail with "SystemError: AST
# constructor recursion depth mismatch" (python/cpython#106905).
_PARSE_LOCK = threading.Lock()


@functools.lru_cache(maxsize=256)
def _tree(source: str) -> ast.Module:
    with _PARSE_LOCK:
        return ast.parse(source)


@functools.lru_cache(maxsize=256)
def module_imports(source: str) -> Tuple[str, ...]:
    """The top-level module names ``source`` imports."""
    names = []
    for node in ast.walk(_tree(source)):
        if isinstance(node, ast.Import):
            names.extend(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module.split(".")[0])
    return tuple(names)


@functools.lru_cache(maxsize=256)
def module_functions(source: str) -> Tuple[str, ...]:
    """The functions a module defines at its top level (what an entry point may name)."""
    return tuple(node.name for node in _tree(source).body if isinstance(node, ast.FunctionDef))


def _module_dependencies(sources: Dict[str, str]) -> Dict[str, List[str]]:
    """For each module, the modules of plpython/ it imports; an import from nowhere fails the build."""
    stdlib = getattr(sys, "stdlib_module_names", None)
    deps: Dict[str, List[str]] = {}
    for name, text in sources.items():
        deps[name] = []
        for imported in module_imports(text):
            if imported in sources:
                deps[name].append(imported)
            elif imported != "__future__" and stdlib is not None and imported not in stdlib:
                raise BuildError(f"plpython/{name}.py imports {imported!r}, which is neither a module of "
                                 f"plpython/ nor of the standard library (missing file?)")
    return deps


def _import_order(deps: Dict[str, List[str]]) -> List[str]:
    """The modules, each after those it imports; a cycle fails the build."""
    ordered: List[str] = []
    state: Dict[str, int] = {}

    def visit(name: str, path: Tuple[str, ...]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            raise BuildError("plpython modules import each other in a cycle: " + " -> ".join(path + (name,)))
        state[name] = 1
        for dep in sorted(deps[name]):
            visit(dep, path + (name,))
        state[name] = 2
        ordered.append(name)

    for name in sorted(deps):
        visit(name, ())
    return ordered


def module_sources(base: Optional[Path] = None) -> List[Tuple[str, str]]:
    """(name, source) of every plpython/ module, each after the modules it imports.

    A module that imports a name which is neither another module of plpython/
    nor part of the standard library fails the build: the server has nothing
    else to import it from.
    """
    base = base or data_dir()
    sources = {p.stem: p.read_text(encoding="utf-8") for p in sorted((base / "plpython").glob("*.py"))}
    return [(name, sources[name]) for name in _import_order(_module_dependencies(sources))]


def code_version(schema: str = DEFAULT_SCHEMA, base: Optional[Path] = None) -> str:
    """A digest of everything installed as code (modules and idempotent SQL) and the schema."""
    base = base or data_dir()
    h = hashlib.sha256(schema.encode())
    data = [(p.name, p.read_text(encoding="utf-8")) for p in sorted((base / "data").glob("*.tsv"))]
    for name, text in module_sources(base) + sql_sources(base) + citus_sources(base) + data:
        h.update(name.encode() + b"\0" + text.encode() + b"\0")
    return h.hexdigest()[:16]


def package_version(base: Optional[Path] = None) -> str:
    """The version in pyproject.toml (the repository) or of the installed package."""
    base = base or data_dir()
    pyproject = base / "pyproject.toml"
    if pyproject.is_file():
        m = re.search(r'^version\s*=\s*"([^"]+)"', pyproject.read_text(encoding="utf-8"), re.M)
        if m:
            return m.group(1)
    from importlib.metadata import version

    return version("pg-entity-resolver")


def bank_lock_class(base: Optional[Path] = None) -> str:
    """The bank lock's class key, defined once in plpython/locks.py (BANK); {{ bank_lock }} in sql/."""
    m = re.search(r"^BANK = (\d+)", dict(module_sources(base or data_dir()))["locks"], re.M)
    if m is None:
        raise BuildError("plpython/locks.py defines no BANK lock class")
    return m.group(1)
