"""``entity-resolver mcp``: the SDK's own client drives the server in a subprocess.

Over stdio (and once over streamable HTTP) against the test database: the tool
list (names, required arguments, annotations) is pinned, and an agent's session
runs: retain the two Alexes, look up and explain a bare "Alex", merge in dry run
(nothing written), merge applied, history, undo; a call outside the pinned
banks and a bad argument are tool errors that change nothing.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install -e '.[mcp]')")

import anyio  # noqa: E402  (a dependency of mcp)
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from entity_resolver.client import Client  # noqa: E402
from shared import dsn_of

BIN = Path(sys.executable).parent / "entity-resolver"
STORY = json.loads((Path(__file__).parents[2] / "src/entity_resolver/demo_story.json").read_text())
LOOKUPS = {"lookup", "explain", "find_entities", "entity_facts", "neighbors", "history", "review"}
REPAIRS = {"merge", "split", "rename", "alias", "unalias", "undo", "mark_distinct", "reresolve"}
TOOLS = LOOKUPS | {"retain"} | REPAIRS
REQUIRED = {
    "lookup": ["bank_id", "mention"], "explain": ["bank_id", "mention"], "find_entities": ["bank_id", "name"],
    "entity_facts": ["bank_id", "entity"], "neighbors": ["bank_id", "name"], "history": ["bank_id"],
    "review": ["bank_id"],
    "retain": ["bank_id", "mentions"], "merge": ["bank_id", "sources", "into"],
    "split": ["bank_id", "entity", "facts", "new_name"], "rename": ["bank_id", "entity", "new_name"],
    "alias": ["bank_id", "entity", "alias"], "unalias": ["bank_id", "alias"], "undo": ["bank_id", "operation_id"],
    "mark_distinct": ["bank_id", "a", "b"], "reresolve": ["bank_id"],
}


def snapshot(conn, bank: str) -> dict:
    out = {}
    for table in ("entities", "mentions", "unit_entities", "entity_aliases", "entity_forwards", "operations",
                  "facts", "entity_cooccurrences"):
        out[table] = sorted(r[0] for r in conn.execute(
            f"SELECT t::text FROM entity_resolver.{table} AS t WHERE t.bank_id = %s", (bank,)))
    return out


def run_session(params: StdioServerParameters, session_fn):
    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await session_fn(session)
    return anyio.run(main)


def result_json(result):
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def error_text(result) -> str:
    assert result.is_error, result.content
    return result.content[0].text


def server_params(conn, *banks: str) -> StdioServerParameters:
    args = ["mcp", "--dsn", dsn_of(conn)]
    for b in banks:
        args += ["--bank", b]
    return StdioServerParameters(command=str(BIN), args=args)


async def _list(session):
    return (await session.list_tools()).tools


def test_the_tools_their_required_arguments_and_annotations(conn):
    tools = {t.name: t for t in run_session(server_params(conn, "team"), _list)}
    assert set(tools) == TOOLS
    for name, tool in tools.items():
        assert sorted(tool.input_schema.get("required", [])) == sorted(REQUIRED[name]), name
        a = tool.annotations
        assert a.read_only_hint is (name in LOOKUPS), name
        assert a.destructive_hint is (name in REPAIRS), name
        assert a.idempotent_hint is (name in LOOKUPS), name
        assert a.open_world_hint is False
        assert tool.description
        if name in REPAIRS:
            # Dry run by default: apply is optional and false.
            assert tool.input_schema["properties"]["apply"]["default"] is False, name
    # Lists are lists in the schema (a single string is also taken: the session shows it).
    assert tools["merge"].input_schema["properties"]["sources"]["type"] == "array"


def test_an_agents_session_over_stdio(conn):
    facts = [f for f in STORY["facts"] if any(m.startswith("Alex") for m in f["mentions"])][:3]

    async def session_fn(s):
        out = {}
        for f in facts:
            r = result_json(await s.call_tool("retain", {
                "bank_id": "team", "mentions": f["mentions"], "content": f["content"],
                "event_date": f["when"], "fact_id": f["fact_id"]}))
            assert r["fact_id"]
        out["lookup_acme"] = result_json(await s.call_tool(
            "lookup", {"bank_id": "team", "mention": "Alex", "nearby": ["Acme", "renewal"]}))
        out["lookup_react"] = result_json(await s.call_tool(
            "lookup", {"bank_id": "team", "mention": "Alex", "nearby": "React"}))   # one string for a list
        out["explain"] = result_json(await s.call_tool(
            "explain", {"bank_id": "team", "mention": "Alex", "nearby": ["Acme"]}))
        out["find"] = result_json(await s.call_tool("find_entities", {"bank_id": "team", "name": "alex"}))
        out["facts"] = result_json(await s.call_tool("entity_facts", {"bank_id": "team", "entity": "Alex Morgan"}))
        before = snapshot(conn, "team")
        out["dry"] = result_json(await s.call_tool(
            "merge", {"bank_id": "team", "sources": "Alex Kim", "into": "Alex Morgan"}))
        assert snapshot(conn, "team") == before
        out["dry_rename"] = result_json(await s.call_tool(
            "rename", {"bank_id": "team", "entity": "Alex Kim", "new_name": "Alexandra Kim"}))
        assert snapshot(conn, "team") == before
        out["merged"] = result_json(await s.call_tool(
            "merge", {"bank_id": "team", "sources": ["Alex Kim"], "into": "Alex Morgan", "reason": "test",
                      "apply": True}))
        out["after_merge"] = snapshot(conn, "team")
        out["history"] = result_json(await s.call_tool("history", {"bank_id": "team"}))
        op = out["merged"]["operation_id"]
        out["undo_dry"] = result_json(await s.call_tool("undo", {"bank_id": "team", "operation_id": op}))
        assert snapshot(conn, "team") == out["after_merge"]
        out["undone"] = result_json(await s.call_tool(
            "undo", {"bank_id": "team", "operation_id": op, "apply": True}))
        out["after_undo"] = snapshot(conn, "team")
        # Errors: another bank, a bad argument, an unknown entity, a bad type.
        out["other_bank"] = error_text(await s.call_tool(
            "retain", {"bank_id": "other", "mentions": ["Bea"]}))
        out["blank"] = error_text(await s.call_tool("lookup", {"bank_id": "team", "mention": "  "}))
        out["unknown"] = error_text(await s.call_tool(
            "merge", {"bank_id": "team", "sources": ["Nobody"], "into": "Alex Morgan", "apply": True}))
        out["not_int"] = error_text(await s.call_tool(
            "undo", {"bank_id": "team", "operation_id": "first", "apply": True}))
        out["still_up"] = result_json(await s.call_tool("history", {"bank_id": "team"}))
        return out

    out = run_session(server_params(conn, "team"), session_fn)
    er = Client(conn)
    morgan, kim = er.entity_id("team", "Alex Morgan"), er.entity_id("team", "Alex Kim")
    assert out["lookup_acme"]["entity_id"] == str(morgan) and out["lookup_acme"]["decision"] == "resolved"
    assert out["lookup_react"]["entity_id"] == str(kim)
    assert out["explain"]["resolves_to"]["canonical_name"] == "Alex Morgan"
    assert {c["canonical_name"] for c in out["explain"]["candidates"]} >= {"Alex Morgan", "Alex Kim"}
    assert [e["canonical_name"] for e in out["find"]["entities"]] == ["Alex Morgan", "Alex Kim"]
    assert {f["content"] for f in out["facts"]["facts"]} == {f["content"] for f in STORY["facts"][1:4]
                                                             if "Alex Morgan" in f["mentions"]}
    assert out["dry"]["dry_run"] is True and out["dry"]["operation_id"] is None
    assert out["dry_rename"]["dry_run"] is True and out["dry_rename"]["operation_id"] is None
    assert out["merged"]["operation_id"] and out["merged"]["dry_run"] is False
    assert out["history"]["operations"][0]["operation_id"] == out["merged"]["operation_id"]
    assert out["history"]["operations"][0]["reason"] == "test"
    assert out["undo_dry"]["dry_run"] is True
    assert out["undone"]["operation_id"] == out["merged"]["operation_id"]
    assert out["after_merge"]["entity_forwards"] and not out["after_undo"]["entity_forwards"]
    assert out["other_bank"].endswith("'other' is not a bank this server serves (it serves team)")
    assert "SQLSTATE 22023: mention: must not be empty or blank" in out["blank"]
    assert "sources: bank 'team' has no entity named 'Nobody'" in out["unknown"]
    assert "operation_id" in out["not_int"]
    assert out["still_up"]["operations"][0]["undone_at"] is not None
    assert conn.execute("SELECT count(*) FROM entity_resolver.banks WHERE bank_id = 'other'").fetchone()[0] == 0
    assert len(out["after_undo"]["operations"]) == 1   # the merge, undone; the errors wrote nothing


def test_a_database_error_is_a_tool_error_with_its_sqlstate(conn):
    conn.execute("CREATE ROLE er_mcp_reader LOGIN")
    try:
        conn.execute("SELECT entity_resolver.grant_bank_access('team', 'er_mcp_reader')")
        Client(conn).retain("team", ["Alex Kim", "React"])
        i = conn.info
        params = StdioServerParameters(command=str(BIN), args=[
            "mcp", "--dsn", f"host={i.host} port={i.port} user=er_mcp_reader dbname={i.dbname}"])

        async def session_fn(s):
            ok = result_json(await s.call_tool("lookup", {"bank_id": "team", "mention": "Alex Kim"}))
            refused = error_text(await s.call_tool(
                "rename", {"bank_id": "team", "entity": "Alex Kim", "new_name": "A. Kim", "apply": True}))
            other = result_json(await s.call_tool("find_entities", {"bank_id": "elsewhere", "name": "A"}))
            return ok, refused, other

        ok, refused, other = run_session(params, session_fn)
        assert ok["canonical_name"] == "Alex Kim"
        assert refused.startswith("Error executing tool rename: SQLSTATE 42501:"), refused
        assert other == {"entities": []}       # row-level security: no other bank is visible
        assert conn.execute("SELECT count(*) FROM entity_resolver.entities WHERE canonical_name = 'A. Kim'"
                            ).fetchone()[0] == 0
    finally:
        conn.execute("DROP OWNED BY er_mcp_reader")
        conn.execute("DROP ROLE er_mcp_reader")


def test_http_refuses_a_non_loopback_host_without_allow_remote(conn):
    r = subprocess.run([str(BIN), "mcp", "--dsn", dsn_of(conn), "--http", "0.0.0.0:8765"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "not a loopback address" in r.stderr and "--allow-remote" in r.stderr
    r = subprocess.run([str(BIN), "mcp", "--dsn", dsn_of(conn), "--http", "nonsense"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "HOST:PORT" in r.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_call_over_streamable_http(conn):
    from mcp.client.streamable_http import streamable_http_client

    Client(conn).retain("team", ["Alex Kim", "React"])
    port = _free_port()
    proc = subprocess.Popen([str(BIN), "mcp", "--dsn", dsn_of(conn), "--http", f"127.0.0.1:{port}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode()
                assert time.monotonic() < deadline, "the server did not listen"
                time.sleep(0.2)

        async def main():
            async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as streams:
                async with ClientSession(streams[0], streams[1]) as s:
                    await s.initialize()
                    return result_json(await s.call_tool("lookup", {"bank_id": "team", "mention": "alex kim"}))

        assert anyio.run(main)["canonical_name"] == "Alex Kim"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_mark_distinct_is_a_dry_run_unless_applied(conn):
    Client(conn).retain("team", ["Alex Kim", "React"])
    Client(conn).retain("team", ["Alex Morgan", "Acme"])

    async def session_fn(s):
        before = snapshot(conn, "team")
        dry = result_json(await s.call_tool("mark_distinct", {"bank_id": "team", "a": "Alex Kim", "b": "Alex Morgan"}))
        assert snapshot(conn, "team") == before
        done = result_json(await s.call_tool(
            "mark_distinct", {"bank_id": "team", "a": "Alex Kim", "b": "Alex Morgan", "apply": True}))
        return dry, done

    dry, done = run_session(server_params(conn, "team"), session_fn)
    assert dry.get("dry_run") is True
    assert done.get("operation_id")


def test_review_lists_an_over_merge_with_its_dry_run_fix(conn):
    er = Client(conn)
    er.retain("team", ["Alex Kim", "React"])
    er.retain("team", ["Priya", "Acme"])
    er.merge("team", ["Priya"], "Alex Kim")

    async def session_fn(s):
        return result_json(await s.call_tool("review", {"bank_id": "team"}))

    items = run_session(server_params(conn, "team"), session_fn)["items"]
    over = [i for i in items if i["kind"] == "likely_over_merge"]
    assert over and "split_entity" in over[0]["fix"] and "dry_run => true" in over[0]["fix"], items


def test_reresolve_is_a_dry_run_unless_applied(conn):
    for date, mentions in (("2026-01-01", ["Alex", "React"]), ("2026-03-01", ["Alex Kim", "React", "Sprint 14"]),
                           ("2026-03-02", ["Alex Kim", "React", "Priya"])):
        conn.execute("INSERT INTO entity_resolver.facts (bank_id, mentions, event_date) VALUES ('team', %s, %s)",
                     (json.dumps(mentions), date))

    async def session_fn(s):
        before = snapshot(conn, "team")
        dry = result_json(await s.call_tool("reresolve", {"bank_id": "team"}))
        assert snapshot(conn, "team") == before
        done = result_json(await s.call_tool("reresolve", {"bank_id": "team", "entities": "Alex", "apply": True}))
        return dry, done

    dry, done = run_session(server_params(conn, "team"), session_fn)
    assert dry["dry_run"] is True and [m["to"]["name"] for m in dry["moves"]] == ["Alex Kim"]
    assert done["dry_run"] is False and done["operation_id"] and len(done["moves"]) == 1


def test_an_agent_tells_two_namesakes_apart_by_their_attributes(conn):
    async def session_fn(s):
        await s.call_tool("retain", {"bank_id": "crm", "mentions": [
            {"text": "Maria Schmidt", "type": "person",
             "attributes": {"birth_date": "1961-05-03", "email": "maria@acme.example"}}, "Berlin office"]})
        await s.call_tool("retain", {"bank_id": "crm", "mentions": [
            {"text": "Maria Schmidt", "type": "person", "attributes": {"birth_date": "1990-11-20"}}, "order 4411"]})
        by_email = result_json(await s.call_tool("lookup", {"bank_id": "crm", "mention": "M. Schmidt",
                                                            "attributes": {"email": "MARIA@acme.example"}}))
        by_date = result_json(await s.call_tool("explain", {"bank_id": "crm", "mention": "Maria Schmidt",
                                                            "attributes": {"birth_date": "1990-11-20"}}))
        return by_email, by_date

    by_email, by_date = run_session(server_params(conn, "crm"), session_fn)
    ids = dict(conn.execute("SELECT m.attributes->>'birth_date', m.entity_id::text FROM entity_resolver.mentions m"
                            " WHERE bank_id = 'crm' AND mention = 'Maria Schmidt'").fetchall())
    assert len(set(ids.values())) == 2
    assert by_email["entity_id"] == ids["1961-05-03"] and by_email["decision"] == "identifier"
    assert by_date["resolves_to"]["candidate_id"] == ids["1990-11-20"]
    assert {c["decision"] for c in by_date["candidates"]} == {"chosen", "attribute_conflict"}
