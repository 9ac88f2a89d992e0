"""The LangChain recipe (docs/agents.md): StructuredTools made from the same
typed functions as the MCP server's tools, so the two cannot drift."""

from __future__ import annotations

import anyio
import pytest

pytest.importorskip("langchain_core", reason="the langchain extra is not installed (pip install -e '.[langchain]')")
pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install -e '.[mcp]')")

from entity_resolver.client import Client  # noqa: E402
from entity_resolver.langchain_tools import resolver_tools  # noqa: E402
from entity_resolver.mcp_server import build_server  # noqa: E402
from entity_resolver.tools import Toolbox  # noqa: E402


def _strip(schema: dict) -> dict:
    """What a model reads of an argument schema: properties (types, defaults, descriptions) and required."""
    props = {k: {x: y for x, y in v.items() if x != "title"} for k, v in schema["properties"].items()}
    return {"properties": props, "required": sorted(schema.get("required", []))}


def test_the_langchain_tools_are_the_mcp_tools(conn):
    toolbox = Toolbox(conn, banks=["team"])
    lc = {t.name: t for t in resolver_tools(toolbox)}
    mcp_tools = {t.name: t for t in anyio.run(build_server(toolbox).list_tools)}
    assert set(lc) == set(mcp_tools)
    for name, tool in lc.items():
        assert tool.description == mcp_tools[name].description, name
        assert _strip(tool.args_schema.model_json_schema()) == _strip(mcp_tools[name].input_schema), name
        assert tool.metadata["read_only"] is mcp_tools[name].annotations.read_only_hint


def test_a_langchain_agent_calls_the_resolver(conn):
    tools = {t.name: t for t in resolver_tools(conn, banks=["team"])}
    tools["retain"].invoke({"bank_id": "team", "mentions": ["Alex Kim", "React"], "content": "Alex Kim on React."})
    tools["retain"].invoke({"bank_id": "team", "mentions": ["Alex Morgan", {"text": "Acme", "type": "organization"}]})
    found = tools["lookup"].invoke({"bank_id": "team", "mention": "Alex", "nearby": "React"})
    assert found["canonical_name"] == "Alex Kim"
    plan = tools["merge"].invoke({"bank_id": "team", "sources": "Alex Kim", "into": "Alex Morgan"})
    assert plan["dry_run"] is True and Client(conn).find_entity("team", "Alex Kim") is not None
    # Failures come back to the model as the tool's output, and write nothing.
    assert tools["lookup"].invoke({"bank_id": "team", "mention": ""}) == \
        "SQLSTATE 22023: mention: must not be empty or blank"
    assert "not a bank this server serves" in tools["history"].invoke({"bank_id": "other"})
    assert "operation_id" in tools["undo"].invoke({"bank_id": "team", "operation_id": "last"})
    assert Client(conn).history("team") == []
