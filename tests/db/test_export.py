"""Export (docs/corrections.md): a bank in the import format, each mention with its entity as gold.

Import → export → import into a fresh bank gives the same partition of mentions
into entities; corrections are in the export; the importer keeps each line's
fact_id, which the export writes back."""

from __future__ import annotations

import io
import json
from collections import defaultdict
from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

from corrections_helpers import ER, call, entity_id, insert_fact, team
from entity_resolver.cli import app
from entity_resolver.client import Client
from entity_resolver.install import install
from entity_resolver.importer import fact_uuid, import_file

ROOT = Path(__file__).resolve().parents[2]
# Families of regular names: namesakes, recurring people, typos.
CORPORA = ["same_name", "recurring", "typos"]
CLEAN_ENV = {"ENTITY_RESOLVER_DSN": None, "ENTITY_RESOLVER_SCHEMA": None, "COLUMNS": "200"}


def partition(conn, bank):
    """The bank's mentions grouped by entity: a set of frozensets of (fact_id, ordinal)."""
    groups = defaultdict(set)
    for fact_id, ordinal, entity in conn.execute(
            f"SELECT f.fact_id, m.ordinal, m.entity_id FROM {ER}.mentions m"
            f" JOIN {ER}.facts f ON f.bank_id = m.bank_id AND f.id = m.unit_id WHERE m.bank_id = %s", (bank,)):
        groups[entity].add((fact_id, ordinal))
    return {frozenset(g) for g in groups.values()}


def gold_partition(lines):
    groups = defaultdict(set)
    for line in lines:
        for ordinal, mention in enumerate(line["mentions"], 1):
            groups[mention["gold"]].add((line["fact_id"], ordinal))
    return {frozenset(g) for g in groups.values()}


def test_import_export_import_into_a_fresh_bank_gives_the_same_partition(conn, tmp_path):
    source = tmp_path / "corpus.jsonl"
    source.write_text("".join((ROOT / "bench" / "corpora" / f"{name}.jsonl").read_text(encoding="utf-8")
                              for name in CORPORA), encoding="utf-8")
    import_file(conn, source, bank="original", batch_size=50)
    exported = tmp_path / "original.jsonl"
    with exported.open("w", encoding="utf-8") as out:
        summary = Client(conn).export("original", out)
    lines = [json.loads(line) for line in exported.read_text(encoding="utf-8").splitlines()]
    assert summary.facts == len(lines) == sum(1 for _ in source.open()) and summary.without_gold == 0
    import_file(conn, exported, bank="copy", batch_size=50)
    original = partition(conn, "original")
    assert len(original) > 50
    assert partition(conn, "copy") == original == gold_partition(lines)


def test_export_writes_each_fact_with_its_fact_id_and_each_mention_with_its_entity(conn):
    insert_fact(conn, "team", ["Alex Morgan", {"text": "Acme", "resolve": False}], "2026-03-01T09:00:00Z", "f1")
    unit = insert_fact(conn, "team", ["Alex Morgan", "Oslo"], "2026-03-02T09:00:00Z")
    out = io.StringIO()
    Client(conn).export("team", out)
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    morgan, acme = entity_id(conn, "team", "Alex Morgan"), entity_id(conn, "team", "Acme")
    assert first == {"fact_id": "f1", "bank_id": "team", "event_date": "2026-03-01T09:00:00+00:00",
                     "content": "Alex Morgan / Acme",
                     "mentions": [{"text": "Alex Morgan", "gold": morgan},
                                  {"text": "Acme", "resolve": False, "gold": acme}],
                     "entities": {morgan: {"name": "Alex Morgan", "curated": False, "aliases": [], "forwards": []},
                                  acme: {"name": "Acme", "curated": False, "aliases": [], "forwards": []}}}
    # An entity is described on the first line it appears on only.
    assert list(second["entities"]) == [entity_id(conn, "team", "Oslo")]
    # A fact stored without a fact_id is written with its id, which imports as the same id.
    assert second["fact_id"] == unit and fact_uuid(unit) == __import__("uuid").UUID(unit)
    names = [json.loads(line) for line in _export(conn, "team", gold="name").splitlines()]
    assert [m["gold"] for m in names[1]["mentions"]] == ["Alex Morgan", "Oslo"]


def _export(conn, bank, **kwargs):
    out = io.StringIO()
    Client(conn).export(bank, out, **kwargs)
    return out.getvalue()


def test_corrections_are_in_the_export(conn):
    insert_fact(conn, "team", ["Alex Kim", "React"], fact_id="f1")
    insert_fact(conn, "team", ["Alex Morgan", "Acme"], fact_id="f2")
    call(conn, "merge_entities", "team", [entity_id(conn, "team", "Alex Kim")], entity_id(conn, "team", "Alex Morgan"))
    lines = {json.loads(line)["fact_id"]: json.loads(line) for line in _export(conn, "team").splitlines()}
    assert lines["f1"]["mentions"][0]["gold"] == lines["f2"]["mentions"][0]["gold"]
    call(conn, "forget_entity", "team", entity_id(conn, "team", "React"))
    summary = Client(conn).export("team", io.StringIO())
    assert (summary.facts, summary.mentions, summary.without_gold) == (2, 4, 1)


def test_the_importer_keeps_each_line_fact_id(conn, tmp_path):
    path = tmp_path / "facts.jsonl"
    path.write_text(json.dumps({"fact_id": 7, "bank_id": "team", "mentions": ["Acme"]}) + "\n"
                    + json.dumps({"fact_id": "x" * 501, "bank_id": "team", "mentions": ["Oslo"]}) + "\n")
    summary = import_file(conn, path, skip_bad=True)
    assert summary.bad == [{"line": 2, "error": "fact_id: is 501 characters long; the limit is 500",
                            "sqlstate": "22001"}]
    assert conn.execute(f"SELECT id, fact_id FROM {ER}.facts").fetchall() == [(fact_uuid("7"), "7")]


def test_the_client_iterates_an_export(conn):
    insert_fact(conn, "team", ["Acme"], fact_id="f1")
    assert [line["fact_id"] for line in Client(conn).export("team")] == ["f1"]


def test_the_export_command_writes_a_file_or_standard_output(conn, tmp_path):
    insert_fact(conn, "team", ["Alex Morgan", "Acme"], fact_id="f1")
    dsn = f"host={conn.info.host} port={conn.info.port} user={conn.info.user} dbname={conn.info.dbname}"
    runner = CliRunner()
    target = tmp_path / "team.jsonl"
    result = runner.invoke(app, ["export", "team", "--output", str(target), "--dsn", dsn, "--json"], env=CLEAN_ENV)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"bank_id": "team", "facts": 1, "mentions": 2, "without_gold": 0}
    assert json.loads(target.read_text())["fact_id"] == "f1"
    printed = runner.invoke(app, ["export", "team", "--gold", "name", "--dsn", dsn], env=CLEAN_ENV)
    assert [m["gold"] for m in json.loads(printed.stdout)["mentions"]] == ["Alex Morgan", "Acme"]
    assert "exported 1 facts (2 mentions) of bank team to standard output" in printed.stderr
    missing = runner.invoke(app, ["export", "nobody", "--output", str(tmp_path / "x.jsonl"), "--dsn", dsn],
                            env=CLEAN_ENV)
    assert missing.exit_code == 1 and "bank 'nobody' does not exist" in missing.stderr
    assert not (tmp_path / "x.jsonl").exists() and not (tmp_path / "x.jsonl.partial").exists()


@pytest.mark.parametrize("gold", ["uuid", ""])
def test_an_unknown_gold_form_is_a_usage_error(conn, gold):
    result = CliRunner().invoke(app, ["export", "team", "--gold", gold], env=CLEAN_ENV)
    assert result.exit_code == 2


# -- curation: export -> import keeps what operators did --------------------------------

def curated_partition(conn, bank):
    """Each entity of the bank as (its mentions, as a set of (fact_id, ordinal); its name; its aliases)."""
    rows = conn.execute(
        f"SELECT e.canonical_name, array_agg(DISTINCT a.alias ORDER BY a.alias) FILTER (WHERE a.alias IS NOT NULL),"
        f" array_agg(DISTINCT f.fact_id || '#' || m.ordinal)"
        f" FROM {ER}.entities e JOIN {ER}.mentions m ON m.bank_id = e.bank_id AND m.entity_id = e.id"
        f" JOIN {ER}.facts f ON f.bank_id = m.bank_id AND f.id = m.unit_id"
        f" LEFT JOIN {ER}.entity_aliases a ON a.bank_id = e.bank_id AND a.entity_id = e.id"
        f" WHERE e.bank_id = %s GROUP BY e.id, e.canonical_name", (bank,)).fetchall()
    return {frozenset(places): (name, tuple(aliases or ())) for name, aliases, places in rows}


def corrected_bank(conn):
    """A bank whose operators merged, split, renamed, aliased and forgot: nothing a re-resolution would redo."""
    facts = [["Alex Morgan", "Acme"], ["Alex Kim", "React"], ["Alex Morgan", "Priya"], ["Alex Kim", "Priya"],
             ["Chris", "Acme"], ["Chris", "React"], ["Chris", "Oslo"], ["Sam", "Oslo"], ["Jo", "Acme"]]
    for n, mentions in enumerate(facts, 1):
        insert_fact(conn, "team", mentions, f"2026-03-{n:02d}T09:00:00Z", fact_id=f"f{n}")
    ids = {name: entity_id(conn, "team", name) for name in ("Alex Morgan", "Alex Kim", "Chris", "Acme", "Sam", "Jo")}
    call(conn, "merge_entities", "team", [ids["Alex Kim"]], ids["Alex Morgan"])      # a wrong merge, kept
    call(conn, "rename_entity", "team", ids["Chris"], "Chris Adams")                 # alias Chris
    chris_units = [str(u) for (u,) in conn.execute(
        f"SELECT id FROM {ER}.facts WHERE bank_id = 'team' AND fact_id IN ('f6', 'f7')")]
    call(conn, "split_entity", "team", ids["Chris"], chris_units, "Chris Baker")
    call(conn, "add_alias", "team", ids["Acme"], "ACME Corp")
    call(conn, "rename_entity", "team", ids["Sam"], "Samantha")
    call(conn, "forget_entity", "team", ids["Jo"])
    return curated_partition(conn, "team")


def _round_trip(source_conn, target_conn, tmp_path):
    path = tmp_path / "team.jsonl"
    with path.open("w", encoding="utf-8") as out:
        Client(source_conn).export("team", out)
    return import_file(target_conn, path, bank="copy", batch_size=4)


def test_export_then_import_into_a_new_bank_keeps_the_partition_names_and_aliases(conn, tmp_path):
    expected = corrected_bank(conn)
    summary = _round_trip(conn, conn, tmp_path)
    assert curated_partition(conn, "copy") == expected, summary.curation
    assert summary.curation["unreproduced"] == 0 and summary.curation["refused"] == []
    # The mention of the forgotten entity stays without one, as in the exported bank.
    assert conn.execute(f"SELECT count(*) FROM {ER}.mentions WHERE bank_id = 'copy'").fetchone()[0] \
        == conn.execute(f"SELECT count(*) FROM {ER}.mentions WHERE bank_id = 'team'").fetchone()[0]
    # Exported again, the copy describes the same entities.
    again = tmp_path / "again"
    again.mkdir()
    with (again / "copy.jsonl").open("w", encoding="utf-8") as out:
        Client(conn).export("copy", out, gold="name")
    import_file(conn, again / "copy.jsonl", bank="third", batch_size=100)
    assert curated_partition(conn, "third") == expected


def test_export_then_import_into_another_database_keeps_the_curation(conn, new_db, tmp_path):
    expected = corrected_bank(conn)
    other = new_db()
    install(other)
    _round_trip(conn, other, tmp_path)
    assert curated_partition(other, "copy") == expected


# -- judgements: export -> import keeps what operators said apart ------------------------

def judged_names(conn, bank):
    """The bank's judgements as (the pair's names, reason): the pair's order is its ids'."""
    return [(frozenset(r[:2]), r[2]) for r in conn.execute(
        f"SELECT name_a, name_b, reason FROM {ER}.list_judgements(%s)", (bank,))]


@pytest.mark.parametrize("gold", ["id", "name"])
def test_a_judgement_survives_export_and_import_and_still_refuses_the_merge(conn, tmp_path, gold):
    team(conn)
    call(conn, "mark_distinct", "team", entity_id(conn, "team", "Alex Kim"), entity_id(conn, "team", "Alex Morgan"),
         "two people")
    path = tmp_path / "team.jsonl"
    path.write_text(_export(conn, "team", gold=gold), encoding="utf-8")
    summary = import_file(conn, path, bank="copy", batch_size=2)
    assert summary.curation["judgements"] == 1 and summary.curation["refused"] == [], summary.curation
    assert judged_names(conn, "copy") == [({"Alex Kim", "Alex Morgan"}, "two people")]
    # Marked through mark_distinct: ledgered in the new bank.
    assert conn.execute(f"SELECT kind, reason FROM {ER}.operations WHERE bank_id = 'copy' AND kind = 'mark_distinct'"
                        ).fetchall() == [("mark_distinct", "two people")]
    with pytest.raises(psycopg.errors.ExclusionViolation):
        with conn.transaction():
            call(conn, "merge_entities", "copy", [entity_id(conn, "copy", "Alex Kim")],
                 entity_id(conn, "copy", "Alex Morgan"))
    # Imported again (a resumed run), the judgement is not marked twice.
    again = import_file(conn, path, bank="copy", batch_size=2)
    assert (again.curation["judgements"], again.curation["refused"]) == (0, [])
    assert judged_names(conn, "copy") == [({"Alex Kim", "Alex Morgan"}, "two people")]


def test_the_export_writes_each_judgement_once_on_the_first_entity_of_its_pair(conn):
    ids = team(conn)
    call(conn, "mark_distinct", "team", ids["Alex Morgan"], ids["Alex Kim"])
    records = {}
    for line in _export(conn, "team").splitlines():
        records.update(json.loads(line).get("entities", {}))
    first, second = sorted([ids["Alex Kim"], ids["Alex Morgan"]])
    assert records[first]["distinct"] == [{"entity": second}]
    assert [key for key, record in records.items() if "distinct" in record] == [first]


def test_a_judgement_on_an_entity_the_file_does_not_mention_is_unreproduced(conn, tmp_path):
    path = tmp_path / "partial.jsonl"
    path.write_text(json.dumps({"fact_id": "f1", "bank_id": "copy", "mentions": [{"text": "Alex Kim", "gold": "a"}],
                                "entities": {"a": {"name": "Alex Kim", "aliases": [], "distinct": ["ghost"]}}})
                    + "\n", encoding="utf-8")
    summary = import_file(conn, path)
    assert (summary.curation["judgements"], summary.curation["unreproduced"]) == (0, 1), summary.curation
    assert judged_names(conn, "copy") == []


def test_attributes_go_out_and_come_back_with_their_homonyms(conn, tmp_path):
    source = tmp_path / "dates.jsonl"
    source.write_text((ROOT / "bench" / "corpora" / "homonym_dates.jsonl").read_text(encoding="utf-8"),
                      encoding="utf-8")
    import_file(conn, source, bank="dated", batch_size=50)
    exported = tmp_path / "dated_out.jsonl"
    with exported.open("w", encoding="utf-8") as out:
        Client(conn).export("dated", out)
    lines = [json.loads(line) for line in exported.read_text(encoding="utf-8").splitlines()]
    assert any("attributes" in m for line in lines for m in line["mentions"] if isinstance(m, dict))
    import_file(conn, exported, bank="dated_copy", batch_size=50)
    assert partition(conn, "dated_copy") == partition(conn, "dated")

    def held(bank):
        return sorted(conn.execute(
            f"SELECT e.canonical_name, a.attribute, a.value, a.mentions, e.homonym IS NOT NULL"
            f" FROM {ER}.entity_attributes a JOIN {ER}.entities e ON e.bank_id = a.bank_id AND e.id = a.entity_id"
            " WHERE a.bank_id = %s", (bank,)).fetchall())

    assert held("dated") and held("dated_copy") == held("dated")
    assert conn.execute(f"SELECT count(*) FROM {ER}.entities WHERE bank_id = 'dated_copy' AND homonym IS NOT NULL"
                        ).fetchone()[0] > 5
