"""The one reading of SQL text: tokens and statements, respecting quotes, dollar quotes and comments.

:func:`split_statements` (the distributed installer sends a script one
statement at a time) and the function-header parser (headers.py) both read
SQL through :func:`tokens`, so a quote or a comment means the same to both.
"""

from __future__ import annotations

import re
from typing import Iterator, List, NamedTuple

from entity_resolver.build.errors import BuildError

_DOLLAR_TAG = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$")


class Token(NamedTuple):
    """``kind`` is comment, string ('...', E'...'), ident ("..."), dollar ($tag$...$tag$), word or punct."""

    kind: str
    start: int
    end: int


def _in_word(ch: str) -> bool:
    return ch.isalnum() or ch in "_$"


def _comment_end(text: str, i: int) -> int:
    """The end of the comment starting at ``i`` (``--`` to the line's end, or nested ``/* */``)."""
    n = len(text)
    if text.startswith("--", i):
        j = text.find("\n", i)
        return n if j < 0 else j + 1
    depth, i = 1, i + 2
    while i < n and depth:
        if text.startswith("/*", i):
            depth, i = depth + 1, i + 2
        elif text.startswith("*/", i):
            depth, i = depth - 1, i + 2
        else:
            i += 1
    return i


def _quoted_end(text: str, i: int) -> int:
    """The end of the quoted string or identifier at ``i`` (doubled quotes, E'' backslashes)."""
    c, n = text[i], len(text)
    backslash = c == "'" and i > 0 and text[i - 1] in "eE" and (i < 2 or not _in_word(text[i - 2]))
    i += 1
    while i < n:
        if backslash and text[i] == "\\":
            i += 2
            continue
        if text[i] == c:
            if text.startswith(c * 2, i):
                i += 2
                continue
            break
        i += 1
    return i + 1


def tokens(text: str) -> Iterator[Token]:
    """The tokens of ``text`` in order (whitespace skipped); an unterminated dollar quote is an error."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if text.startswith("--", i) or text.startswith("/*", i):
            end, kind = _comment_end(text, i), "comment"
        elif c in "'\"":
            end, kind = _quoted_end(text, i), "string" if c == "'" else "ident"
        elif c == "$" and (i == 0 or not _in_word(text[i - 1])) and _DOLLAR_TAG.match(text, i):
            tag = _DOLLAR_TAG.match(text, i).group(0)
            j = text.find(tag, i + len(tag))
            if j < 0:
                raise BuildError(f"unterminated dollar quote {tag} in the script")
            end, kind = j + len(tag), "dollar"
        elif c.isalpha() or c == "_":
            end = i + 1
            while end < n and _in_word(text[end]):
                end += 1
            kind = "word"
        else:
            end, kind = i + 1, "punct"
        yield Token(kind, i, min(end, n))
        i = end


class Statement(NamedTuple):
    """A statement: from after the previous semicolon to its own (``end``), and its tokens."""

    start: int
    end: int
    tokens: List[Token]


def statements(text: str) -> Iterator[Statement]:
    """The statements of a script, in order; statements that are only comments are dropped."""
    start, current, code = 0, [], False
    for token in tokens(text):
        if token.kind == "punct" and text[token.start] == ";":
            if code:
                yield Statement(start, token.start, current)
            start, current, code = token.end, [], False
            continue
        current.append(token)
        code = code or token.kind != "comment"
    if code:
        yield Statement(start, len(text), current)


def split_statements(text: str) -> List[str]:
    """The statements of a script, in order, each without its semicolon.

    Citus forwards a DDL statement to the shards as the query string it came
    in, and a string of several statements is refused there (42601): a
    distributed installation sends its script one statement at a time.
    Quotes, dollar quotes and comments are respected; statements that are
    only comments are dropped.
    """
    return [text[s.start:s.end].strip() for s in statements(text)]
