"""The distributed flavour (a Citus coordinator): every public function of a bank runs on its node.

``install --distributed`` runs the script built with ``distributed=True``:
:func:`sql_functions_to_plpgsql` and :func:`delegate_bank_functions` rewrite
each file of sql/, and :func:`check_delegated` makes sure no public function
of a bank is left to run on the coordinator by mistake.
"""

from __future__ import annotations

import re
from typing import List, Sequence, Tuple

from entity_resolver.build.errors import BuildError
from entity_resolver.build.headers import Arg, FunctionHeader, function_headers, table_columns
from entity_resolver.build.lexer import split_statements
from entity_resolver.build.rendering import build_sql, fill

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

PUBLIC = "{{ schema }}"
INTERNAL = "{{ internal }}"


def is_bank_function(h: FunctionHeader) -> bool:
    """A public function whose first argument is the bank (``bank_id text``)."""
    if h.qual != PUBLIC or not h.args or h.args[0].name != "bank_id":
        return False
    if h.args[0].type != "text":
        raise BuildError(f"{h.source}: {h.qualified_name}: bank_id is {h.args[0].type}; a bank is text "
                         f"(the distributed build delegates functions by their first argument, bank_id text)")
    return True


def _pack(name: str, args: Sequence[Arg]) -> str:
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


def _unpack(a: Arg) -> str:
    if a.type == "jsonb":
        return f"args -> '{a.name}'"
    return f"(args ->> '{a.name}')::{a.type}"


def _delegated_function_sql(h: FunctionHeader) -> str:
    """``<internal>.<name>_delegated(bank_id, args jsonb)``: the call on the node holding the bank."""
    name, returns, volatility = h.name, h.returns, h.volatility()
    columns = table_columns(returns)
    call = f"{INTERNAL}.{name}_impl(bank_id{''.join(', ' + _unpack(a) for a in h.args[1:])})"
    if columns is not None:
        result = (f"SELECT coalesce(jsonb_agg(to_jsonb(r) - 'ordinality' ORDER BY r.ordinality), '[]'::jsonb)\n"
                  f"    INTO result\n    FROM {call} WITH ORDINALITY AS r;")
    elif returns.strip() == "void":
        result = f"PERFORM {call};\n    result := '[]'::jsonb;"
    else:
        result = f"SELECT jsonb_build_array(r) INTO result FROM {call} AS r;"
    flush = ("\n    -- Statistics are exact when the call returns: its own rows are applied on\n"
             "    -- the bank's node (a deferred trigger cannot flush them at commit there).\n"
             "    PERFORM _flush_bank(bank_id, TRUE);") if volatility == "VOLATILE" else ""
    return fill(build_sql("delegated.sql"), {"name": name, "volatility": volatility, "result": result,
                                             "flush": flush})


def _coordinator_return(returns: str) -> str:
    """The wrapper's RETURN of the delegated call's jsonb as the declared type."""
    columns = table_columns(returns)
    if columns is not None:
        return ("RETURN QUERY SELECT * FROM jsonb_to_recordset(result) AS x ("
                + ", ".join(f"{c.name} {c.type}" for c in columns) + ");")
    if returns.strip() == "void":
        return "RETURN;"
    if returns.strip() == "jsonb":
        return "RETURN CASE WHEN jsonb_typeof(result -> 0) = 'null' THEN NULL ELSE result -> 0 END;"
    return f"RETURN (result ->> 0)::{returns.strip()};"


def _coordinator_wrapper_sql(h: FunctionHeader) -> str:
    """The public function of the original signature, on the coordinator: checks the bank, delegates."""
    name, args = h.name, h.args
    signature = ", ".join(a.type for a in args)
    header = ",\n    ".join(f"{a.name} {a.type}" + (f" DEFAULT {a.default}" if a.default else "") for a in args)
    return "\n" + fill(build_sql("coordinator_wrapper.sql"), {
        "name": name, "header": header, "signature": signature, "returns": h.returns,
        "volatility": h.volatility(), "packed": _pack(name, args[1:]),
        "return_result": _coordinator_return(h.returns),
    })


def _delegated_sql(h: FunctionHeader) -> str:
    """The delegated function of ``h`` and (unless written by hand) its coordinator wrapper."""
    out = _delegated_function_sql(h)
    if h.name not in HANDWRITTEN_WRAPPERS:
        out += _coordinator_wrapper_sql(h)
    return out


def _as_implementation(text: str, h: FunctionHeader) -> str:
    """The statement of ``h`` as ``<internal>.<name>_impl``: arguments qualified by the old name take the new."""
    header = text[h.start:h.name_start] + f"{INTERNAL}.{h.name}_impl" + text[h.name_end:h.body_start]
    body = re.sub(r"(?<![\w.])" + h.name + r"\.", h.name + "_impl.", h.body(text))
    return header + body


def _delegated_functions(text: str, source: str) -> List[FunctionHeader]:
    return [h for h in function_headers(text, source)
            if is_bank_function(h) and h.name not in COORDINATOR_FUNCTIONS]


def delegate_bank_functions(text: str, source: str = "<sql>") -> str:
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
    out, pos, generated = [], 0, []
    delegated = _delegated_functions(text, source)
    for h in delegated:
        h.check_in_arguments("a function delegated to the bank's node")
        out.append(text[pos:h.start])
        out.append(_as_implementation(text, h))
        pos = h.body_end
        generated.append(_delegated_sql(h))
    out.append(text[pos:])
    body = "".join(out)
    for h in delegated:
        body = re.sub(r"COMMENT\s+ON\s+FUNCTION\s+\{\{ schema \}\}\." + h.name + r"\s*\(",
                      "COMMENT ON FUNCTION {{ internal }}." + h.name + "_impl(", body)
    body += ("\n-- Distributed (generated by build.delegate_bank_functions)\n\n" + "\n".join(generated)
             if generated else "")
    check_delegated(body, source)
    return body


def check_delegated(text: str, source: str = "<sql>") -> None:
    """Fail the build if a public function of a bank in ``text`` would run on the coordinator.

    Each one (but the coordinator's own, COORDINATOR_FUNCTIONS, and those
    whose wrapper sql/citus/ writes, HANDWRITTEN_WRAPPERS) must call its
    ``<name>_delegated``, and ``text`` must define that and ``<name>_impl``.
    """
    headers = function_headers(text, source)
    internal = {h.name for h in headers if h.qual == INTERNAL}
    for h in headers:
        if not is_bank_function(h) or h.name in COORDINATOR_FUNCTIONS + HANDWRITTEN_WRAPPERS:
            continue
        missing = [f for f in (f"{h.name}_delegated", f"{h.name}_impl") if f not in internal]
        if f"{INTERNAL}.{h.name}_delegated(" not in h.body(text) or missing:
            raise BuildError(f"{source}: {h.qualified_name} is a public function of a bank but is not "
                             f"delegated to the bank's node on Citus"
                             + (f" (no {', '.join(missing)})" if missing else ""))


def check_handwritten_wrappers(citus_sources: Sequence[Tuple[str, str]]) -> None:
    """Fail the build if a wrapper HANDWRITTEN_WRAPPERS promises is not in sql/citus/ (or does not delegate)."""
    written = {h.name: (h, text) for name, text in citus_sources
               for h in function_headers(text, f"sql/{name}") if h.qual == PUBLIC}
    for name in HANDWRITTEN_WRAPPERS:
        if name not in written or f"{name}_delegated(" not in written[name][0].body(written[name][1]):
            raise BuildError(f"sql/citus/ has no {PUBLIC}.{name} calling {name}_delegated, which "
                             f"HANDWRITTEN_WRAPPERS says is written there")


def sql_functions_to_plpgsql(text: str, source: str = "<sql>") -> str:
    """Distributed flavour: a SQL-language function that reads a table becomes PL/pgSQL.

    Citus cannot plan the statement of a SQL-language function that reads a
    distributed table with the function's arguments (XX000 could not create
    distributed plan; "Consider using PL/pgSQL functions instead"). The body
    stays the same statement, returned by ``RETURN QUERY`` (a set) or
    ``RETURN (...)`` (a value); a column of a table wins over an output
    column of the same name, as in SQL.
    """
    out, pos = [], 0
    for h in function_headers(text, source):
        if h.language != "sql" or not re.search(r"\bFROM\b", h.body(text)):
            continue  # no table: it may stay inlinable SQL
        out.append(text[pos:h.start])
        out.append(text[h.start:h.language_start] + "LANGUAGE plpgsql" + text[h.language_end:h.body_start])
        out.append(f"\n#variable_conflict use_column\nBEGIN\n{_plpgsql_statement(h, text)}\nEND;\n")
        pos = h.body_end
    out.append(text[pos:])
    return "".join(out)


def _plpgsql_statement(h: FunctionHeader, text: str) -> str:
    """The one statement of a SQL function's body, as PL/pgSQL returns it."""
    if h.tag == "'":
        raise BuildError(f"{h.source}: {h.name}: the distributed build rewrites a dollar-quoted body only")
    statements = split_statements(h.body(text))
    if len(statements) != 1:
        raise BuildError(f"{h.source}: {h.name}: a SQL function of one statement is expected, "
                         f"found {len(statements)}")
    returns = h.returns.strip()
    columns = table_columns(returns)
    if columns is not None:
        # RETURN QUERY takes no assignment casts (a SQL function does):
        # each column is cast to its declared type.
        names = ", ".join(f"c{i}" for i in range(1, len(columns) + 1))
        casts = ", ".join(f"x.c{i}::{c.type}" for i, c in enumerate(columns, 1))
        return f"RETURN QUERY SELECT {casts} FROM (\n{statements[0]}\n) AS x ({names});"
    if returns.startswith("SETOF"):
        return f"RETURN QUERY\n{statements[0]};"
    return f"RETURN (\n{statements[0]}\n);"
