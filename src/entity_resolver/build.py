"""Build the installation script: one source for the Python installer and CREATE EXTENSION.

Three kinds of source, as in timescale/pgai's extension:

* ``migrations/NNNN_name.sql`` - incremental (tables, indexes), applied once
  each, in order, recorded with a checksum in ``<schema>.schema_migrations``;
  frozen once released (migrations/SHA256SUMS).
* ``sql/NNN_name.sql`` - idempotent (``CREATE OR REPLACE`` functions, views,
  grants), re-applied on every install in filename order, so a fix to a
  function never needs a migration.
* ``plpython/*.py`` - the resolver's modules, stored as rows of
  ``plpython_modules`` in import order (computed from their imports, so a
  missing module fails the build), loaded once per session.

:func:`script` renders them into one SQL script. The Python installer runs it
in one transaction; ``make extension`` writes it as ``entity_resolver--X.sql``
and as the update script from every released version. Migrations run inside
``_apply_migration``, which skips the ones the ledger has (and refuses one
whose text changed), so the same script installs afresh and upgrades.

Templates: ``{{ schema }}``, ``{{ internal }}``, ``{{ search_path }}`` and
``{{ code_version }}`` are rendered here; ``{{ trgm_schema }}`` and
``{{ name_collation }}`` depend on the target database (where pg_trgm lives,
its locale) and are rendered there, at run time, by ``_install_render``.

A PL/Python entry point is written once, as its SQL signature with a body that
names the Python function (``AS $$ resolve.resolve_mentions_sql $$``); the
build expands it into the PL/Python function ``<internal>.<name>_py`` (with
the module-loading prologue) and a PL/pgSQL function of the declared name that
calls it and re-raises any error without PL/Python's exception prefix and
traceback.
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
from typing import Dict, Iterable, List, Optional, Tuple

EXTENSION = "entity_resolver"
DEFAULT_SCHEMA = "entity_resolver"
RUNTIME_TOKENS = ("trgm_schema", "name_collation")
STATIC_TOKENS = ("schema", "schema_literal", "internal", "search_path", "code_version")


class BuildError(RuntimeError):
    """The sources cannot be built into a script; the message says which file and why."""


# -- sources ---------------------------------------------------------------------


def data_dir() -> Path:
    """Where sql/, migrations/ and plpython/ are: in the wheel, or in the repository."""
    packaged = Path(str(resources.files("entity_resolver"))) / "_data"
    if (packaged / "migrations").is_dir():
        return packaged
    repo = Path(__file__).resolve().parents[2]
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


# CPython 3.11 keeps ast.parse's recursion counter in shared state: two threads
# parsing at once (install() in two threads) can fail with "SystemError: AST
# constructor recursion depth mismatch" (python/cpython#106905).
_PARSE_LOCK = threading.Lock()


@functools.lru_cache(maxsize=256)
def _imports(source: str) -> Tuple[str, ...]:
    """The top-level module names ``source`` imports."""
    with _PARSE_LOCK:
        tree = ast.parse(source)
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module.split(".")[0])
    return tuple(names)


def module_sources(base: Optional[Path] = None) -> List[Tuple[str, str]]:
    """(name, source) of every plpython/ module, each after the modules it imports.

    A module that imports a name which is neither another module of plpython/
    nor part of the standard library fails the build: the server has nothing
    else to import it from.
    """
    base = base or data_dir()
    sources = {p.stem: p.read_text(encoding="utf-8") for p in sorted((base / "plpython").glob("*.py"))}
    stdlib = getattr(sys, "stdlib_module_names", None)
    deps: Dict[str, List[str]] = {}
    for name, text in sources.items():
        deps[name] = []
        for imported in _imports(text):
            if imported in sources:
                deps[name].append(imported)
            elif imported != "__future__" and stdlib is not None and imported not in stdlib:
                raise BuildError(f"plpython/{name}.py imports {imported!r}, which is neither a module of "
                                 f"plpython/ nor of the standard library (missing file?)")
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

    for name in sorted(sources):
        visit(name, ())
    return [(name, sources[name]) for name in ordered]


def code_version(schema: str = DEFAULT_SCHEMA, base: Optional[Path] = None) -> str:
    """A digest of everything installed as code (modules and idempotent SQL) and the schema."""
    base = base or data_dir()
    h = hashlib.sha256(schema.encode())
    data = [(p.name, p.read_text(encoding="utf-8")) for p in sorted((base / "data").glob("*.tsv"))]
    for name, text in module_sources(base) + sql_sources(base) + data:
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


# -- names -----------------------------------------------------------------------


def quote_ident(name: str) -> str:
    """PostgreSQL's quote_ident for a name we render into SQL text."""
    if re.fullmatch(r"[a-z_][a-z0-9_$]*", name) and name.upper() not in _RESERVED:
        return name
    return '"' + name.replace('"', '""') + '"'


# Reserved words that are valid lowercase identifiers but must be quoted.
_RESERVED = {"ALL", "ANALYSE", "ANALYZE", "AND", "ANY", "ARRAY", "AS", "ASC", "ASYMMETRIC", "BOTH",
             "CASE", "CAST", "CHECK", "COLLATE", "COLUMN", "CONSTRAINT", "CREATE", "CURRENT_CATALOG",
             "CURRENT_DATE", "CURRENT_ROLE", "CURRENT_TIME", "CURRENT_TIMESTAMP", "CURRENT_USER",
             "DEFAULT", "DEFERRABLE", "DESC", "DISTINCT", "DO", "ELSE", "END", "EXCEPT", "FALSE",
             "FETCH", "FOR", "FOREIGN", "FROM", "GRANT", "GROUP", "HAVING", "IN", "INITIALLY",
             "INTERSECT", "INTO", "LATERAL", "LEADING", "LIMIT", "LOCALTIME", "LOCALTIMESTAMP", "NOT",
             "NULL", "OFFSET", "ON", "ONLY", "OR", "ORDER", "PLACING", "PRIMARY", "REFERENCES",
             "RETURNING", "SELECT", "SESSION_USER", "SOME", "SYMMETRIC", "TABLE", "THEN", "TO",
             "TRAILING", "TRUE", "UNION", "UNIQUE", "USER", "USING", "VARIADIC", "WHEN", "WHERE",
             "WINDOW", "WITH"}


def internal_schema(schema: str) -> str:
    """The schema of the internal functions: <schema>_internal (a digest when that is too long)."""
    name = schema + "_internal"
    if len(name.encode()) <= 63:
        return name
    return "er_" + hashlib.md5(schema.encode()).hexdigest()[:16] + "_internal"


def static_values(schema: str, base: Optional[Path] = None) -> Dict[str, str]:
    schema_ident = quote_ident(schema)
    internal_ident = quote_ident(internal_schema(schema))
    return {
        "schema": schema_ident,
        "schema_literal": "'" + schema.replace("'", "''") + "'",
        "internal": internal_ident,
        "search_path": f"{schema_ident}, {internal_ident}, pg_catalog, pg_temp",
        "code_version": code_version(schema, base),
    }


_TOKEN = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def render(text: str, values: Dict[str, str], keep: Iterable[str] = RUNTIME_TOKENS) -> str:
    """Replace ``{{ name }}`` tokens; run-time tokens are kept; an unknown one is an error."""
    keep = set(keep)

    def sub(m: re.Match) -> str:
        name = m.group(1)
        if name in values:
            return values[name]
        if name in keep:
            return "{{ %s }}" % name
        raise BuildError(f"unknown template token {m.group(0)}")

    return _TOKEN.sub(sub, text)


def has_runtime_tokens(text: str) -> bool:
    return any(m.group(1) in RUNTIME_TOKENS for m in _TOKEN.finditer(text))


def dollar_quote(text: str, tag: str) -> str:
    """``$tag$text$tag$``, with a tag the text does not contain."""
    n = 0
    chosen = tag
    while f"${chosen}$" in text:
        n += 1
        chosen = f"{tag}{n}"
    return f"${chosen}${text}${chosen}$"


# -- PL/Python entry points ------------------------------------------------------

# No part may cross a ";": a match never spans two statements.
_ENTRY = re.compile(
    r"CREATE OR REPLACE FUNCTION (?P<qual>\{\{ (?:schema|internal) \}\})\.(?P<name>\w+)\("
    r"(?P<args>[^;]*?)\)\s*\n"
    r"RETURNS (?P<returns>[^;]*?)\n"
    r"LANGUAGE plpython3u\n"
    r"(?P<options>(?:(?!AS )[^\n]*\n)*?)"
    r"AS \$\$ (?P<module>\w+)\.(?P<function>\w+) \$\$;",
    re.S,
)


def _split_args(text: str) -> List[str]:
    """Top-level comma-separated parts of an argument list (quotes and parentheses respected)."""
    parts, depth, quote, current = [], 0, False, []
    for ch in text:
        if ch == "'":
            quote = not quote
        elif not quote and ch in "([":
            depth += 1
        elif not quote and ch in ")]":
            depth -= 1
        elif not quote and depth == 0 and ch == ",":
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    if "".join(current).strip():
        parts.append("".join(current).strip())
    return parts


@dataclass
class _Arg:
    name: str
    type: str
    default: Optional[str]


def _parse_args(text: str) -> List[_Arg]:
    args = []
    for part in _split_args(text):
        m = re.fullmatch(r"(\w+)\s+(.+?)(?:\s+DEFAULT\s+(.+))?", part, re.S)
        if not m:
            raise BuildError(f"cannot read argument {part!r}")
        args.append(_Arg(m.group(1), " ".join(m.group(2).split()), m.group(3)))
    return args


def _prologue(code_version_: str, module: str, function: str, args: List[_Arg]) -> str:
    call_args = "".join(", " + a.name for a in args)
    return (
        f'\nkey = "entity_resolver:{code_version_}"\n'
        "if key not in GD:\n"
        '    plpy.execute(plpy.prepare("SELECT _load_modules($1)", ["text"]), [key])\n'
        "M = GD[key]\n"
        f'return M["db"].call(plpy, M["{module}"].{function}{call_args})\n'
    )


def _wrapper_body(returns: str, impl: str, args: List[_Arg]) -> str:
    call = f"{impl}({', '.join(a.name for a in args)})"
    if returns.startswith("TABLE") or returns.startswith("SETOF"):
        statement = f"RETURN QUERY SELECT * FROM {call};"
    elif returns.strip() == "void":
        statement = f"PERFORM {call};"
    else:
        statement = f"RETURN {call};"
    return (
        "\nDECLARE\n"
        "    msg text;\n"
        "    state text;\n"
        "    detail text;\n"
        "    hint text;\n"
        "BEGIN\n"
        f"    {statement}\n"
        "EXCEPTION WHEN OTHERS THEN\n"
        "    GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE,\n"
        "        detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;\n"
        # RAISE refuses a NULL option and prints an empty DETAIL line for
        # '': pass on only what the original error had.
        "    msg := _clean_message(msg);\n"
        "    IF detail <> '' AND hint <> '' THEN\n"
        "        RAISE EXCEPTION USING MESSAGE = msg, ERRCODE = state, DETAIL = detail, HINT = hint;\n"
        "    ELSIF detail <> '' THEN\n"
        "        RAISE EXCEPTION USING MESSAGE = msg, ERRCODE = state, DETAIL = detail;\n"
        "    ELSIF hint <> '' THEN\n"
        "        RAISE EXCEPTION USING MESSAGE = msg, ERRCODE = state, HINT = hint;\n"
        "    END IF;\n"
        "    RAISE EXCEPTION USING MESSAGE = msg, ERRCODE = state;\n"
        "END;\n"
    )


def expand_entry_points(text: str, version: str) -> str:
    """Expand every PL/Python entry point of an idempotent file (see the module docstring)."""

    def expand(m: re.Match) -> str:
        qual, name, returns = m.group("qual"), m.group("name"), m.group("returns")
        args = _parse_args(m.group("args"))
        options = m.group("options")
        impl = "{{ internal }}." + name + "_py"
        impl_args = ",\n    ".join(f"{a.name} {a.type}" for a in args)
        types = ", ".join(a.type for a in args)
        wrapper_options = "".join(line + "\n" for line in options.splitlines()
                                  if not line.startswith('SET "pg_trgm.'))
        impl_sql = (
            f"CREATE OR REPLACE FUNCTION {impl}(\n    {impl_args}\n)\n" if args else
            f"CREATE OR REPLACE FUNCTION {impl}()\n"
        )
        impl_sql += (
            f"RETURNS {returns}\nLANGUAGE plpython3u\n{options}"
            f"AS $${_prologue(version, m.group('module'), m.group('function'), args)}$$;\n\n"
            f"COMMENT ON FUNCTION {impl}({types}) IS\n"
            f"'Internal (generated): the PL/Python body of {name}, which calls it.';\n\n"
        )
        wrapper = (
            f"CREATE OR REPLACE FUNCTION {qual}.{name}({m.group('args')})\n"
            f"RETURNS {returns}\nLANGUAGE plpgsql\n{wrapper_options}"
            f"AS $${_wrapper_body(returns, impl, args)}$$;"
        )
        return impl_sql + wrapper

    return _ENTRY.sub(expand, text)


# -- the script ------------------------------------------------------------------

_PREAMBLE = """
-- What depends on the target database is rendered there, at install time:
-- where pg_trgm lives and the collation entity names fold case with.
CREATE OR REPLACE FUNCTION {{ internal }}._install_render(body text)
RETURNS text
LANGUAGE plpgsql
STABLE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    trgm text;
    coll text := '"default"';
BEGIN
    SELECT quote_ident(n.nspname) INTO trgm
    FROM pg_extension AS e INNER JOIN pg_namespace AS n ON e.extnamespace = n.oid
    WHERE e.extname = 'pg_trgm';
    IF trgm IS NULL THEN
        RAISE EXCEPTION 'entity_resolver needs the pg_trgm extension: CREATE EXTENSION pg_trgm first'
            USING ERRCODE = 'undefined_object';
    END IF;
    -- Under LC_CTYPE C, lower() folds ASCII letters only: entity names then
    -- take the C.UTF-8 collation, whose lower() folds every letter.
    IF (SELECT d.datctype FROM pg_database AS d WHERE d.datname = current_database()) IN ('C', 'POSIX') THEN
        SELECT quote_ident(n.nspname) || '.' || quote_ident(c.collname) INTO coll
        FROM pg_collation AS c INNER JOIN pg_namespace AS n ON c.collnamespace = n.oid
        WHERE c.collprovider = 'c' AND lower(c.collctype) IN ('c.utf8', 'c.utf-8')
            AND c.collencoding IN (-1, pg_char_to_encoding('UTF8'))
            AND pg_char_to_encoding('UTF8')
            = (SELECT d.encoding FROM pg_database AS d WHERE d.datname = current_database())
        ORDER BY c.collname
        LIMIT 1;
        coll := coalesce(coll, '"default"');
    END IF;
    RETURN replace(replace(body, '{{ trgm_schema }}', trgm), '{{ name_collation }}', coll);
END;
$$;

COMMENT ON FUNCTION {{ internal }}._install_render(text) IS
'Internal (installer): render what depends on this database (pg_trgm''s schema, the name collation) into SQL.';

CREATE OR REPLACE FUNCTION {{ internal }}._install_execute(body text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
BEGIN
    EXECUTE _install_render(body);
END;
$$;

COMMENT ON FUNCTION {{ internal }}._install_execute(text) IS
'Internal (installer): run SQL after rendering what depends on this database.';

CREATE TABLE IF NOT EXISTS {{ schema }}.schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE {{ schema }}.schema_migrations IS
'Installation metadata: incremental migrations applied, one row each.';

CREATE OR REPLACE FUNCTION {{ internal }}._apply_migration(
    version integer, name text, checksum text, body text
)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SECURITY INVOKER
SET search_path = {{ search_path }}
AS $$
DECLARE
    applied text;
BEGIN
    SELECT m.checksum INTO applied FROM schema_migrations AS m WHERE m.version = _apply_migration.version;
    IF FOUND THEN
        -- Migrations are frozen once applied: an edited one would leave this
        -- database unlike a fresh install.
        IF applied <> _apply_migration.checksum THEN
            RAISE EXCEPTION 'migration % differs from the one applied to this database (checksum %, file %): '
                'released migrations must not be edited; put the change in a new migration',
                _apply_migration.name, left(applied, 12), left(_apply_migration.checksum, 12)
                USING ERRCODE = 'object_not_in_prerequisite_state';
        END IF;
        RETURN FALSE;
    END IF;
    EXECUTE _install_render(body);
    INSERT INTO schema_migrations (version, name, checksum)
    VALUES (_apply_migration.version, _apply_migration.name, _apply_migration.checksum);
    RETURN TRUE;
END;
$$;

COMMENT ON FUNCTION {{ internal }}._apply_migration(integer, text, text, text) IS
'Internal (installer): apply one incremental migration unless the ledger has it; refuse one whose text changed.';
"""


def _rows(path: Path, columns: int) -> List[Tuple[str, ...]]:
    """The data rows of a data/*.tsv file (comment lines and the header skipped)."""
    rows = []
    header = True
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if header:
            header = False
            continue
        rows.append(tuple(line.split("\t")[:columns]))
    return rows


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _name_data_sql(base: Path) -> str:
    """The shipped name data (data/*.tsv) as statements that replace the tables' rows."""
    parts = []
    for table, path, columns in (("name_variants", base / "data" / "nicknames.tsv", ("name", "variant")),
                                 ("org_suffixes", base / "data" / "org_suffixes.tsv", ("canonical", "form"))):
        if not path.is_file():
            raise BuildError(f"{path}: shipped name data not found")
        rows = sorted(set(_rows(path, 2)))
        values = ",\n".join("(%s, %s)" % (_literal(a), _literal(b)) for a, b in rows)
        parts.append(f"DELETE FROM {{{{ schema }}}}.{table};\n"
                     f"INSERT INTO {{{{ schema }}}}.{table} ({', '.join(columns)}) VALUES\n{values}\n"
                     f"ON CONFLICT DO NOTHING;\n")
    return "".join(parts)


def _modules_sql(modules: List[Tuple[str, str]]) -> str:
    lines = ["DELETE FROM {{ schema }}.plpython_modules WHERE NOT (name = ANY (ARRAY["
             + ", ".join("'%s'" % n for n, _ in modules) + "]::text []));"]
    for ordinal, (name, text) in enumerate(modules):
        digest = hashlib.sha256(text.encode()).hexdigest()
        lines.append(
            "INSERT INTO {{ schema }}.plpython_modules (name, ordinal, source, sha256)\n"
            f"VALUES ('{name}', {ordinal}, {dollar_quote(text, 'er_module')}, '{digest}')\n"
            "ON CONFLICT (name) DO UPDATE SET\n"
            "    ordinal = excluded.ordinal, source = excluded.source, sha256 = excluded.sha256;"
        )
    return "\n".join(lines) + "\n"


def script(schema: str = DEFAULT_SCHEMA, *, extension: bool = False, upto: Optional[int] = None,
           base: Optional[Path] = None, version: Optional[str] = None) -> str:
    """The whole installation script for ``schema``.

    ``extension``: the flavor for CREATE EXTENSION (config tables marked for
    pg_dump; refuses to run from psql). ``upto``: stop after that migration,
    without the idempotent files (an old installation, for upgrade tests).
    """
    base = base or data_dir()
    values = static_values(schema, base)
    version = version or package_version(base)
    parts = [
        f"-- entity_resolver {version}: generated by src/entity_resolver/build.py from migrations/, sql/ and\n"
        "-- plpython/ (edit those, not this file).\n"
    ]
    if extension:
        parts.append('\\echo Use "CREATE EXTENSION entity_resolver" to load this file. \\quit\n')
    parts.append(render(
        # The script's own statements qualify our names and run our functions,
        # which pin their search_path: nothing here may come from public or
        # a temporary schema (pgspot checks the script under this path).
        # LOCAL: the installer's transaction or CREATE EXTENSION restores it.
        "SET LOCAL search_path = pg_catalog, pg_temp;\n"
        "SELECT pg_advisory_xact_lock(7310447224051);\n"
        "CREATE SCHEMA IF NOT EXISTS {{ schema }};\n"
        "CREATE SCHEMA IF NOT EXISTS {{ internal }};\n", values))
    parts.append(render(_PREAMBLE, values))
    for m in migrations(base):
        if upto is not None and m.version > upto:
            break
        body = render(m.text, values)
        parts.append(
            f"SELECT {values['internal']}._apply_migration({m.version}, '{m.name}', '{m.checksum}',\n"
            f"{dollar_quote(body, 'er_migration')});\n"
        )
    if upto is None:
        parts.append(render(_modules_sql(module_sources(base)), values))
        parts.append(render(_name_data_sql(base), values))
        for name, text in sql_sources(base):
            body = render(expand_entry_points(text, values["code_version"]), values)
            if has_runtime_tokens(body):
                body = (f"SELECT {values['internal']}._install_execute(\n"
                        f"{dollar_quote(body, 'er_sql')});\n")
            parts.append(f"-- sql/{name}\n{body}")
    if extension:
        parts.append(render(_CONFIG_DUMP, values))
    return "\n".join(parts)


# Tenant tables' rows belong to the user: pg_dump dumps them (extension member
# tables are otherwise dumped as nothing but CREATE EXTENSION). Their sequences
# too: restored with its start value, stats_queue's id sequence would hand out
# the ids of restored queue rows again (a duplicate key at the next write).
# One call per statement: each call rewrites the pg_extension row.
_CONFIG_DUMP = """
DO $$
DECLARE
    t regclass;
BEGIN
    FOR t IN
        SELECT c.oid::regclass
        FROM pg_class AS c INNER JOIN pg_namespace AS n ON c.relnamespace = n.oid
        WHERE n.nspname = {{ schema_literal }} AND c.relkind IN ('r', 'S')
            AND c.relname NOT IN ('schema_migrations', 'plpython_modules', 'name_variants', 'org_suffixes')
        ORDER BY c.relname
    LOOP
        PERFORM pg_catalog.pg_extension_config_dump(t, '');
    END LOOP;
END;
$$;
"""


# -- the extension files ---------------------------------------------------------

CONTROL = """# entity_resolver: generated by src/entity_resolver/build.py (make extension)
comment = 'PostgreSQL-native entity resolver for AI-agent memory (PL/Python + SQL)'
default_version = '{version}'
relocatable = false
requires = 'plpython3u, pg_trgm'
superuser = true
"""


def extension_files(base: Optional[Path] = None) -> dict:
    """{file name: text} of the extension: control file, install script, update scripts.

    The install script of the current version is the build script; the update
    script from every released version (extension/released/*.sql, frozen) is
    the same script, which applies only the migrations the ledger lacks and
    replaces every function.
    """
    base = base or data_dir()
    version = package_version(base)
    body = script(DEFAULT_SCHEMA, extension=True, base=base, version=version)
    files = {
        "entity_resolver.control": CONTROL.format(version=version),
        f"entity_resolver--{version}.sql": body,
    }
    released = base / "extension" / "released"
    for path in sorted(released.glob("entity_resolver--*.sql")) if released.is_dir() else []:
        old = path.stem.split("--", 1)[1]
        if old == version:
            continue
        files[path.name] = path.read_text(encoding="utf-8")
        files[f"entity_resolver--{old}--{version}.sql"] = body
    return files


def write_extension(out: Path, base: Optional[Path] = None) -> List[Path]:
    """Write the extension files into ``out``; return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in extension_files(base).items():
        path = out / name
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m entity_resolver.build OUT_DIR``: write the extension files (make extension)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m entity_resolver.build",
                                     description="Write the entity_resolver extension files.")
    parser.add_argument("out", type=Path, help="directory to write the control file and scripts into")
    args = parser.parse_args(argv)
    for path in write_extension(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
