"""``entity-resolver mcp``: a Model Context Protocol server over the resolver.

Built on the official ``mcp`` SDK (the ``mcp`` extra: ``pip install
'pg-entity-resolver[mcp]'``). Every tool is one of :data:`entity_resolver.tools.TOOLS`,
a thin call of one SQL function through the client; the server keeps no state
of its own (a small connection pool). It connects as the role it is given, so
row-level security (``grant_bank_access``) and curation (``grant_curation``)
are the guard; ``banks`` pins the banks it serves on top of that. See
docs/agents.md.
"""

import ipaddress
from typing import Any, Dict, Iterable, Optional

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from entity_resolver import __version__
from entity_resolver.client import DEFAULT_SCHEMA
from entity_resolver.tools import TOOLS, ToolFailure, Toolbox, bind

INSTRUCTIONS = """\
entity_resolver decides which entity a name in an agent's memory stands for.
Look up a mention with its context (lookup, explain) before trusting it; store facts
with retain. Repairs (merge, split, rename, alias, unalias, undo) are dry runs unless
called with apply: true: read the plan first; an applied repair returns the
operation_id that undo takes. Errors carry the database's SQLSTATE and message."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (localhost, 127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _tool_error(fn):
    """The tool with a ToolFailure raised as the SDK's ToolError: a tool result with isError, not a crash."""
    import functools

    @functools.wraps(fn)
    def call(**kwargs: Any) -> Dict[str, Any]:
        try:
            return fn(**kwargs)
        except ToolFailure as exc:
            raise ToolError(str(exc)) from None

    return call


def build_server(toolbox: Toolbox) -> MCPServer:
    """An MCP server with every tool bound to ``toolbox``."""
    server = MCPServer("entity-resolver", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    for spec in TOOLS:
        server.add_tool(
            _tool_error(bind(spec, toolbox)),
            name=spec.name,
            description=spec.description,
            annotations=ToolAnnotations(
                read_only_hint=spec.read_only,
                destructive_hint=spec.destructive,
                idempotent_hint=spec.idempotent,
                open_world_hint=False,
            ),
        )
    return server


def serve(dsn: str, *, schema: str = DEFAULT_SCHEMA, banks: Optional[Iterable[str]] = None,
          http: Optional[str] = None) -> None:
    """Run the server until its client goes away (stdio) or it is interrupted (``http``: HOST:PORT)."""
    toolbox = Toolbox(dsn, schema=schema, banks=banks)
    try:
        toolbox.source.wait(timeout=30)   # a database that cannot be reached fails now, not at the first call
        server = build_server(toolbox)
        if http is None:
            server.run("stdio")
        else:
            host, port = parse_host_port(http)
            server.run("streamable-http", host=host, port=port)
    finally:
        toolbox.close()


def parse_host_port(text: str):
    """HOST:PORT (an IPv6 host in brackets) as (host, port); ValueError otherwise."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--http: expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)
