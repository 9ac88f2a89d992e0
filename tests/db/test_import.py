"""Bulk import of JSON Lines facts: validation first, batches all or nothing, resumable."""

from __future__ import annotations

import gzip
import json
import uuid
from pathlib import Path

import pytest

from entity_resolver.importer import (
    FACT_NAMESPACE, BadLine, ImportFailed, fact_uuid, import_file, parse_fact, parse_timestamp, scan,
)

NAMES = ["Alex Morgan", "Acme", "Renewal", "Kubernetes", "Oslo", "Priya", "Zephyr", "Budget",
         "Helsinki", "Marigold", "Tokyo Office", "Sprint 14", "Docker", "Wren", "Ivanova"]


def fact(n: int, bank: str = "team", **extra) -> dict:
    """Fact n: three names that never resolve to one another, a gold label on the first."""
    out = {
        "fact_id": f"f{n}", "bank_id": bank, "event_date": f"2026-03-{1 + n % 28:02d}T10:00:00Z",
        "content": f"fact {n}",
        "mentions": [{"text": NAMES[n % 15], "gold": f"g-{n % 15}"}, NAMES[(n + 4) % 15],
                     {"text": NAMES[(n + 9) % 15], "resolve": True}],
    }
    out.update(extra)
    return out


def write(path: Path, lines) -> Path:
    path.write_text("".join((json.dumps(x) if not isinstance(x, str) else x) + "\n" for x in lines),
                    encoding="utf-8")
    return path


def count(conn, table, bank="team"):
    return conn.execute(f"SELECT count(*) FROM entity_resolver.{table} WHERE bank_id = %s", (bank,)).fetchone()[0]


def graph(conn, bank):
    """What the import left: entities with counts, links by fact, pairs with counts."""
    entities = conn.execute(
        "SELECT canonical_name, mention_count, last_seen FROM entity_resolver.entities"
        " WHERE bank_id = %s ORDER BY 1", (bank,)).fetchall()
    links = conn.execute(
        "SELECT u.unit_id, e.canonical_name FROM entity_resolver.unit_entities u"
        " JOIN entity_resolver.entities e ON e.bank_id = u.bank_id AND e.id = u.entity_id"
        " WHERE u.bank_id = %s ORDER BY 1, 2", (bank,)).fetchall()
    pairs = conn.execute(
        "SELECT least(a.canonical_name, b.canonical_name), greatest(a.canonical_name, b.canonical_name),"
        " c.cooccurrence_count FROM entity_resolver.entity_cooccurrences c"
        " JOIN entity_resolver.entities a ON a.bank_id = c.bank_id AND a.id = c.entity_id_1"
        " JOIN entity_resolver.entities b ON b.bank_id = c.bank_id AND b.id = c.entity_id_2"
        " WHERE c.bank_id = %s ORDER BY 1, 2", (bank,)).fetchall()
    return entities, links, pairs


# -- fact ids ---------------------------------------------------------------------

def test_fact_id_maps_deterministically_to_a_uuid5():
    assert fact_uuid("f1") == fact_uuid("f1") == uuid.uuid5(FACT_NAMESPACE, "f1")
    assert fact_uuid("f1") != fact_uuid("f2")


def test_a_fact_id_that_is_a_uuid_is_kept():
    u = "6f1c3a52-8d0e-4b7a-9c41-2e5f0d8b7a13"
    assert fact_uuid(u) == uuid.UUID(u)
    assert fact_uuid(u.upper()) == uuid.UUID(u)
    assert fact_uuid(u.replace("-", "")) == uuid.uuid5(FACT_NAMESPACE, u.replace("-", ""))


# -- validation (no database) -----------------------------------------------------

@pytest.mark.parametrize("line, problem", [
    ("not json", "not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('{"bank_id": "b", "mentions": []}', "fact_id: required"),
    ('{"fact_id": "f", "mentions": []}', "bank_id: required"),
    ('{"fact_id": "f", "bank_id": "", "mentions": []}', "bank_id: must be a non-empty string"),
    ('{"fact_id": "f", "bank_id": "' + "b" * 101 + '", "mentions": []}', "at most 100"),
    ('{"fact_id": "f", "bank_id": "b", "mentions": "Alex"}', "mentions: must be an array"),
    ('{"fact_id": "f", "bank_id": "b", "mentions": [" "]}', "mentions[0]: must not be blank"),
    ('{"fact_id": "f", "bank_id": "b", "mentions": [{"txt": "A"}]}', "unknown key 'txt'"),
    ('{"fact_id": "f", "bank_id": "b", "mentions": [{"text": "A", "resolve": "yes"}]}', "true or false"),
    ('{"fact_id": "f", "bank_id": "b", "mentions": ["' + "x" * 501 + '"]}', "at most 500"),
    ('{"fact_id": "f", "bank_id": "b", "event_date": "yesterday", "mentions": []}', "event_date"),
    ('{"fact_id": "f", "bank_id": "b", "colour": 1, "mentions": []}', "unknown key 'colour'"),
])
def test_a_bad_line_is_reported_with_its_problem(line, problem):
    with pytest.raises(BadLine) as info:
        parse_fact(line, 7)
    assert info.value.line == 7
    assert problem in str(info.value) and str(info.value).startswith("line 7: ")


def test_gold_is_kept_for_evaluation_but_not_in_the_stored_mentions():
    rec = parse_fact(json.dumps(fact(1)), 1)
    assert rec.golds == ["g-1", None, None]
    assert all("gold" not in m for m in rec.mentions if isinstance(m, dict))


def test_timestamps_are_iso_8601_with_z_offsets_and_fractions():
    assert parse_timestamp("2026-03-01T10:00:00Z").isoformat() == "2026-03-01T10:00:00+00:00"
    assert parse_timestamp("2026-03-01T10:00:00.5+02:00").isoformat() == "2026-03-01T10:00:00.500000+02:00"
    assert parse_timestamp("2026-03-01").isoformat() == "2026-03-01T00:00:00+00:00"


def test_scan_reports_every_bad_line_and_duplicate_ids(tmp_path):
    path = write(tmp_path / "f.jsonl", [fact(1), "{oops", "", fact(2), fact(1, content="again")])
    result = scan(path)
    assert result.good == 2
    assert [(b.line, b.message.split(":")[0]) for b in result.bad] == [(2, "not valid JSON"), (5, "fact_id 'f1' already used on line 1")]


# -- importing --------------------------------------------------------------------

def test_import_loads_every_fact_through_the_trigger(conn, tmp_path):
    path = write(tmp_path / "f.jsonl", [fact(n) for n in range(30)])
    summary = import_file(conn, path, batch_size=7)
    assert (summary.facts, summary.mentions, summary.batches) == (30, 90, 5)
    assert summary.entities_created == 15
    assert count(conn, "facts") == 30
    assert count(conn, "unit_entities") == 90
    assert conn.execute("SELECT sum(mention_count) FROM entity_resolver.entities WHERE bank_id = 'team'"
                        ).fetchone()[0] == 90


def test_the_stored_fact_keeps_its_id_content_date_and_mention_flags(conn, tmp_path):
    path = write(tmp_path / "f.jsonl", [fact(3, mentions=[{"text": "ACME-1", "resolve": False, "gold": "x"}])])
    import_file(conn, path)
    row = conn.execute("SELECT id, content, mentions, event_date::text FROM entity_resolver.facts").fetchone()
    assert row == (fact_uuid("f3"), "fact 3", [{"text": "ACME-1", "resolve": False}], "2026-03-04 10:00:00+00")


def test_a_bad_line_rejects_the_file_before_anything_is_written(conn, tmp_path):
    path = write(tmp_path / "f.jsonl", [fact(n) for n in range(10)] + ['{"fact_id": "x"}'])
    with pytest.raises(ImportFailed, match="line 11: bank_id: required"):
        import_file(conn, path, batch_size=2)
    assert count(conn, "facts") == 0
    assert count(conn, "entities") == 0


def test_skip_bad_imports_the_other_lines_and_reports_the_bad_ones(conn, tmp_path):
    path = write(tmp_path / "f.jsonl", [fact(1), '{"fact_id": "x"}', fact(2)])
    summary = import_file(conn, path, skip_bad=True)
    assert (summary.facts, summary.skipped_bad) == (2, 1)
    assert summary.bad == [{"line": 2, "error": "bank_id: required (or give --bank)"}]


def test_a_rerun_skips_the_facts_already_present(conn, tmp_path):
    path = write(tmp_path / "f.jsonl", [fact(n) for n in range(12)])
    import_file(conn, path, batch_size=5)
    before = graph(conn, "team")
    again = import_file(conn, path, batch_size=5)
    assert (again.facts, again.skipped_existing, again.entities_created) == (0, 12, 0)
    assert graph(conn, "team") == before


def test_an_interrupted_import_resumes_without_losing_or_duplicating(conn, connect, tmp_path):
    facts = [fact(n) for n in range(40)]
    path = write(tmp_path / "f.jsonl", facts)
    done = []

    def interrupt(inserted, skipped):
        done.append(inserted)
        if len(done) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        import_file(conn, path, batch_size=6, on_batch=interrupt)
    assert count(conn, "facts") == 18
    resumed = import_file(conn, path, batch_size=6)
    assert (resumed.facts, resumed.skipped_existing) == (22, 18)
    # The same stream in one go, into another bank, leaves the same graph.
    import_file(connect(), path, bank="reference", batch_size=6)
    assert graph(conn, "team")[0] == graph(conn, "reference")[0]
    assert graph(conn, "team")[2] == graph(conn, "reference")[2]
    assert count(conn, "unit_entities") == count(conn, "unit_entities", "reference") == 120


def test_a_fact_the_database_rejects_fails_its_batch_only_and_names_its_line(conn, tmp_path):
    conn.execute("ALTER TABLE entity_resolver.facts ADD CONSTRAINT test_no_poison CHECK (content <> 'poison')")
    lines = [fact(n) for n in range(9)]
    lines[7]["content"] = "poison"
    path = write(tmp_path / "f.jsonl", lines)
    with pytest.raises(ImportFailed, match=r"line 8: 23514: .*test_no_poison.*6 facts were imported"):
        import_file(conn, path, batch_size=3)
    # Batches 1 and 2 are in; batch 3 (lines 7 to 9) is not, not even in part.
    assert count(conn, "facts") == 6
    assert count(conn, "unit_entities") == 18


def test_skip_bad_also_skips_a_fact_the_database_rejects(conn, tmp_path):
    conn.execute("ALTER TABLE entity_resolver.facts ADD CONSTRAINT test_no_poison CHECK (content <> 'poison')")
    lines = [fact(n) for n in range(9)]
    lines[7]["content"] = "poison"
    path = write(tmp_path / "f.jsonl", lines)
    summary = import_file(conn, path, batch_size=3, skip_bad=True)
    assert (summary.facts, summary.skipped_bad) == (8, 1)
    assert summary.bad[0]["line"] == 8 and summary.bad[0]["error"].startswith("23514: ")


def test_bank_overrides_the_bank_id_of_every_line(conn, tmp_path):
    path = write(tmp_path / "f.jsonl", [fact(1, bank="a"), fact(2, bank="b")])
    summary = import_file(conn, path, bank="eval-1")
    assert summary.banks == ["eval-1"]
    assert count(conn, "facts", "eval-1") == 2 and count(conn, "facts", "a") == 0


def test_one_file_may_hold_several_banks(conn, tmp_path):
    path = write(tmp_path / "f.jsonl", [fact(1, bank="a"), fact(1, bank="b"), fact(2, bank="a")])
    summary = import_file(conn, path)
    assert summary.banks == ["a", "b"]
    assert (count(conn, "facts", "a"), count(conn, "facts", "b")) == (2, 1)


def test_gzip_files_and_a_byte_order_mark_are_read(conn, tmp_path):
    path = tmp_path / "f.jsonl.gz"
    with gzip.open(path, "wb") as fh:
        fh.write(b"\xef\xbb\xbf" + "".join(json.dumps(fact(n)) + "\n" for n in range(3)).encode())
    assert import_file(conn, path).facts == 3


def test_invalid_utf8_is_a_bad_line(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_bytes(json.dumps(fact(1)).encode() + b"\n" + b'{"fact_id": "\xff"}\n')
    result = scan(path)
    assert [(b.line, b.message) for b in result.bad] == [(2, "not valid UTF-8 (byte 14 of the line)")]


def test_hostile_looking_text_is_stored_literally(conn, tmp_path):
    odd = ["'; DROP TABLE facts; --", "Zoë \u202eevil", "Wren 🎵", "a\tb"]
    path = write(tmp_path / "f.jsonl", [fact(1, mentions=odd, content="'; --")])
    import_file(conn, path)
    names = {r[0] for r in conn.execute("SELECT canonical_name FROM entity_resolver.entities")}
    assert names == set(odd)
