"""Names the build renders into SQL: the schemas and PostgreSQL's quoting of them."""

from __future__ import annotations

import hashlib
import re

EXTENSION = "entity_resolver"
DEFAULT_SCHEMA = "entity_resolver"

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


def quote_ident(name: str) -> str:
    """PostgreSQL's quote_ident for a name we render into SQL text."""
    if re.fullmatch(r"[a-z_][a-z0-9_$]*", name) and name.upper() not in _RESERVED:
        return name
    return '"' + name.replace('"', '""') + '"'


def internal_schema(schema: str) -> str:
    """The schema of the internal functions: <schema>_internal (a digest when that is too long)."""
    name = schema + "_internal"
    if len(name.encode()) <= 63:
        return name
    return "er_" + hashlib.md5(schema.encode()).hexdigest()[:16] + "_internal"
