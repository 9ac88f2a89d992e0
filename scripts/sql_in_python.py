"""Extract the SQL that lives in the PL/Python modules, so that sqlfluff lints it.

`make lint` runs this, then `sqlfluff lint build/sql_in_python`. Every
module-level constant of plpython/*.py whose name starts with ``SQL_`` is a
complete statement (fragments such as probe.py's ``_NEAR_BY_NAME`` are named
otherwise); each becomes build/sql_in_python/<module>__<name>.sql, with the
directory's sqlfluff configuration copied next to it from
scripts/sql_in_python.sqlfluff.

The constants are read with ``ast``, not imported. The modules do import
with the standard library alone today (the unit tests run them), but the lint
should not depend on that nor run module code: a statement's text is all
sqlfluff needs, and the values it is formatted with (lock keys, a separator)
come from other modules and do not matter to a linter. A constant's value is
evaluated from a few expression shapes, and any other shape is an error, so
that a new way of building a statement cannot be skipped silently
(tests/hygiene/test_sql_in_python.py compares the result with the imported
values):

- a string literal;
- ``"... %d ..." % anything``: printf-style formatting, whose right-hand side
  names other modules' values (locks.CREATION, ord(trigrams.SEPARATOR)) that
  ``ast`` cannot see. Only ``%d`` is used; it stands for an integer literal
  and is formatted with 0 (another conversion is an error: it needs its own
  stand-in here, documented);
- ``a + b`` of evaluable operands;
- the name of a string constant assigned earlier in the same module;
- ``x.replace(a, b)`` of evaluable operands (probe.py's by-alias variants).

After evaluation, the catalog tokens db.plan() substitutes at run time
become the jinja variables the sql/ files use for the same values, which the
repository's .sqlfluff renders: ``@trgm@`` (pg_trgm's schema) is
``{{ trgm_schema }}`` (rendered ``public``), ``@collate@`` (entities.
canonical_name's collation) is ``{{ name_collation }}`` (rendered
``pg_catalog."default"``), ``@sim@`` (the trigram index's operator class schema) is
``{{ internal }}``, ``@bank_collate@`` (the COLLATE clause of the probe's bank
condition) is ``{{ bank_collation }}`` (rendered ``COLLATE pg_catalog."C"``).
Templated, because sqlfluff's postgres dialect reads COLLATE's operand as a
column reference (RF01/RF02/RF03 would flag every collation) and ignores
violations in templated text, as it does in sql/.
Parameters ($1, $2, ...) stay: the postgres dialect reads them.

src/entity_resolver/*.py holds no SQL_ constants: its statements are written
inline in functions, mostly psycopg.sql templates around the schema name, and
are not extracted.
"""

from __future__ import annotations

import ast
import re
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = REPO / "plpython"
OUT = REPO / "build" / "sql_in_python"
CONFIG = REPO / "scripts" / "sql_in_python.sqlfluff"

PREFIX = "SQL_"
# The catalog tokens db.plan() replaces, as the jinja variables sql/ uses for
# the same values (rendered by .sqlfluff's [sqlfluff:templater:jinja:context]).
TOKENS = {"@trgm@": "{{ trgm_schema }}", "@collate@": "{{ name_collation }}", "@sim@": "{{ internal }}",
          "@bank_collate@": "{{ bank_collation }}"}
# printf conversions: %% is a literal percent sign; %d an integer (stand-in 0).
_CONVERSION = re.compile(r"%(?:%|[-#0 +]*\d*(?:\.\d+)?([a-zA-Z]))")
INT_STAND_IN = 0


class Unsupported(Exception):
    """A constant built in a way the extractor cannot evaluate without running the module."""


def _format(template: str, where: str) -> str:
    """``template % (...)`` with every %d as INT_STAND_IN."""
    count = 0
    for m in _CONVERSION.finditer(template):
        if m.group(1) is None:
            continue
        if m.group(1) != "d":
            raise Unsupported(f"{where}: %{m.group(1)} has no stand-in (scripts/sql_in_python.py)")
        count += 1
    try:
        return template % ((INT_STAND_IN,) * count)
    except (TypeError, ValueError) as exc:      # e.g. a lone % at the end
        raise Unsupported(f"{where}: {exc}") from None


def _evaluate(node: ast.expr, known: dict[str, str], where: str) -> str:
    """The string value of ``node``, from literals and the module's earlier constants."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return _format(_evaluate(node.left, known, where), where)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _evaluate(node.left, known, where) + _evaluate(node.right, known, where)
    if isinstance(node, ast.Name) and node.id in known:
        return known[node.id]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "replace"
            and len(node.args) == 2 and not node.keywords):
        text = _evaluate(node.func.value, known, where)
        old, new = (_evaluate(a, known, where) for a in node.args)
        if old not in text:
            # str.replace would return the text unchanged: the variant would
            # silently be the base statement.
            raise Unsupported(f"{where}: .replace() finds nothing to replace")
        return text.replace(old, new)
    raise Unsupported(f"{where}: cannot evaluate {ast.unparse(node)!r} without running the module")


def _first_line(node: ast.expr) -> int | None:
    """The module line of the statement's first character, when a literal starts it."""
    while True:
        if isinstance(node, ast.Constant):
            return node.lineno + len(node.value) - len(node.value.lstrip("\n"))
        if isinstance(node, ast.BinOp):
            node = node.left
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        else:
            return None         # starts with another constant: only the assignment's line is known


def statements(path: Path) -> list[tuple[str, int, int | None, str]]:
    """(name, assignment line, first SQL line, SQL text with stand-ins) of each SQL_ constant of ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    known: dict[str, str] = {}
    found = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if not names:
            continue
        where = f"{path.relative_to(REPO)}:{node.lineno} {names[0]}"
        try:
            text = _evaluate(value, known, where)
        except Unsupported:
            if any(n.startswith(PREFIX) for n in names):
                raise
            continue            # not SQL (a number, a tuple...): only needed if a statement uses it
        linted = text
        for token, stand_in in TOKENS.items():
            linted = linted.replace(token, stand_in)
        for name in names:
            known[name] = text
            if name.startswith(PREFIX):
                found.append((name, node.lineno, _first_line(value), linted))
    return found


def extract(sources: Path = SOURCES, out: Path = OUT) -> list[Path]:
    """Write one .sql file per SQL_ constant into ``out`` (emptied first); return them."""
    # Emptied first: a renamed or deleted constant must not leave its file behind.
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    shutil.copyfile(CONFIG, out / ".sqlfluff")
    written = []
    for path in sorted(sources.glob("*.py")):
        for name, line, first, text in statements(path):
            target = out / f"{path.stem}__{name}.sql"
            # A header naming the source, since sqlfluff reports lines of this
            # file (the statement starts on its line 2); and exactly one final
            # newline: where a constant's closing quotes sit says nothing
            # about the statement.
            where = f"line N here is line N{first - 2:+d} there" if first else "composed of earlier constants"
            header = f"-- {path.relative_to(REPO)}:{line} {name}: {where} (scripts/sql_in_python.py)\n"
            target.write_text(header + text.strip("\n") + "\n")
            written.append(target)
    return written


def main() -> int:
    try:
        written = extract()
    except Unsupported as exc:
        print(f"sql_in_python: {exc}", file=sys.stderr)
        return 1
    if not written:
        print(f"sql_in_python: no {PREFIX} constants under {SOURCES}", file=sys.stderr)
        return 1
    print(f"sql_in_python: {len(written)} statements -> {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
