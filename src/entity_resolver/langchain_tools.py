"""LangChain tools over the resolver: the MCP server's tools, as ``StructuredTool``s.

    from entity_resolver.langchain_tools import resolver_tools
    tools = resolver_tools("postgresql://agent_team@db/app", banks=["team"])
    agent = create_agent(model, tools)          # or llm.bind_tools(tools)

Built from the same typed functions as ``entity-resolver mcp``
(:data:`entity_resolver.tools.TOOLS`): the same names, descriptions, argument
schemas, bank pinning and dry-run defaults, so the two surfaces cannot drift.
A failure is returned to the model as the tool's output (``SQLSTATE 22023:
mention: ...``), as an MCP tool error is. Needs the ``langchain`` extra
(``langchain-core``).
"""

import inspect
from typing import Any, Dict, Iterable, List, Optional, Union

from langchain_core.tools import StructuredTool, ToolException
from pydantic import create_model

from entity_resolver.client import DEFAULT_SCHEMA
from entity_resolver.tools import TOOLS, ToolFailure, Toolbox, ToolSpec, bind


def _args_schema(spec: ToolSpec, fn: Any) -> Any:
    """The pydantic model of the tool's arguments, from its typed signature (as MCP's schema is made)."""
    fields: Dict[str, Any] = {}
    for p in inspect.signature(fn).parameters.values():
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (p.annotation, default)
    return create_model(f"{spec.name}_arguments", **fields)


def _invalid(exc: Exception) -> str:
    """Arguments that do not fit the schema, told to the model as MCP tells them (which argument, why)."""
    return f"invalid arguments: {exc}"


def structured_tool(spec: ToolSpec, toolbox: Toolbox) -> StructuredTool:
    fn = bind(spec, toolbox)

    def run(**kwargs: Any) -> Dict[str, Any]:
        try:
            return fn(**kwargs)
        except ToolFailure as exc:
            raise ToolException(str(exc)) from None

    return StructuredTool(name=spec.name, description=spec.description, args_schema=_args_schema(spec, fn),
                          func=run, handle_tool_error=True, handle_validation_error=_invalid,
                          metadata={"read_only": spec.read_only, "destructive": spec.destructive,
                                    "idempotent": spec.idempotent})


def resolver_tools(source: Union[str, Any, Toolbox], *, schema: str = DEFAULT_SCHEMA,
                   banks: Optional[Iterable[str]] = None) -> List[StructuredTool]:
    """Every resolver tool bound to ``source`` (a DSN, a psycopg connection or pool, or a Toolbox)."""
    toolbox = source if isinstance(source, Toolbox) else Toolbox(source, schema=schema, banks=banks)
    return [structured_tool(spec, toolbox) for spec in TOOLS]
