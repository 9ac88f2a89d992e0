"""Templates: ``{{ name }}`` tokens rendered at build time, or kept for the target database.

``{{ schema }}``, ``{{ internal }}``, ``{{ search_path }}``, ``{{ code_version }}``
and the other static values are rendered here; ``{{ trgm_schema }}`` and
``{{ name_collation }}`` depend on the target database (where pg_trgm lives,
its locale) and are rendered there, at run time, by ``_install_render``
(build/sql/installer.sql).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, Iterable, Optional

from entity_resolver.build.errors import BuildError
from entity_resolver.build.names import internal_schema, quote_ident
from entity_resolver.build.sources import bank_lock_class, code_version

RUNTIME_TOKENS = ("trgm_schema", "name_collation")

# The installers' advisory lock (the script takes it first; install.py too).
INSTALL_LOCK = 7_310_447_224_051

# The SQL of the build itself (not sources of the installer's sql/ list).
BUILD_SQL = Path(__file__).resolve().parent / "sql"


# A template's comment for its reader ({# ... #} on lines of its own, as
# sqlfluff's jinja templater reads it): not part of what the build writes.
_TEMPLATE_COMMENT = re.compile(r"^[ \t]*\{#.*?#\}[ \t]*\n", re.M | re.S)


def build_sql(name: str) -> str:
    """One of the build's own SQL files (build/sql/<name>, linted by make lint), its {# comments #} left out."""
    return _TEMPLATE_COMMENT.sub("", (BUILD_SQL / name).read_text(encoding="utf-8"))


def fill(template: str, values: Dict[str, str]) -> str:
    """A template of build/sql/ with ``values`` in; the script's tokens stay for :func:`render`."""
    return _TOKEN.sub(lambda m: values.get(m.group(1), m.group(0)), template)


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
