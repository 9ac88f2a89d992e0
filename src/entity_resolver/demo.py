"""The demo: a small story that shows the three signals deciding, with reasons.

Two people called Alex share a bank: Alex Kim builds the React front end,
Alex Morgan is the customer contact at Acme. The names alone cannot tell a bare
"Alex" apart; the company each keeps in the co-occurrence graph does. Sarah
Chen shows a short form joining its full name, "user" shows that a hub vouches
for no one, "Sprint 15" that numbers name different things, and the label
vocabulary that declared values resolve by exact match only.

Each fact is resolved with ``resolve_mentions`` and linked with
``link_unit`` - the two calls the facts trigger makes - so that every mention's
decision can be printed. Interesting mentions are explained (``explain_mention``)
just before their fact is resolved, so the table shows the state the decision
was taken in. Every decision the story is about is checked: the demo fails
(exit status 1) if the resolver decides otherwise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any, Dict, List, Optional, Tuple

import psycopg
from psycopg import sql
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from entity_resolver.client import Client, Explanation, Resolution, to_jsonable
from entity_resolver.render import TAKEN, entities_table, explain_table, new_table, verdict

# The story itself is data: the bank's label vocabulary and the facts, in
# demo_story.json next to this module (each fact's keys are StoryFact's fields).
_STORY_FILE = "demo_story.json"


@dataclass
class StoryFact:
    fact_id: str
    when: str
    content: str
    mentions: List[str]
    # mention -> the entity it must resolve to ("new" = a new entity of that name)
    expect: Dict[str, str] = field(default_factory=dict)
    explain: Optional[str] = None   # the mention whose candidates are shown
    note: str = ""
    store: bool = True              # False: a what-if, explained but not stored


def _load_story() -> Tuple[Dict[str, Any], List[StoryFact]]:
    story = json.loads(resources.files(__package__).joinpath(_STORY_FILE).read_text(encoding="utf-8"))
    return story["labels"], [StoryFact(**fact) for fact in story["facts"]]


LABELS, STORY = _load_story()


@dataclass
class FactOutcome:
    fact: StoryFact
    resolutions: List[Resolution]
    explanation: Optional[List[Explanation]]
    failures: List[str]


def _check_explanation(fact: StoryFact, rows: Optional[List[Explanation]]) -> List[str]:
    """Check a what-if against its expectation, from explain_mention's decisions."""
    want = fact.expect.get(fact.explain or "")
    chosen = [r.canonical_name for r in rows or [] if r.decision in TAKEN]
    if want == "new" and chosen:
        return [f"{fact.explain!r} should become a new entity, explain_mention chose {chosen[0]!r}"]
    if want not in (None, "new") and chosen != [want]:
        return [f"{fact.explain!r} should resolve to {want!r}, explain_mention chose {chosen or 'nothing'}"]
    return []


def reset_bank(conn: psycopg.Connection, schema: str, bank: str) -> None:
    """Delete every row of the bank, in every table of the schema that has a bank_id."""
    tables = [r[0] for r in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'bank_id' AND NOT a.attisdropped"
        " WHERE n.nspname = %s AND c.relkind IN ('r', 'p') AND c.relname <> 'banks'"
        " ORDER BY c.relname", (schema,))]
    with conn.transaction():
        for t in tables:
            conn.execute(sql.SQL("DELETE FROM {}.{} WHERE bank_id = %s")
                         .format(sql.Identifier(schema), sql.Identifier(t)), (bank,))
        conn.execute(sql.SQL("DELETE FROM {}.banks WHERE bank_id = %s").format(sql.Identifier(schema)), (bank,))


def bank_exists(conn: psycopg.Connection, schema: str, bank: str) -> bool:
    return conn.execute(sql.SQL("SELECT 1 FROM {}.banks WHERE bank_id = %s").format(sql.Identifier(schema)),
                        (bank,)).fetchone() is not None


def play(conn: psycopg.Connection, schema: str, bank: str,
         on_fact: Optional[Any] = None) -> List[FactOutcome]:
    """Load the story into ``bank`` (which should be empty); return every fact's outcome."""
    er = Client(conn, schema=schema)
    er.set_labels(bank, LABELS)
    outcomes = []
    for fact in STORY:
        explanation = None
        others = [m for m in fact.mentions if m != fact.explain]
        if fact.explain:
            explanation = er.explain(bank, fact.explain, others, fact.when)
        failures: List[str] = []
        if not fact.store:
            outcome = FactOutcome(fact, [], explanation, _check_explanation(fact, explanation))
            outcomes.append(outcome)
            if on_fact:
                on_fact(outcome)
            continue
        with conn.transaction():
            # What the facts trigger will decide, mention by mention: the same
            # call on the same state, in a savepoint that is rolled back...
            with conn.transaction(force_rollback=True):
                resolutions = er.resolve_many(bank, fact.mentions, fact.when)
            # ...then the fact itself, resolved and linked by the trigger.
            retained = er.retain(bank, fact.mentions, content=fact.content, event_date=fact.when,
                                 fact_id=fact.fact_id)
        linked = sorted(e.canonical_name for e in retained.entities)
        if linked != sorted({r.canonical_name for r in resolutions}):
            failures.append(f"the trigger linked {linked}, resolve_mentions predicted "
                            f"{sorted({r.canonical_name for r in resolutions})}")
        ids = {e.canonical_name: e.entity_id for e in retained.entities}
        resolutions = [replace(r, entity_id=ids.get(r.canonical_name, r.entity_id)) for r in resolutions]
        # Statistics are applied at commit by default; flush explicitly too,
        # in case the database runs with entity_resolver.flush_at_commit = off.
        er.flush(bank)
        for r in resolutions:
            want = fact.expect.get(r.mention)
            if want is None:
                continue
            if want == "new":
                if not r.created:
                    failures.append(f"{r.mention!r} should be a new entity, resolved to {r.canonical_name!r}")
            elif r.created or r.canonical_name != want:
                failures.append(f"{r.mention!r} should resolve to {want!r}, got "
                                f"{'a new entity' if r.created else repr(r.canonical_name)}")
        outcome = FactOutcome(fact, resolutions, explanation, failures)
        outcomes.append(outcome)
        if on_fact:
            on_fact(outcome)
    return outcomes


# -- printing ---------------------------------------------------------------------

SHOWN_ROWS = 8  # a fact with more mentions is summarised after this many rows


def _resolution_table(outcome: FactOutcome) -> Table:
    fact = outcome.fact
    table = new_table()
    table.add_column("mention")
    table.add_column("resolved to")
    table.add_column("")
    table.add_column("score", justify="right")
    rows = outcome.resolutions
    for r in rows[:SHOWN_ROWS] if len(rows) > SHOWN_ROWS + 1 else rows:
        status = Text("new entity", style="yellow") if r.created else Text("existing", style="green")
        want = fact.expect.get(r.mention)
        if want is not None:
            ok = r.created if want == "new" else (not r.created and r.canonical_name == want)
            status += Text(" ✓" if ok else f" ✗ expected {want}", style="bold green" if ok else "bold red")
        table.add_row(r.mention, r.canonical_name, status, "–" if r.score is None else f"{r.score:.3f}")
    if len(rows) > SHOWN_ROWS + 1:
        rest = rows[SHOWN_ROWS:]
        new = sum(1 for r in rest if r.created)
        table.add_row(Text(f"... {len(rest)} more", style="dim"), "",
                      Text(f"{new} new, {len(rest) - new} existing", style="dim"), "")
    return table


def _print_fact(console: Console, n: int, outcome: FactOutcome) -> None:
    fact = outcome.fact
    label = f"fact {n}" if fact.store else "what if"
    console.print(Text(f"{label}  {fact.when[:16].replace('T', ' ')}  ", style="bold cyan")
                  + Text(fact.content, style="bold"))
    if fact.store:
        console.print(_resolution_table(outcome))
    if outcome.explanation is not None:
        others = [m for m in fact.mentions if m != fact.explain]
        console.print(explain_table(
            outcome.explanation,
            title=f"why: explain_mention('{fact.explain}', nearby => {others})"))
        console.print(verdict(fact.explain or "", outcome.explanation), style="dim")
    if fact.note:
        console.print(Text(fact.note, style="italic"))
    for f in outcome.failures:
        console.print(Text(f"UNEXPECTED: {f}", style="bold red"))
    console.print()


INTRO = (
    "Two people called Alex share the bank 'demo': Alex Kim builds the React front end, "
    "Alex Morgan is the customer contact at Acme. Each fact below is resolved as it arrives; "
    "a mention joins an existing entity when 0.5*name + 0.3*co-occurrence + 0.2*recency "
    "reaches 0.6, and becomes a new entity otherwise."
)


def run(conn: psycopg.Connection, *, schema: str = "entity_resolver", bank: str = "demo",
        reset: bool = True, console: Optional[Console] = None, as_json: bool = False,
        embedded: bool = False) -> bool:
    """Play the story into ``bank`` and print it; True when every decision was as expected."""
    if bank_exists(conn, schema, bank):
        if not reset:
            raise ValueError(f"bank {bank!r} already exists in this database: pass --reset to wipe it "
                             f"and replay the story, or --bank NAME to use another bank")
        reset_bank(conn, schema, bank)
    counter = {"n": 0}

    def show(outcome: FactOutcome) -> None:
        counter["n"] += outcome.fact.store
        if console is not None:
            _print_fact(console, counter["n"], outcome)

    if console is not None:
        console.print(Panel(INTRO.replace("'demo'", repr(bank)), title="entity_resolver demo", expand=False))
        console.print()
    outcomes = play(conn, schema, bank, on_fact=show)
    failures = [f for o in outcomes for f in o.failures]
    er = Client(conn, schema=schema)
    if as_json:
        print(json.dumps(to_jsonable({
            "bank_id": bank,
            "ok": not failures,
            "facts": [{"fact_id": o.fact.fact_id, "event_date": o.fact.when, "content": o.fact.content,
                       "resolutions": o.resolutions, "explain": o.explanation, "expected": o.fact.expect,
                       "failures": o.failures} for o in outcomes],
            "entities": er.entities(bank, top=100),
        }), ensure_ascii=False, indent=2))
        return not failures
    assert console is not None
    shown = [e for e in er.entities(bank, top=100) if e.mention_count > 1 or e.entity_kind == "label"]
    console.print(entities_table(shown, title=f"bank {bank}: entities mentioned more than once, and labels"))
    console.print()
    checked = sum(len(o.fact.expect) for o in outcomes)
    if failures:
        console.print(Text(f"{len(failures)} of {checked} checked decisions differ from the story:",
                           style="bold red"))
        for f in failures:
            console.print(Text(f"  {f}", style="red"))
    else:
        console.print(Text(f"All {checked} checked decisions are as the story expects.", style="bold green"))
    q = repr(bank) if any(c in bank for c in " '\"") else bank
    console.print()
    console.print("Try next:")
    console.print(f"  entity-resolver explain {q} Alex --near Acme --near renewal --at 2026-03-05")
    console.print(f"  entity-resolver explain {q} Alex --near React --at 2026-03-05")
    console.print(f"  entity-resolver neighbors {q} 'Alex Morgan'")
    console.print(f"  entity-resolver expand {q} f08      # facts sharing entities with fact 8")
    console.print(f"  entity-resolver entities {q} --top 30")
    if embedded:
        console.print("  entity-resolver db status    # where the database is; psql access")
    return not failures
