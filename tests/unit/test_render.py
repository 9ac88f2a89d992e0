"""What `entity-resolver explain` prints about the candidates resolution did not read (explain's considered)."""

import uuid

from rich.console import Console

from entity_resolver.client import Explanation
from entity_resolver.render import explain_table, verdict


def row(name, score, considered, decision="below_threshold"):
    return Explanation(uuid.uuid4(), name, 0.6, True, 0.8, 0.0, 0.0, score, decision, considered=considered)


def text_of(table) -> str:
    console = Console(width=200, record=True)
    console.print(table)
    return console.export_text()


def test_a_new_entity_s_verdict_names_the_best_candidate_read_not_the_best_shown():
    rows = [row("Sarah Chen", 0.45, False), row("Sarah Chandler", 0.44, True)]

    said = verdict("Sarah Chan", rows)

    assert "'Sarah Chandler' at 0.44" in said and "1 more outside its neighbourhood, not read" in said


def test_a_verdict_when_no_scored_candidate_was_read():
    said = verdict("Sarah Chan", [row("Sarah Chen", 0.45, False)])

    assert said.startswith("-> no candidate it reads reaches the threshold (1 outside its neighbourhood")


def test_the_read_column_appears_only_when_a_scored_candidate_was_not_read():
    read = [row("Sarah Chen", 0.45, True), row("Sam Chen", None, False, "below_floor")]
    unread = read + [row("Sarah Chandler", 0.44, False)]

    assert "read" not in text_of(explain_table(read))
    lines = text_of(explain_table(unread)).splitlines()
    assert lines[0].split()[-1] == "read"
    assert [line.split()[-1] for line in lines if line.startswith("Sa")] == ["yes", "–", "no"]


def test_a_narrow_terminal_drops_the_read_column_and_says_so():
    rows = [row("Sarah Chen", 0.45, True), row("Sarah Chandler", 0.44, False)]
    hidden = []

    explain_table(rows, width=30, hidden=hidden)

    assert "read" in hidden and "lever" not in hidden
