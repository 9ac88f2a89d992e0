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

``install --distributed`` (a Citus coordinator) runs a flavour of the same
script (``distributed=True``): ``{{ distributed }}`` renders TRUE, the files of
sql/citus/ join sql/'s, and every public function of a bank is delegated to
the node holding the bank (:func:`delegate_bank_functions`). The single-node
script and the extension files are the ``distributed=False`` flavour.
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
STATIC_TOKENS = ("schema", "schema_literal", "internal", "search_path", "code_version", "distributed")


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


# The installers' advisory lock (the script takes it first; install.py too).
INSTALL_LOCK = 7_310_447_224_051


def bank_lock_class(base: Optional[Path] = None) -> str:
    """The bank lock's class key, defined once in plpython/locks.py (BANK); {{ bank_lock }} in sql/."""
    m = re.search(r"^BANK = (\d+)", dict(module_sources(base or data_dir()))["locks"], re.M)
    if m is None:
        raise BuildError("plpython/locks.py defines no BANK lock class")
    return m.group(1)


def static_values(schema: str, base: Optional[Path] = None, distributed: bool = False) -> Dict[str, str]:
    schema_ident = quote_ident(schema)
    internal_ident = quote_ident(internal_schema(schema))
    return {
        "schema": schema_ident,
        "schema_literal": "'" + schema.replace("'", "''") + "'",
        "internal": internal_ident,
        "search_path": f"{schema_ident}, {internal_ident}, pg_catalog, pg_temp",
        "code_version": code_version(schema, base),
        # TRUE in the script of install --distributed (a Citus coordinator):
        # the few statements that differ there test it (docs/scaling.md).
        "distributed": "TRUE" if distributed else "FALSE",
        "bank_lock": bank_lock_class(base),
        "install_lock": str(INSTALL_LOCK),
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
    -- The trigram index leads with bank_id: btree_gin's operator class for text.
    IF NOT EXISTS (SELECT 1 FROM pg_extension AS e WHERE e.extname = 'btree_gin') THEN
        RAISE EXCEPTION 'entity_resolver needs the btree_gin extension: CREATE EXTENSION btree_gin first'
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
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = {{ search_path }}
AS $$ BEGIN EXECUTE _install_render(body); END; $$;

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
COMMENT ON COLUMN {{ schema }}.schema_migrations.version IS 'The migration''s number (its file''s prefix).';
COMMENT ON COLUMN {{ schema }}.schema_migrations.name IS 'The migration''s file name, without .sql.';
COMMENT ON COLUMN {{ schema }}.schema_migrations.checksum IS
'SHA-256 of the file as applied: an install refuses a migration changed since.';
COMMENT ON COLUMN {{ schema }}.schema_migrations.applied_at IS 'When it was applied.';

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


@dataclass(frozen=True)
class Part:
    """A piece of the script: SQL to run, or one incremental migration (rendered)."""

    text: str
    migration: Optional[Migration] = None
    body: str = ""   # a migration's rendered body (what _apply_migration executes)


def script_parts(schema: str = DEFAULT_SCHEMA, *, extension: bool = False, upto: Optional[int] = None,
                 base: Optional[Path] = None, version: Optional[str] = None,
                 distributed: bool = False) -> List[Part]:
    """The script as its parts, in order (:func:`script` joins them).

    ``distributed``: the flavour of ``install --distributed`` (a Citus
    coordinator): ``{{ distributed }}`` renders TRUE, the files of sql/citus/
    follow sql/, and every public function of a bank is delegated to the
    node holding the bank (:func:`delegate_bank_functions`).
    """
    base = base or data_dir()
    values = static_values(schema, base, distributed)
    version = version or package_version(base)
    parts = [Part(
        f"-- entity_resolver {version}: generated by src/entity_resolver/build.py from migrations/, sql/ and\n"
        "-- plpython/ (edit those, not this file).\n"
    )]
    if extension:
        parts.append(Part('\\echo Use "CREATE EXTENSION entity_resolver" to load this file. \\quit\n'))
    parts.append(Part(render(
        # The script's own statements qualify our names and run our functions,
        # which pin their search_path: nothing here may come from public or
        # a temporary schema (pgspot checks the script under this path).
        # LOCAL: the installer's transaction or CREATE EXTENSION restores it.
        "SET LOCAL search_path = pg_catalog, pg_temp;\n"
        "SELECT pg_advisory_xact_lock({{ install_lock }});\n"
        "CREATE SCHEMA IF NOT EXISTS {{ schema }};\n"
        "CREATE SCHEMA IF NOT EXISTS {{ internal }};\n", values)))
    parts.append(Part(render(_PREAMBLE, values)))
    for m in migrations(base):
        if upto is not None and m.version > upto:
            break
        body = render(m.text, values)
        parts.append(Part(
            f"SELECT {values['internal']}._apply_migration({m.version}, '{m.name}', '{m.checksum}',\n"
            f"{dollar_quote(body, 'er_migration')});\n", m, body))
    if upto is None:
        parts.append(Part(render(_modules_sql(module_sources(base)), values)))
        parts.append(Part(render(_name_data_sql(base), values)))
        # sql/citus/ files take their place among sql/'s by file name.
        sources = sorted(sql_sources(base) + (citus_sources(base) if distributed else []),
                         key=lambda source: source[0].rsplit("/", 1)[-1])
        for name, text in sources:
            body = expand_entry_points(text, values["code_version"])
            if distributed and not name.startswith("citus/"):
                body = delegate_bank_functions(sql_functions_to_plpgsql(body))
            body = render(body, values)
            if has_runtime_tokens(body):
                body = (f"SELECT {values['internal']}._install_execute(\n"
                        f"{dollar_quote(body, 'er_sql')});\n")
            parts.append(Part(f"-- sql/{name}\n{body}"))
    if extension:
        parts.append(Part(render(_CONFIG_DUMP, values)))
    return parts


def script(schema: str = DEFAULT_SCHEMA, *, extension: bool = False, upto: Optional[int] = None,
           base: Optional[Path] = None, version: Optional[str] = None, distributed: bool = False) -> str:
    """The whole installation script for ``schema``.

    ``extension``: the flavor for CREATE EXTENSION (config tables marked for
    pg_dump; refuses to run from psql). ``upto``: stop after that migration,
    without the idempotent files (an old installation, for upgrade tests).
    ``distributed``: the flavour for a Citus coordinator (see script_parts).
    """
    return "\n".join(part.text for part in script_parts(
        schema, extension=extension, upto=upto, base=base, version=version, distributed=distributed))


# -- the distributed flavour (Citus) ----------------------------------------------

# Public functions of a bank that stay on the coordinator: they change roles,
# which only the coordinator propagates to the workers (a GRANT of a role run
# on a worker is refused there).
# drop_bank too: it walks the coordinator's catalog for the tables with a
# bank_id and deletes from each, which Citus routes to the bank's shards.
COORDINATOR_FUNCTIONS = ("grant_bank_access", "revoke_bank_access", "grant_curation", "revoke_curation",
                         "drop_bank")
# Public functions whose coordinator side is written by hand in sql/citus/
# (flush_stats(NULL) flushes every bank: one delegated call per bank).
HANDWRITTEN_WRAPPERS = ("flush_stats",)

# A public function whose first argument is the bank: its header, up to the body.
_BANK_FUNCTION = re.compile(
    r"CREATE OR REPLACE FUNCTION \{\{ schema \}\}\.(?P<name>\w+)\("
    r"(?P<args>\s*bank_id text\b[^;]*?)\)\s*\n"
    r"RETURNS (?P<returns>[^;]*?)\n"
    r"LANGUAGE (?P<language>\w+)\n"
    r"(?P<options>(?:(?!AS )[^\n]*\n)*?)"
    r"AS \$",
    re.S,
)


def _volatility(options: str) -> str:
    for word in ("IMMUTABLE", "STABLE"):
        if re.search(rf"^{word}$", options, re.M):
            return word
    return "VOLATILE"


def _table_columns(returns: str) -> Optional[List[_Arg]]:
    """The columns of ``TABLE (...)``; None for a scalar result."""
    m = re.fullmatch(r"TABLE\s*\((.*)\)", returns.strip(), re.S)
    return _parse_args(m.group(1)) if m else None


def _pack(name: str, args: List[_Arg]) -> str:
    """The jsonb the coordinator sends for the arguments after bank_id.

    Types cross as JSON: numbers, text, uuids; timestamps in ISO 8601 (what
    jsonb makes of them, whatever DateStyle either side has); arrays as their
    text form. A jsonb argument that is SQL NULL is left out (a JSON null is
    a value of its own).
    """
    plain, optional = [], []
    for a in args:
        ref = f"{name}.{a.name}"
        if a.type == "jsonb":
            optional.append(f"CASE WHEN {ref} IS NULL THEN '{{}}'::jsonb "
                            f"ELSE jsonb_build_object('{a.name}', {ref}) END")
        elif a.type.endswith("[]"):
            plain.append(f"'{a.name}', {ref}::text")
        else:
            plain.append(f"'{a.name}', {ref}")
    return " || ".join([f"jsonb_build_object({', '.join(plain)})"] + optional)


def _unpack(a: _Arg) -> str:
    if a.type == "jsonb":
        return f"args -> '{a.name}'"
    return f"(args ->> '{a.name}')::{a.type}"


def _delegated_sql(name: str, args: List[_Arg], returns: str, volatility: str, writes: bool,
                   wrapper: bool) -> str:
    """The delegated function of ``name`` and (unless written by hand) its coordinator wrapper."""
    rest = args[1:]
    columns = _table_columns(returns)
    impl = f"{{{{ internal }}}}.{name}_impl"
    call = f"{impl}(bank_id{''.join(', ' + _unpack(a) for a in rest)})"
    if columns is not None:
        result = (f"SELECT coalesce(jsonb_agg(to_jsonb(r) - 'ordinality' ORDER BY r.ordinality), '[]'::jsonb)\n"
                  f"    INTO result\n    FROM {call} WITH ORDINALITY AS r;")
    elif returns.strip() == "void":
        result = f"PERFORM {call};\n    result := '[]'::jsonb;"
    else:
        result = f"SELECT jsonb_build_array(r) INTO result FROM {call} AS r;"
    flush = ("\n    -- Statistics are exact when the call returns: its own rows are applied on\n"
             "    -- the bank's node (a deferred trigger cannot flush them at commit there).\n"
             "    PERFORM _flush_bank(bank_id, TRUE);") if writes else ""
    out = (
        f"CREATE OR REPLACE FUNCTION {{{{ internal }}}}.{name}_delegated(bank_id text, args jsonb)\n"
        f"RETURNS jsonb\nLANGUAGE plpgsql\n{volatility}\nSTRICT\nSECURITY INVOKER\n"
        f"SET search_path = {{{{ search_path }}}}\n"
        f"AS $$\nDECLARE\n    result jsonb;\nBEGIN\n    {result}{flush}\n    RETURN result;\nEND;\n$$;\n\n"
        f"COMMENT ON FUNCTION {{{{ internal }}}}.{name}_delegated(text, jsonb) IS\n"
        f"'Internal (generated, distributed): runs {name} on the node holding the bank; called by "
        f"{name} on the coordinator. STRICT: a NULL bank never reaches the Citus planner.';\n"
    )
    if not wrapper:
        return out
    signature = ", ".join(a.type for a in args)
    header = ",\n    ".join(f"{a.name} {a.type}" + (f" DEFAULT {a.default}" if a.default else "") for a in args)
    if columns is not None:
        ret = ("RETURN QUERY SELECT * FROM jsonb_to_recordset(result) AS x ("
               + ", ".join(f"{c.name} {c.type}" for c in columns) + ");")
    elif returns.strip() == "void":
        ret = "RETURN;"
    elif returns.strip() == "jsonb":
        ret = "RETURN CASE WHEN jsonb_typeof(result -> 0) = 'null' THEN NULL ELSE result -> 0 END;"
    else:
        ret = f"RETURN (result ->> 0)::{returns.strip()};"
    out += (
        f"\nCREATE OR REPLACE FUNCTION {{{{ schema }}}}.{name}(\n    {header}\n)\n"
        f"RETURNS {returns}\nLANGUAGE plpgsql\n{volatility}\nSECURITY INVOKER\n"
        f"SET search_path = {{{{ search_path }}}}\n"
        f"AS $$\nDECLARE\n    result jsonb;\nBEGIN\n"
        f"    -- Checked here, on the coordinator: Citus 13.2 crashes the server planning\n"
        f"    -- a delegated call whose bank is NULL (citusdata/citus#7242).\n"
        f"    PERFORM check_bank_id({name}.bank_id);\n"
        f"    SELECT r INTO result FROM {{{{ internal }}}}.{name}_delegated({name}.bank_id, {_pack(name, rest)}) AS r;\n"
        f"    {ret}\nEND;\n$$;\n\n"
        f"COMMENT ON FUNCTION {{{{ schema }}}}.{name}({signature}) IS\n"
        f"'See {{{{ internal }}}}.{name}_impl (distributed: the call runs on the node holding the bank).';\n"
    )
    return out


def delegate_bank_functions(text: str) -> str:
    """Distributed flavour of an idempotent file: each public function of a bank runs on its node.

    A public function whose first argument is ``bank_id text`` becomes
    ``<internal>.<name>_impl`` (same body: the single-node implementation),
    and two functions are added after it: ``<internal>.<name>_delegated(bank_id,
    args jsonb)``, which Citus delegates to the node holding the bank (it
    calls the implementation there and, for a function that writes, applies
    the call's statistics), and a public ``<name>`` of the original signature
    that checks the bank on the coordinator and calls it. The delegated
    function is STRICT and returns one jsonb: a NULL bank is folded away by
    the planner before Citus plans the delegation, and the other arguments
    travel as one non-NULL value.
    """
    generated: List[str] = []

    def rename(m: re.Match) -> str:
        name = m.group("name")
        if name in COORDINATOR_FUNCTIONS:
            return m.group(0)
        args = _parse_args(m.group("args"))
        volatility = _volatility(m.group("options"))
        generated.append(_delegated_sql(name, args, m.group("returns"), volatility,
                                        writes=volatility == "VOLATILE", wrapper=name not in HANDWRITTEN_WRAPPERS))
        return m.group(0).replace("{{ schema }}." + name + "(", "{{ internal }}." + name + "_impl(", 1)

    body = _BANK_FUNCTION.sub(rename, text)
    for name in re.findall(r"CREATE OR REPLACE FUNCTION \{\{ internal \}\}\.(\w+)_impl\(", body):
        body = _rename_in_body(body, name)
        body = re.sub(r"COMMENT ON FUNCTION \{\{ schema \}\}\." + name + r"\(",
                      "COMMENT ON FUNCTION {{ internal }}." + name + "_impl(", body)
    return body + ("\n-- Distributed (generated by build.delegate_bank_functions)\n\n" + "\n".join(generated)
                   if generated else "")


# A SQL-language function whose body reads a table, up to its body's opening quote.
_SQL_FUNCTION = re.compile(
    r"CREATE OR REPLACE FUNCTION (?P<qual>\{\{ (?:schema|internal) \}\})\.(?P<name>\w+)\("
    r"(?P<args>[^;]*?)\)\s*\n"
    r"RETURNS (?P<returns>[^;]*?)\n"
    r"LANGUAGE sql\n"
    r"(?P<options>(?:(?!AS )[^\n]*\n)*?)"
    r"AS (?P<tag>\$\w*\$)",
    re.S,
)


def sql_functions_to_plpgsql(text: str) -> str:
    """Distributed flavour: a SQL-language function that reads a table becomes PL/pgSQL.

    Citus cannot plan the statement of a SQL-language function that reads a
    distributed table with the function's arguments (XX000 could not create
    distributed plan; "Consider using PL/pgSQL functions instead"). The body
    stays the same statement, returned by ``RETURN QUERY`` (a set) or
    ``RETURN (...)`` (a value); a column of a table wins over an output
    column of the same name, as in SQL.
    """
    out, pos = [], 0
    for m in _SQL_FUNCTION.finditer(text):
        tag = m.group("tag")
        end = text.find(tag, m.end())
        if end < 0:
            raise BuildError(f"unterminated body of {m.group('name')}")
        body = text[m.end():end]
        if not re.search(r"\bFROM\b", body):
            continue  # no table: it may stay inlinable SQL
        statements = split_statements(body)
        if len(statements) != 1:
            raise BuildError(f"{m.group('name')}: a SQL function of one statement is expected, "
                             f"found {len(statements)}")
        returns = m.group("returns").strip()
        columns = _table_columns(returns)
        if columns is not None:
            # RETURN QUERY takes no assignment casts (a SQL function does):
            # each column is cast to its declared type.
            names = ", ".join(f"c{i}" for i in range(1, len(columns) + 1))
            casts = ", ".join(f"x.c{i}::{c.type}" for i, c in enumerate(columns, 1))
            statement = f"RETURN QUERY SELECT {casts} FROM (\n{statements[0]}\n) AS x ({names});"
        elif returns.startswith("SETOF"):
            statement = f"RETURN QUERY\n{statements[0]};"
        else:
            statement = f"RETURN (\n{statements[0]}\n);"
        header = text[m.start():m.end()].replace("\nLANGUAGE sql\n", "\nLANGUAGE plpgsql\n", 1)
        out.append(text[pos:m.start()])
        out.append(f"{header}\n#variable_conflict use_column\nBEGIN\n{statement}\nEND;\n")
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _rename_in_body(text: str, name: str) -> str:
    """In the body of ``<name>_impl``, arguments qualified by the old name (``name.arg``) take the new one."""
    m = re.search(r"CREATE OR REPLACE FUNCTION \{\{ internal \}\}\." + name + r"_impl\(.*?\nAS (\$\w*\$)", text, re.S)
    if m is None:
        raise BuildError(f"cannot find the body of {name}")
    tag = m.group(1)
    end = text.find(tag, m.end())
    if end < 0:
        raise BuildError(f"unterminated body of {name}")
    body = re.sub(r"(?<![\w.])" + name + r"\.", name + "_impl.", text[m.end():end])
    return text[:m.end()] + body + text[end:]


def split_statements(text: str) -> List[str]:
    """The statements of a script, in order, each without its semicolon.

    Citus forwards a DDL statement to the shards as the query string it came
    in, and a string of several statements is refused there (42601): a
    distributed installation sends its script one statement at a time.
    Quotes, dollar quotes and comments are respected; statements that are
    only comments are dropped.
    """
    out: List[str] = []
    start, i, n, code = 0, 0, len(text), False
    while i < n:
        c = text[i]
        if text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        if text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            continue
        if c in "'\"":
            backslash = c == "'" and i > 0 and text[i - 1] in "eE" and (
                i < 2 or not (text[i - 2].isalnum() or text[i - 2] in "_$"))
            i += 1
            while i < n:
                if backslash and text[i] == "\\":
                    i += 2
                    continue
                if text[i] == c:
                    if text.startswith(c * 2, i):
                        i += 2
                        continue
                    break
                i += 1
            i, code = i + 1, True
            continue
        if c == "$" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] in "_$")):
            m = re.match(r"\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$", text[i:])
            if m:
                j = text.find(m.group(0), i + len(m.group(0)))
                if j < 0:
                    raise BuildError(f"unterminated dollar quote {m.group(0)} in the script")
                i, code = j + len(m.group(0)), True
                continue
        if c == ";":
            if code:
                out.append(text[start:i].strip())
            start, code = i + 1, False
        elif not c.isspace():
            code = True
        i += 1
    if code and text[start:].strip():
        out.append(text[start:].strip())
    return out


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
requires = 'plpython3u, pg_trgm, btree_gin'
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
