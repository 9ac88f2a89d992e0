"""Bulk import of JSON Lines facts: validated with the server's rules first, batches all
or nothing, resumable; data errors told apart from systemic ones."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from entity_resolver import build
from entity_resolver.importer import (
    FACT_NAMESPACE, BadLine, ImportFailed, fact_uuid, import_file, parse_fact, scan, server_parser,
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


# -- validation: structure, by the server's parser (no database) --------------------

@pytest.mark.parametrize("line, problem", [
    ("not json", "not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('{"fact_id": 1e999, "bank_id": "b"}', "fact_id: required: a non-empty string or an integer, got number"),
    ('{"fact_id": ' + "9" * 5000 + ', "bank_id": "b"}', "not valid JSON: Exceeds the limit (4300 digits)"),
    ('{"fact_id": NaN, "bank_id": "b"}', "not valid JSON: NaN is not a JSON value"),
    ('{"bank_id": "b", "mentions": []}', "fact_id: required: a non-empty string or an integer"),
    ('{"fact_id": 1.5, "bank_id": "b"}', "fact_id: required: a non-empty string or an integer, got number"),
    ('{"fact_id": true, "bank_id": "b"}', "got boolean"),
    ('{"fact_id": "f", "mentions": []}', "bank_id: required"),
    ('{"fact_id": "f", "bank_id": 7}', "bank_id: must be a string, got number"),
    ('{"fact_id": "f", "bank_id": "b", "mentions": "Alex"}', "mentions: must be a JSON array, got string"),
    ('{"fact_id": "f", "bank_id": "b", "mentions": null}', "mentions: must not be null"),
    ('{"fact_id": "f", "bank_id": "b", "mentions": [" "]}', "mentions[0]: must not be empty or blank"),
    ('{"fact_id": "f", "bank_id": "b", "mentions": [{"txt": "A"}]}', 'mentions[0]: unknown key "txt"'),
    ('{"fact_id": "f", "bank_id": "b", "mentions": [{"text": "A", "resolve": "yes"}]}',
     "mentions[0].resolve: must be true or false, got string"),
    ('{"fact_id": "f", "bank_id": "b", "mentions": ["' + "x" * 501 + '"]}',
     "mentions[0]: is 501 characters long; names are limited to 500 characters"),
    ('{"fact_id": "f", "bank_id": "b", "mentions": [{"text": "A", "gold": [1]}]}',
     "mentions[0].gold: must be a string, got array"),
    ('{"fact_id": "f", "bank_id": "b", "event_date": 20260301}', "event_date: must be a timestamp string"),
    ('{"fact_id": "f", "bank_id": "b", "colour": 1, "mentions": []}', 'unknown key "colour"'),
    ('{"fact_id": "f", "bank_id": "b", "content": "a\\u0000b"}',
     "content: contains a NUL character (\\u0000), which PostgreSQL cannot store"),
    ('{"fact_id": "f", "bank_id": "b", "mentions": [{"text": "A", "nearby": ["x\\u0000"]}]}',
     "mentions[0].nearby[0]: contains a NUL character"),
    ('{"fact_id": "f", "bank_id": "b", "mentions": ["Zo\\ud800"]}',
     "mentions[0]: contains an unpaired surrogate (\\ud800), which is not valid Unicode"),
    ('{"fact_id": "f\\udfff", "bank_id": "b"}', "fact_id: contains an unpaired surrogate (\\udfff)"),
    ('{"fact_id": "f", "bank_id": "b", "entities": {"a": {"name": "A", "distinct": "b"}}}',
     'entities["a"].distinct: must be a JSON array, got string'),
    ('{"fact_id": "f", "bank_id": "b", "entities": {"a": {"name": "A", "distinct": [{"reason": "x"}]}}}',
     'entities["a"].distinct[0]: must be a non-blank string or {"entity": ...}'),
    ('{"fact_id": "f", "bank_id": "b", "entities": {"a": {"name": "A", "distinct": [{"entity": "b", "reason": 1}]}}}',
     'entities["a"].distinct[0].reason: must be a string, got number'),
])
def test_a_bad_line_is_reported_with_its_key_and_problem(line, problem):
    with pytest.raises(BadLine) as info:
        parse_fact(line, 7)
    assert info.value.line == 7
    assert problem in str(info.value) and str(info.value).startswith("line 7: ")


def test_a_nul_or_a_surrogate_carries_the_sqlstate_postgresql_gives_it():
    with pytest.raises(BadLine) as nul:
        parse_fact('{"fact_id": "f", "bank_id": "b", "mentions": ["A\\u0000"]}', 1)
    with pytest.raises(BadLine) as surrogate:
        parse_fact('{"fact_id": "f", "bank_id": "b", "content": "\\ud83c"}', 1)
    assert (nul.value.sqlstate, surrogate.value.sqlstate) == ("22P05", "22P02")


def test_a_paired_surrogate_escape_is_one_character_and_accepted():
    rec = parse_fact('{"fact_id": "f", "bank_id": "b", "mentions": ["Wren \\ud83c\\udfb5"]}', 1)
    assert rec.mentions == ["Wren \U0001f3b5"]


def test_an_integer_fact_id_is_the_same_fact_as_its_string():
    assert parse_fact('{"fact_id": 7, "bank_id": "b"}', 1).unit_id == fact_uuid("7")


def test_gold_is_kept_for_evaluation_but_not_in_the_stored_mentions():
    rec = parse_fact(json.dumps(fact(1)), 1)
    assert rec.golds == ["g-1", None, None]
    assert all("gold" not in m for m in rec.mentions if isinstance(m, dict))


def test_the_parser_is_the_servers_module_loaded_without_touching_sys_path():
    # A fresh interpreter: pytest's pythonpath (pyproject.toml) puts plpython/ on sys.path.
    code = (
        "import sys; from entity_resolver import importer;"
        "m = importer.server_parser();"
        "print(m.__file__); print(m.InputError.__module__);"
        "print('errors' in sys.modules, any(p.rstrip('/').endswith('plpython') for p in sys.path))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    path, errors_module, leaked = out.splitlines()
    assert Path(path) == build.data_dir() / "plpython" / "mentions.py"
    assert errors_module == "entity_resolver._server_errors"
    assert leaked == "False False"
    assert server_parser().parse_element is server_parser().parse_element  # loaded once


@pytest.mark.parametrize("element", [
    " ", "x" * 501, {"text": 1}, {"text": None}, {"nearby": ["A"]}, {"text": "A", "nearby": [1]},
    {"text": "A", "nearby": "B"}, {"text": "A", "resolve": "yes"}, {"text": "A", "event_date": 5}, 7,
])
def test_the_importer_refuses_a_mention_with_the_servers_own_words(conn, element):
    with pytest.raises(psycopg.Error) as server:
        conn.execute("SELECT * FROM entity_resolver.resolve_mentions('b', %s::jsonb)", (json.dumps([element]),))
    with pytest.raises(BadLine) as importer:
        parse_fact(json.dumps({"fact_id": "f", "bank_id": "b", "mentions": [element]}), 3)
    assert (importer.value.message, importer.value.sqlstate) == (
        server.value.diag.message_primary, server.value.sqlstate)


# -- validation: bank ids and dates, by the database -----------------------------------

def test_scan_reports_every_bad_line_and_duplicate_ids(conn, tmp_path):
    path = write(tmp_path / "f.jsonl", [fact(1), "{oops", "", fact(2), fact(1, content="again")])
    result = scan(conn, path)
    assert result.good == 2
    assert [(b.line, b.message.split(":")[0]) for b in result.bad] == [(2, "not valid JSON"), (5, "fact_id")]
    assert result.bad[1].message == "fact_id: 'f1' already used on line 1"


@pytest.mark.parametrize("bank_id, problem", [
    ("", "bank_id: must not be empty or blank"),
    ("  ", "bank_id: must not be empty or blank"),
    ("b" * 101, "bank_id: is 101 characters long; the limit is 100"),
])
def test_a_bank_id_is_checked_by_the_servers_rule(conn, tmp_path, bank_id, problem):
    path = write(tmp_path / "f.jsonl", [fact(1), fact(2, bank=bank_id)])
    result = scan(conn, path)
    assert [(b.line, b.message) for b in result.bad] == [(2, problem)]


def test_a_bad_bank_option_is_refused_once_before_the_file_is_read(conn, tmp_path):
    path = write(tmp_path / "f.jsonl", [fact(n) for n in range(3)])
    with pytest.raises(ImportFailed, match=r"^--bank: must not be empty or blank$") as info:
        import_file(conn, path, bank=" ")
    assert (info.value.sqlstate, info.value.systemic) == ("22023", False)


# What the server accepts as an event date (resolve_mentions, the facts trigger) is
# what the importer accepts: PostgreSQL reads it, then years 1 to 9999.
DATES = ["2026-03-01T10:00:00Z", "2026-03-01", "2026-03-01 10:00", "March 1, 2026", "2026-03-01T10:00:00.5+05:30",
         "yesterday", "2026-02-30", "2026-13-01", "not a date", "", "infinity", "10000-01-01", "0001-01-05",
         "4713-01-01 BC", "2026-03-01T25:00:00Z"]


@pytest.mark.parametrize("date", DATES)
def test_the_importer_accepts_exactly_the_dates_the_server_accepts(conn, tmp_path, date):
    try:
        with conn.transaction(force_rollback=True):
            conn.execute("SELECT * FROM entity_resolver.resolve_mentions('b', %s::jsonb)",
                         (json.dumps([{"text": "Acme", "event_date": date}]),))
        server_accepts = True
    except psycopg.Error as exc:
        assert exc.sqlstate == "22007", exc
        server_accepts = False
    path = write(tmp_path / "f.jsonl", [fact(1, mentions=["Oslo", {"text": "Acme", "event_date": date}])])
    bad = scan(conn, path).bad
    assert (not bad) == server_accepts, bad
    if bad:
        assert bad[0].message.startswith("mentions[1].event_date: is ") and bad[0].sqlstate == "22007"


def test_a_bad_date_names_its_line_and_key_among_many_good_ones(conn, tmp_path):
    lines = [fact(n) for n in range(2500)]
    lines[1234]["event_date"] = "2026-02-30T10:00:00Z"
    lines[2001]["mentions"][2]["event_date"] = "someday"
    result = scan(conn, write(tmp_path / "f.jsonl", lines))
    assert [(b.line, b.message) for b in result.bad] == [
        (1235, 'event_date: is not a valid timestamp: "2026-02-30T10:00:00Z" '
               '(date/time field value out of range: "2026-02-30T10:00:00Z")'),
        (2002, 'mentions[2].event_date: is not a valid timestamp: "someday" '
               '(invalid input syntax for type timestamp with time zone: "someday")'),
    ]
    assert result.good == 2498


def test_a_date_without_an_offset_is_utc_for_the_fact_and_its_mentions(conn, tmp_path):
    conn.execute("SET TimeZone = 'America/New_York'")
    path = write(tmp_path / "f.jsonl", [fact(1, event_date="2026-03-01 10:00",
                                             mentions=[{"text": "Acme", "event_date": "2026-03-02 08:00"}])])
    import_file(conn, path)
    conn.execute("SET TimeZone = 'UTC'")
    assert conn.execute("SELECT event_date::text FROM entity_resolver.facts").fetchone()[0] == "2026-03-01 10:00:00+00"
    assert conn.execute("SELECT last_seen::text FROM entity_resolver.entities").fetchone()[0] == "2026-03-02 08:00:00+00"


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
    assert summary.bad == [{"line": 2, "error": "bank_id: required (or give --bank)", "sqlstate": "22004"}]


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
    assert summary.bad[0]["sqlstate"] == "23514"


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


def test_invalid_utf8_is_a_bad_line(conn, tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_bytes(json.dumps(fact(1)).encode() + b"\n" + b'{"fact_id": "\xff"}\n')
    result = scan(conn, path)
    assert [(b.line, b.message, b.sqlstate) for b in result.bad] == [
        (2, "not valid UTF-8 (byte 14 of the line)", "22021")]


def test_hostile_looking_text_is_stored_literally(conn, tmp_path):
    odd = ["'; DROP TABLE facts; --", "Zoë \u202eevil", "Wren 🎵", "a\tb"]
    path = write(tmp_path / "f.jsonl", [fact(1, mentions=odd, content="'; --")])
    import_file(conn, path)
    names = {r[0] for r in conn.execute("SELECT canonical_name FROM entity_resolver.entities")}
    assert names == set(odd)


# -- what the importer used to accept silently -----------------------------------------

def test_a_fact_without_mentions_is_stored_and_counted_as_a_warning(conn, tmp_path):
    path = write(tmp_path / "f.jsonl", [fact(1), {"fact_id": "quiet", "bank_id": "team", "content": "Thanks!"},
                                        fact(2, mentions=[])])
    summary = import_file(conn, path)
    assert summary.facts == 3 and count(conn, "facts") == 3
    assert summary.warnings == [
        {"line": 2, "warning": "mentions: none; the fact is stored linked to no entity"},
        {"line": 3, "warning": "mentions: none; the fact is stored linked to no entity"}]
    assert summary.as_dict()["facts_without_mentions"] == 2


def test_an_integer_fact_id_is_stored_as_its_string_and_a_rerun_skips_it(conn, tmp_path):
    import_file(conn, write(tmp_path / "a.jsonl", [fact(1, fact_id=7)]))
    again = import_file(conn, write(tmp_path / "b.jsonl", [fact(1, fact_id="7")]))
    assert (again.facts, again.skipped_existing) == (0, 1)
    assert conn.execute("SELECT id FROM entity_resolver.facts").fetchone()[0] == fact_uuid("7")


# -- data errors and systemic errors while writing ---------------------------------------

def test_a_batch_over_a_server_limit_is_inserted_in_smaller_statements(conn, tmp_path):
    # A stand-in for a limit on mentions per call: no statement may insert more than 3 facts.
    conn.execute("""
        CREATE FUNCTION public.at_most_three() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF (SELECT count(*) FROM new_rows) > 3 THEN
                RAISE EXCEPTION 'too many facts in one statement' USING ERRCODE = 'program_limit_exceeded';
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER test_at_most_three AFTER INSERT ON entity_resolver.facts
            REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.at_most_three();
    """)
    summary = import_file(conn, write(tmp_path / "f.jsonl", [fact(n) for n in range(20)]), batch_size=10)
    assert (summary.facts, summary.batches, summary.skipped_bad) == (20, 2, 0)
    assert count(conn, "facts") == 20 and count(conn, "unit_entities") == 60


@pytest.fixture
def bank_role(conn):
    """A login role bound to bank "other" only (row-level security hides every other bank)."""
    name = f"er_imp_{uuid.uuid4().hex[:8]}"
    conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
    conn.execute("SELECT entity_resolver.grant_bank_access('other', %s)", (name,))
    yield name
    conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
    conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


@pytest.mark.parametrize("skip_bad", [False, True])
def test_a_role_without_access_to_the_bank_is_a_systemic_error_never_skipped(conn, bank_role, tmp_path, skip_bad):
    path = write(tmp_path / "f.jsonl", [fact(n) for n in range(200)])
    with psycopg.connect(host=conn.info.host, port=conn.info.port, user=bank_role, dbname=conn.info.dbname,
                         autocommit=True) as other:
        with pytest.raises(ImportFailed) as info:
            import_file(other, path, skip_bad=skip_bad)
    failure = info.value
    assert (failure.systemic, failure.sqlstate, failure.imported) == (True, "42501", 0)
    assert "row-level security" in str(failure) and "--skip-bad does not skip it" in str(failure)
    assert "fix the line" not in str(failure)
    assert count(conn, "facts") == 0


def test_a_read_only_database_is_a_systemic_error(conn, tmp_path):
    path = write(tmp_path / "f.jsonl", [fact(n) for n in range(5)])
    with psycopg.connect(host=conn.info.host, port=conn.info.port, user=conn.info.user, dbname=conn.info.dbname,
                         autocommit=True, options="-c default_transaction_read_only=on") as ro:
        with pytest.raises(ImportFailed) as info:
            import_file(ro, path, skip_bad=True)
    assert (info.value.systemic, info.value.sqlstate) == (True, "25006")
    assert count(conn, "facts") == 0


def test_a_lost_connection_is_a_systemic_error_and_the_rerun_resumes(conn, connect, tmp_path):
    path = write(tmp_path / "f.jsonl", [fact(n) for n in range(12)])
    victim = connect()
    pid = victim.info.backend_pid

    def kill_after_first_batch(inserted, skipped):
        conn.execute("SELECT pg_terminate_backend(%s)", (pid,))

    with pytest.raises(ImportFailed) as info:
        import_file(victim, path, batch_size=5, on_batch=kill_after_first_batch)
    assert info.value.systemic and "lost the database connection" in str(info.value)
    assert info.value.imported == 5 and count(conn, "facts") == 5
    assert import_file(connect(), path, batch_size=5).facts == 7


# -- limits, checked up front ---------------------------------------------------------

def test_validation_refuses_a_fact_over_the_banks_limits_naming_line_and_limit(conn, tmp_path):
    conn.execute("SELECT entity_resolver.configure_bank('small', '{\"max_mentions_per_call\": 5}')")
    path = write(tmp_path / "big.jsonl", [
        fact(1),
        {"fact_id": "big", "bank_id": "team", "mentions": [f"name {i}" for i in range(1001)]},
        {"fact_id": "six", "bank_id": "small", "mentions": [f"name {i}" for i in range(6)]},
    ])
    with pytest.raises(ImportFailed) as failed:
        import_file(conn, path, batch_size=1)
    assert [(b.line, b.message, b.sqlstate) for b in failed.value.bad] == [
        (2, "mentions: 1001 mentions in one fact; the limit is max_mentions_per_fact = 1000", "54000"),
        (3, "mentions: 6 mentions in one call; the limit is max_mentions_per_call = 5", "54000"),
    ]
    assert str(failed.value).count("54000") == 0 and failed.value.sqlstate == "54000"
    assert count(conn, "facts") == 0 and count(conn, "facts", "small") == 0


def test_batches_stay_within_the_banks_call_limit(conn, tmp_path):
    conn.execute("SELECT entity_resolver.configure_bank('team', '{\"max_mentions_per_call\": 5}')")
    path = write(tmp_path / "facts.jsonl", [fact(n) for n in range(4)])     # 3 mentions each
    summary = import_file(conn, path, batch_size=10)
    # Never a statement over the limit (refused, then run again in halves): one fact per batch.
    assert (summary.facts, summary.batches) == (4, 4)
