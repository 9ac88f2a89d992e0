"""PL/Python entry points: written once as a SQL signature whose body names the Python function.

``AS $$ resolve.resolve_mentions_sql $$`` (the marker) is expanded into the
PL/Python function ``<internal>.<name>_py`` (with the module-loading
prologue) and a PL/pgSQL function of the declared name that calls it and
re-raises any error without PL/Python's exception prefix and traceback.
After the expansion :func:`check_expanded` makes sure no marker is left: a
PL/Python function whose body is a marker would install and return NULL.
"""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

from entity_resolver.build.errors import BuildError
from entity_resolver.build.headers import Arg, FunctionHeader, function_headers
from entity_resolver.build.rendering import build_sql, fill
from entity_resolver.build.sources import module_functions

PLPYTHON = "plpython3u"
# The schemas an entry point may be declared in (its _py function goes to the internal one).
EXPANDED_QUALIFIERS = ("{{ schema }}", "{{ internal }}")


def _prologue(code_version_: str, module: str, function: str, args: Sequence[Arg]) -> str:
    call_args = "".join(", " + a.name for a in args)
    return (
        f'\nkey = "entity_resolver:{code_version_}"\n'
        "if key not in GD:\n"
        '    plpy.execute(plpy.prepare("SELECT _load_modules($1)", ["text"]), [key])\n'
        "M = GD[key]\n"
        f'return M["db"].call(plpy, M["{module}"].{function}{call_args})\n'
    )


def _wrapper_statement(returns: str, call: str) -> str:
    if returns.startswith("TABLE") or returns.startswith("SETOF"):
        return f"RETURN QUERY SELECT * FROM {call};"
    if returns.strip() == "void":
        return f"PERFORM {call};"
    return f"RETURN {call};"


def _is_trgm_setting(option: str) -> bool:
    """A SET of a pg_trgm threshold: the PL/Python side's, not the wrapper's."""
    return option.startswith('SET "pg_trgm.')


def _expansion(h: FunctionHeader, module: str, function: str, version: str) -> str:
    """build/sql/entry_point.sql for ``h``: its PL/Python function, and the function of its name."""
    impl = "{{ internal }}." + h.name + "_py"
    impl_args = "\n    " + ",\n    ".join(f"{a.name} {a.type}" for a in h.args) + "\n" if h.args else ""
    return fill(build_sql("entry_point.sql"), {
        "name": h.name,
        "qual": h.qual,
        "args": h.args_text,
        "impl_args": impl_args,
        "types": ", ".join(a.type for a in h.args),
        "returns": h.returns,
        "impl_options": "\n".join(h.options),
        "options": "\n".join(option for option in h.options if not _is_trgm_setting(option)),
        "prologue": _prologue(version, module, function, h.args),
        "statement": _wrapper_statement(h.returns, f"{impl}({', '.join(a.name for a in h.args)})"),
    }).rstrip("\n")


def entry_points(text: str, source: str = "<sql>") -> List[Tuple[FunctionHeader, str, str]]:
    """(header, module, function) of every entry point of ``text``: a PL/Python function with a marker."""
    out = []
    for h in function_headers(text, source):
        marker = h.marker(text)
        if h.language == PLPYTHON and marker is not None:
            out.append((h, marker[0], marker[1]))
    return out


def expand_entry_points(text: str, version: str, source: str = "<sql>") -> str:
    """Expand every PL/Python entry point of an idempotent file (see the module docstring)."""
    out, pos = [], 0
    for h, module, function in entry_points(text, source):
        if h.qual not in EXPANDED_QUALIFIERS:
            continue  # check_expanded names it
        h.check_in_arguments("an entry point")
        out.append(text[pos:h.start])
        out.append(_expansion(h, module, function, version))
        pos = h.end + 1  # the statement's semicolon: the expansion ends with its own
    out.append(text[pos:])
    expanded = "".join(out)
    check_expanded(expanded, source)
    return expanded


def check_expanded(text: str, source: str = "<sql>") -> None:
    """Fail the build if an entry point of ``text`` was left unexpanded (it would install as a no-op)."""
    for h, module, function in entry_points(text, source):
        raise BuildError(f"{source}: entry point {h.qualified_name} ({module}.{function}) was not expanded: "
                         f"an entry point is declared in {' or '.join(EXPANDED_QUALIFIERS)}")


def check_entry_point_targets(sources: Sequence[Tuple[str, str]], modules: Dict[str, str]) -> None:
    """Fail the build if an entry point names a module or function plpython/ does not have."""
    for name, text in sources:
        for h, module, function in entry_points(text, f"sql/{name}"):
            if module not in modules:
                raise BuildError(f"sql/{name}: entry point {h.qualified_name} names module {module!r}, "
                                 f"which plpython/ does not have")
            if function not in module_functions(modules[module]):
                raise BuildError(f"sql/{name}: entry point {h.qualified_name} names {module}.{function}, "
                                 f"which plpython/{module}.py does not define")


