"""Rich renderings shared by the command-line tool and the demo: compact tables of
candidates and entities, and the one-sentence verdict of an explanation."""

from __future__ import annotations

from typing import Any, List, Optional

from rich import box
from rich.console import Console
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


# The signal columns of an explanation (column, Explanation field), in their order.
_SIGNALS = (("trigram", "trigram_similarity"), ("words", "tokens_compatible"), ("name", "name_similarity"),
            ("cooc", "cooccurrence"), ("recency", "recency"))
# At a width where they do not all fit, explain_table leaves columns out in
# this order, least needed first; the candidate's name, its score and the
# decision always stay (the lever of the chosen one is in explain's last line).
_DROPPED_FIRST = ("words", "trigram", "recency", "name", "cooc", "lever", "read")
_SIGNAL_COLUMNS = tuple(column for column, _ in _SIGNALS)
_GAP = 2          # between two columns of new_table
# Measures a table's natural width (a console of the terminal's width would clamp it).
_MEASURE = Console(width=10_000)


def _unread(r: Explanation) -> bool:
    """A scored candidate resolution does not read for the mention (outside the neighbourhood it read)."""
    return r.considered is False and r.score is not None


def _optional_columns(rows: List[Explanation]) -> List[str]:
    """The columns only some explanations need: the lever (or matched form), and whether resolution reads it."""
    return ([c for c in ("lever",) if any(r.lever or r.matched_form for r in rows)]
            + [c for c in ("read",) if any(_unread(r) for r in rows)])


def _lever_cell(r: Explanation) -> str:
    return " ".join(x for x in (r.lever, f"as {r.matched_form!r}" if r.matched_form else None) if x) or "–"


def _explain_table(rows: List[Explanation], title: Optional[str], columns: List[str],
                   name_width: Optional[int]) -> Table:
    table = new_table(title)
    # The name is what a reader looks for: with name_width, a column of that
    # width, the last one rich narrows (a longer name folds).
    table.add_column("candidate", width=name_width, overflow="fold")
    for column, _ in _SIGNALS:
        if column in columns:
            table.add_column(column, justify="right", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("decision", no_wrap=True)
    if "lever" in columns:
        table.add_column("lever", overflow="fold")
    if "read" in columns:
        table.add_column("read", no_wrap=True)
    for r in rows:
        style = _DECISION_STYLE.get(r.decision, "")
        cells = [r.canonical_name]
        cells += [fmt(getattr(r, field)) for column, field in _SIGNALS if column in columns]
        cells += [fmt(r.score), Text(_decision_text(r), style=style)]
        if "lever" in columns:
            cells.append(_lever_cell(r))
        if "read" in columns:
            cells.append("no" if _unread(r) else "yes" if r.score is not None else "–")
        table.add_row(*cells)
    return table


def _decision_text(r: Explanation) -> str:
    return _DECISION_TEXT.get(r.decision, r.decision)


def explain_table(rows: List[Explanation], title: Optional[str] = None, width: Optional[int] = None,
                  hidden: Optional[List[str]] = None) -> Table:
    """The candidates of a mention as a rich table.

    With ``width`` (the terminal's), the table fits it: columns are left out,
    least needed first (_DROPPED_FIRST), before the candidate's name is ever
    folded; the columns left out are appended to ``hidden``.
    """
    optional = _optional_columns(rows)
    columns = list(_SIGNAL_COLUMNS) + optional
    if width is None:
        return _explain_table(rows, title, columns, None)
    for column in (None,) + _DROPPED_FIRST:
        if column in columns:
            columns.remove(column)
        table = _explain_table(rows, title, columns, None)
        if _MEASURE.measure(table).maximum <= width:
            break
    else:
        # Narrower than a name, its score and its decision: the name folds in what is left.
        others = _GAP + len("score") + _GAP + max([len("decision")] + [len(_decision_text(r)) for r in rows])
        longest = max([len("candidate")] + [len(r.canonical_name) for r in rows])
        table = _explain_table(rows, title, columns, max(min(longest, width - others), 1))
    if hidden is not None:
        hidden.extend(c for c in _DROPPED_FIRST if c not in columns and (c in _SIGNAL_COLUMNS or c in optional))
    return table


def verdict(mention: str, rows: List[Explanation]) -> str:
    """One sentence: what resolving the mention would do now."""
    chosen = [r for r in rows if r.decision in TAKEN]
    if chosen:
        c = chosen[0]
        return f"-> {mention!r} resolves to {c.canonical_name!r} (score {fmt(c.score)})"
    scored = [r for r in rows if r.score is not None]
    read = [r for r in scored if not _unread(r)]
    if read:
        # The best score a new entity records: of the candidates resolution reads.
        best = max(read, key=lambda r: r.score)
        unread = (f"; {len(scored) - len(read)} more outside its neighbourhood, not read"
                  if len(read) < len(scored) else "")
        return (f"-> no candidate reaches the threshold (best: {best.canonical_name!r} at "
                f"{fmt(best.score)}{unread}): {mention!r} would become a new entity")
    if scored:
        return (f"-> no candidate it reads reaches the threshold ({len(scored)} outside its neighbourhood, not "
                f"read): {mention!r} would become a new entity")
    if rows:
        return f"-> every candidate was ruled out before scoring: {mention!r} would become a new entity"
    return f"-> no candidate: {mention!r} would become a new entity"


# Why a lever chose a candidate whose score is below the threshold
# (plpython/decide.py: choose, _by_context, _misspelt).
_CHOSEN_BY = {
    # a one-word name one or several entities of its neighbourhood fit; the nearby names only this one
    # was seen with chose it
    "bare_names": "chosen by context: bare-name lever",
    # entities of this name and of other types; the nearby names chose this one
    "typed_mentions": "chosen by context: typed-mention lever",
    # the mention nearly spells this name, and the nearby names are its partners
    "misspellings": "chosen by spelling and context: misspellings lever",
}
# Scores are compared with the threshold at this many decimals (plpython/scoring.py, passes_threshold).
_PRECISION = 6


def why_chosen(rows: List[Explanation], threshold: float) -> Optional[str]:
    """One line: why the chosen candidate won though its score is below the threshold; None when it is not."""
    chosen = next((r for r in rows if r.decision in TAKEN), None)
    if chosen is None or chosen.score is None or round(chosen.score, _PRECISION) >= threshold:
        return None
    how = _CHOSEN_BY.get(chosen.lever or "", f"chosen by the {chosen.lever or 'enhanced profile'} lever")
    # The bare name itself (identical trigrams: scoring.is_identical) when no full name had the context.
    if chosen.lever == "bare_names" and chosen.matched_form is None and \
            round(chosen.trigram_similarity or 0, _PRECISION) >= 1.0:
        how = "chosen as the bare name: bare-name lever (no full name had the context)"
    return f"-> {how}; score {fmt(chosen.score)}, under the threshold {fmt(threshold)}"


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
