"""A picture of a bank: entity_graph (JSON against the tables), and the
``entity-resolver graph`` pictures: HTML opened in headless Chromium (the DOM
after its script ran lists the nodes), SVG parsed as XML, PNG by its signature.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
import xml.etree.ElementTree as ET
from collections import Counter

import psycopg
import pytest
from typer.testing import CliRunner

from entity_resolver.cli import app
from entity_resolver.client import Client
from entity_resolver.demo import play
from shared import SCHEMA as ER, dsn_of

CLEAN_ENV = {"ENTITY_RESOLVER_DSN": None, "ENTITY_RESOLVER_SCHEMA": None, "COLUMNS": "200"}
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DOT = shutil.which("dot")


@pytest.fixture
def demo(conn):
    """The demo's bank: the two Alexes' story (its "user" digest is a hub of 20 partners)."""
    play(conn, ER, "demo")
    return Client(conn)


def graph(conn, bank, around=None, depth=1, max_nodes=200):
    return conn.execute(f"SELECT {ER}.entity_graph(%s, %s, %s, %s)", (bank, around, depth, max_nodes)).fetchone()[0]


def partners(conn, bank, entity_id) -> Counter:
    return Counter(dict(conn.execute(
        f"SELECT CASE WHEN entity_id_1 = %s THEN entity_id_2 ELSE entity_id_1 END::text, cooccurrence_count"
        f"  FROM {ER}.entity_cooccurrences WHERE bank_id = %s AND %s IN (entity_id_1, entity_id_2)"
        "   AND cooccurrence_count > 0", (entity_id, bank, entity_id)).fetchall()))


def test_around_an_entity_the_nodes_and_edges_are_the_tables(conn, demo):
    morgan = demo.entity_id("demo", "Alex Morgan")
    g = graph(conn, "demo", morgan)
    ids = [n["id"] for n in g["nodes"]]
    assert ids[0] == str(morgan) and g["around"] == str(morgan) and g["truncated"] is False
    assert set(ids[1:]) == set(partners(conn, "demo", morgan))
    overview = {str(r[0]): r[1:] for r in conn.execute(
        f"SELECT entity_id, name, mention_count, degree FROM {ER}.entity_overview WHERE bank_id = 'demo'")}
    for n in g["nodes"]:
        assert (n["name"], n["mention_count"], n["degree"]) == overview[n["id"]]
        assert n["hub"] is (n["degree"] >= 25) and n["recently_corrected"] is False
    pairs = {(str(a), str(b)): c for a, b, c in conn.execute(
        f"SELECT entity_id_1, entity_id_2, cooccurrence_count FROM {ER}.entity_cooccurrences"
        " WHERE bank_id = 'demo' AND cooccurrence_count > 0")}
    expected = {k: c for k, c in pairs.items() if k[0] in ids and k[1] in ids}
    assert {(e["a"], e["b"]): e["cooccurrence_count"] for e in g["edges"]} == expected
    # Depth 2 reaches the partners' partners; without an entity, the most mentioned.
    kim = demo.entity_id("demo", "Alex Kim")
    near = {n["id"] for n in graph(conn, "demo", kim)["nodes"]}
    deeper = {n["id"] for n in graph(conn, "demo", kim, depth=2)["nodes"]}
    two_hops = near | {p for i in near for p in partners(conn, "demo", i)}
    assert deeper == two_hops and len(deeper) > len(near)
    busiest = graph(conn, "demo", max_nodes=3)
    top = [str(r[0]) for r in conn.execute(f"SELECT id FROM {ER}.entities WHERE bank_id = 'demo'"
                                           " ORDER BY mention_count DESC, id LIMIT 3")]
    assert [n["id"] for n in busiest["nodes"]] == top and busiest["truncated"] is True and busiest["around"] is None


def test_max_nodes_keeps_the_strongest_neighbours_and_says_it_truncated(conn, demo):
    er = demo
    for _ in range(3):
        er.retain("demo", ["Alex Morgan", "Acme"])
    morgan = er.entity_id("demo", "Alex Morgan")
    g = graph(conn, "demo", morgan, max_nodes=2)
    assert [n["name"] for n in g["nodes"]] == ["Alex Morgan", "Acme"] and g["truncated"] is True
    assert len(g["edges"]) == 1


def test_hubs_and_recent_corrections_are_flagged(conn, demo):
    er = demo
    for i in range(25):
        er.retain("demo", ["Wren", f"topic {i}"])
    er.merge("demo", ["Alex Kim"], "Alex Morgan")
    g = graph(conn, "demo", max_nodes=2000)
    by_name = {n["name"]: n for n in g["nodes"]}
    assert by_name["Wren"]["hub"] is True and by_name["Wren"]["degree"] == 25
    assert by_name["topic 1"]["hub"] is False
    assert by_name["Alex Morgan"]["recently_corrected"] is True
    assert by_name["Acme"]["recently_corrected"] is False
    # An id merged away stands for the entity it became.
    kim = conn.execute(f"SELECT old_id FROM {ER}.entity_forwards WHERE bank_id = 'demo'").fetchone()[0]
    assert graph(conn, "demo", kim)["around"] == str(er.entity_id("demo", "Alex Morgan"))


@pytest.mark.parametrize(("args", "sqlstate", "argument"), [
    ((None, None, 1, 10), "22004", "bank_id"),
    (("demo", "random", 1, 10), "22023", "around_entity"),
    (("demo", None, 0, 10), "22023", "depth"),
    (("demo", None, 6, 10), "22023", "depth"),
    (("demo", None, 1, 0), "22023", "max_nodes"),
    (("demo", None, None, 10), "22023", "depth"),
    (("demo", None, 1, 2001), "22023", "max_nodes"),
])
def test_bad_arguments_are_refused_naming_the_argument(conn, demo, args, sqlstate, argument):
    bank, around, depth, max_nodes = args
    with pytest.raises(psycopg.Error) as err:
        graph(conn, bank, uuid.uuid4() if around == "random" else around, depth, max_nodes)
    assert err.value.sqlstate == sqlstate
    assert err.value.diag.message_primary.startswith(argument + ":")


def test_a_bank_user_sees_no_other_bank_in_the_graph(conn, demo):
    conn.execute("CREATE ROLE er_graph_reader LOGIN")
    try:
        conn.execute(f"SELECT {ER}.grant_bank_access('mine', 'er_graph_reader')")
        i = conn.info
        with psycopg.connect(host=i.host, port=i.port, user="er_graph_reader", dbname=i.dbname,
                             autocommit=True) as c:
            assert graph(c, "demo")["nodes"] == []
            with pytest.raises(psycopg.errors.InvalidParameterValue, match="around_entity"):
                graph(c, "demo", demo.entity_id("demo", "Alex Morgan"))
    finally:
        conn.execute("DROP OWNED BY er_graph_reader")
        conn.execute("DROP ROLE er_graph_reader")


def run_graph(conn, *args):
    return CliRunner().invoke(app, ["graph", "demo", *args, "--dsn", dsn_of(conn)], env=CLEAN_ENV)


def test_the_command_prints_the_json_and_refuses_an_unknown_format(conn, demo):
    r = run_graph(conn, "--around", "alex morgan")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["nodes"][0]["name"] == "Alex Morgan"
    r = run_graph(conn, "--out", "x.pdf")
    assert r.exit_code == 2 and "--out" in r.output
    r = run_graph(conn, "--around", "Alex Morgn")
    assert r.exit_code == 1 and "has no entity named 'Alex Morgn'" in r.stderr


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (Debian: apt-get install chromium; "
                                             "make test installs it)")
def test_the_html_page_draws_the_nodes_in_headless_chromium(conn, demo, tmp_path):
    out = tmp_path / "demo.html"
    r = run_graph(conn, "--around", "Alex Morgan", "--depth", "2", "--out", str(out))
    assert r.exit_code == 0, r.output
    page = out.read_text()
    assert "http://" not in page.split("<script>")[0] and 'src="' not in page   # nothing fetched
    names = [n["name"] for n in demo.entity_graph("demo", "Alex Morgan", 2)["nodes"]]
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                           "--dump-dom", out.as_uri()], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    # The list is written by the page's script from the graph Cytoscape holds.
    assert f'data-rendered="{len(names)}"' in dom, dom[-2000:]
    items = [li.split(">", 1)[1].split(" (", 1)[0] for li in dom.split('<li class="node')[1:]]
    assert sorted(items) == sorted(names)
    assert "<canvas" in dom     # drawn by Cytoscape


@pytest.mark.skipif(DOT is None, reason="Graphviz's dot is not installed (Debian: apt-get install graphviz; "
                                        "make test installs it)")
def test_svg_and_png_through_graphviz(conn, demo, tmp_path):
    names = {n["name"] for n in demo.entity_graph("demo")["nodes"]}
    svg = tmp_path / "demo.svg"
    r = run_graph(conn, "--out", str(svg))
    assert r.exit_code == 0, r.output
    root = ET.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = {t.text for t in root.iter("{http://www.w3.org/2000/svg}text")}
    assert names <= texts
    png = tmp_path / "demo.png"
    r = run_graph(conn, "--around", "Alex Kim", "--out", str(png), "--json")
    assert r.exit_code == 0, r.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads(r.stdout)["format"] == "png"
