"""Rich renderings shared by the command-line tool and the demo: compact tables of
candidates and entities, and the one-sentence verdict of an explanation."""

from __future__ import annotations

from typing import Any, List, Optional

from rich import box
from rich.table import Table
from rich.text import Text

from entity_resolver.client import Explanation


def new_table(title: Optional[str] = None, **kwargs: Any) -> Table:
    """A compact table: fits an 80-column terminal where a boxed one would wrap."""
    return Table(title=title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD,
                 pad_edge=False, show_edge=False, collapse_padding=True, **kwargs)


def fmt(value: Any, digits: int = 3) -> str:
    """A cell: – for nothing, yes/no, rounded floats, dates to the minute."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    if hasattr(value, "strftime"):
        return value.strftime("%Y-%m-%d %H:%M")
    return str(value)


_DECISION_STYLE = {
    "chosen": "bold green", "outscored": "yellow", "below_threshold": "",
    "word_mismatch": "red", "below_floor": "dim", "label_row": "magenta",
    "alias": "bold green", "memory": "bold green", "type_mismatch": "red", "ambiguous": "yellow",
    "needs_context": "yellow",
}
_DECISION_TEXT = {
    "chosen": "chosen",
    "outscored": "outscored",
    "below_threshold": "< threshold",
    "word_mismatch": "words differ",
    "below_floor": "< floor",
    "label_row": "label row",
    "alias": "alias",
    "memory": "remembered",
    "type_mismatch": "other type",
    "ambiguous": "ambiguous",
    "needs_context": "needs context",
}
# The decisions of a row that a resolution takes.
TAKEN = ("chosen", "alias", "memory")


def explain_table(rows: List[Explanation], title: Optional[str] = None) -> Table:
    """The candidates of a mention as a rich table."""
    table = new_table(title)
    table.add_column("candidate", overflow="fold")
    for col in ("trigram", "words", "name", "cooc", "recency", "score"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("decision", no_wrap=True)
    levers = any(r.lever or r.matched_form for r in rows)
    if levers:
        table.add_column("lever", no_wrap=True)
    for r in rows:
        style = _DECISION_STYLE.get(r.decision, "")
        cells = [r.canonical_name, fmt(r.trigram_similarity), fmt(r.tokens_compatible),
                 fmt(r.name_similarity), fmt(r.cooccurrence), fmt(r.recency), fmt(r.score),
                 Text(_DECISION_TEXT.get(r.decision, r.decision), style=style)]
        if levers:
            cells.append(" ".join(x for x in (r.lever, f"as {r.matched_form!r}" if r.matched_form else None) if x)
                         or "–")
        table.add_row(*cells)
    return table


def verdict(mention: str, rows: List[Explanation]) -> str:
    """One sentence: what resolving the mention would do now."""
    chosen = [r for r in rows if r.decision in TAKEN]
    if chosen:
        c = chosen[0]
        return f"-> {mention!r} resolves to {c.canonical_name!r} (score {fmt(c.score)})"
    scored = [r for r in rows if r.score is not None]
    if scored:
        best = max(scored, key=lambda r: r.score)
        return (f"-> no candidate reaches the threshold (best: {best.canonical_name!r} at "
                f"{fmt(best.score)}): {mention!r} would become a new entity")
    if rows:
        return f"-> every candidate was ruled out before scoring: {mention!r} would become a new entity"
    return f"-> no candidate: {mention!r} would become a new entity"


def entities_table(rows: List[Any], title: Optional[str] = None) -> Table:
    """Entities as a rich table."""
    table = new_table(title)
    table.add_column("entity", overflow="fold")
    table.add_column("kind")
    table.add_column("mentions", justify="right")
    table.add_column("degree", justify="right")
    table.add_column("last seen", no_wrap=True)
    for e in rows:
        table.add_row(e.canonical_name, e.entity_kind, str(e.mention_count), str(e.degree), fmt(e.last_seen))
    return table
