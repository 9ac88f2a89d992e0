"""The one parser of function headers: every part of the build that reads a header reads it here.

A header is read from the tokens of its statement (lexer.py), so it may be
laid out as its author likes: arguments across lines, comments, defaults
with parentheses or quotes, options in any order or on one line, options
after the body. A ``CREATE FUNCTION`` the parser cannot read fails the build
with the file and the function named (:class:`BuildError`); nothing is
skipped in silence.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from entity_resolver.build.errors import BuildError
from entity_resolver.build.lexer import Statement, Token, statements, tokens

# The words that begin a clause of CREATE FUNCTION after the argument list.
_CLAUSE_WORDS = {"RETURNS", "LANGUAGE", "IMMUTABLE", "STABLE", "VOLATILE", "STRICT", "CALLED", "SECURITY",
                 "EXTERNAL", "SET", "PARALLEL", "COST", "ROWS", "SUPPORT", "LEAKPROOF", "NOT", "WINDOW",
                 "TRANSFORM", "AS"}
# ... unless they continue the clause of the word before (EXTERNAL SECURITY DEFINER, NOT LEAKPROOF).
_CONTINUING = {"EXTERNAL", "NOT"}
_MODES = {"IN", "OUT", "INOUT", "VARIADIC"}
_MARKER = re.compile(r"\s*(\w+)\.(\w+)\s*")


@dataclass(frozen=True)
class Arg:
    """An argument (or a column of ``RETURNS TABLE``): its name, its type (one line) and its default."""

    name: str
    type: str
    default: Optional[str]
    mode: str = ""   # IN, OUT, INOUT or VARIADIC when the header says


@dataclass(frozen=True)
class FunctionHeader:
    """A ``CREATE FUNCTION`` statement of ``source``: its parts, and where they are in the text.

    Offsets index the text the header was read from: ``start`` is the word
    CREATE, ``end`` the statement's semicolon (or the text's end),
    ``name_start``/``name_end`` the qualified name, ``language_start``/
    ``language_end`` the LANGUAGE clause, ``body_start``/``body_end`` the body
    inside its dollar quotes (``tag``; ``'`` for a body in single quotes, as
    ``LANGUAGE internal`` has).
    """

    source: str
    qual: str
    name: str
    args_text: str
    args: Tuple[Arg, ...]
    returns: str
    language: str
    options: Tuple[str, ...]
    tag: str
    start: int
    end: int
    name_start: int
    name_end: int
    language_start: int
    language_end: int
    body_start: int
    body_end: int

    @property
    def qualified_name(self) -> str:
        return f"{self.qual}.{self.name}" if self.qual else self.name

    def body(self, text: str) -> str:
        return text[self.body_start:self.body_end]

    def marker(self, text: str) -> Optional[Tuple[str, str]]:
        """(module, function) when the body is an entry point's marker (``module.function``)."""
        m = _MARKER.fullmatch(self.body(text))
        return (m.group(1), m.group(2)) if m else None

    def option_lines(self) -> str:
        """The options, one a line (each line ends with a newline)."""
        return "".join(option + "\n" for option in self.options)

    def check_in_arguments(self, what: str) -> None:
        """Fail the build if an argument is OUT, INOUT or VARIADIC: ``what`` passes arguments one by one."""
        moded = [f"{a.mode} {a.name}" for a in self.args if a.mode not in ("", "IN")]
        if moded:
            raise BuildError(f"{self.source}: {self.qualified_name}: {what} takes IN arguments only, "
                             f"not {', '.join(moded)}")

    def volatility(self) -> str:
        for option in self.options:
            if option.upper() in ("IMMUTABLE", "STABLE", "VOLATILE"):
                return option.upper()
        return "VOLATILE"


def _word(text: str, token: Token) -> str:
    return text[token.start:token.end].upper() if token.kind == "word" else ""


def _is(text: str, token: Token, punct: str) -> bool:
    return token.kind == "punct" and text[token.start] == punct


def _without_comments(text: str, toks: Sequence[Token]) -> str:
    """The text from the first token to the last, comments left out, on one line."""
    pieces, pos = [], toks[0].start
    for t in toks:
        if t.kind == "comment":
            pieces.append(text[pos:t.start])
            pos = t.end
    pieces.append(text[pos:toks[-1].end])
    return " ".join(" ".join(pieces).split())


def _split_top_level(text: str, toks: Sequence[Token]) -> List[List[Token]]:
    """The tokens split at commas outside parentheses and brackets."""
    parts: List[List[Token]] = [[]]
    depth = 0
    for t in toks:
        if t.kind == "punct" and text[t.start] in "([":
            depth += 1
        elif t.kind == "punct" and text[t.start] in ")]":
            depth -= 1
        elif depth == 0 and _is(text, t, ","):
            parts.append([])
            continue
        parts[-1].append(t)
    return parts


def _parse_arg(text: str, toks: List[Token], where: str) -> Arg:
    code = [t for t in toks if t.kind != "comment"]
    if not code:
        raise BuildError(f"{where}: an empty argument")
    shown = text[code[0].start:code[-1].end]
    mode = _word(text, code[0]) if _word(text, code[0]) in _MODES else ""
    if mode:
        code = code[1:]
    if len(code) < 2 or code[0].kind not in ("word", "ident"):
        raise BuildError(f"{where}: cannot read argument {shown!r} (a name and a type are expected)")
    depth, split = 0, None
    for i, t in enumerate(code[1:], 1):
        if t.kind == "punct" and text[t.start] in "([":
            depth += 1
        elif t.kind == "punct" and text[t.start] in ")]":
            depth -= 1
        elif depth == 0 and (_word(text, t) == "DEFAULT" or _is(text, t, "=")):
            split = i
            break
    type_tokens = code[1:split] if split else code[1:]
    if not type_tokens or (split is not None and split + 1 >= len(code)):
        raise BuildError(f"{where}: cannot read argument {shown!r}")
    type_ = _without_comments(text, [t for t in toks if type_tokens[0].start <= t.start <= type_tokens[-1].start])
    default = text[code[split + 1].start:code[-1].end] if split else None
    return Arg(text[code[0].start:code[0].end], type_, default, mode)


def parse_args(text: str, where: str = "arguments") -> List[Arg]:
    """The arguments of an argument list (or the columns of ``TABLE (...)``), without parentheses."""
    toks = list(tokens(text))
    if not [t for t in toks if t.kind != "comment"]:
        return []
    return [_parse_arg(text, part, where) for part in _split_top_level(text, toks)]


def table_columns(returns: str) -> Optional[List[Arg]]:
    """The columns of ``TABLE (...)``; None for a scalar result."""
    m = re.fullmatch(r"TABLE\s*\((.*)\)", returns.strip(), re.S | re.I)
    return parse_args(m.group(1), "RETURNS TABLE") if m else None


class _Reader:
    """Reads one CREATE FUNCTION statement's non-comment tokens, left to right."""

    def __init__(self, text: str, toks: List[Token], source: str, line: int):
        self.text, self.source, self.line = text, source, line
        self.toks = [t for t in toks if t.kind != "comment"]
        self.i = 0
        self.name = "?"

    def fail(self, why: str) -> BuildError:
        return BuildError(f"{self.source}, line {self.line}: cannot read the header of function "
                          f"{self.name}: {why}")

    def peek(self, ahead: int = 0) -> Optional[Token]:
        j = self.i + ahead
        return self.toks[j] if j < len(self.toks) else None

    def word(self, ahead: int = 0) -> str:
        t = self.peek(ahead)
        return _word(self.text, t) if t else ""

    def take(self) -> Token:
        t = self.peek()
        if t is None:
            raise self.fail("the statement ends too soon")
        self.i += 1
        return t

    def is_punct(self, ch: str) -> bool:
        t = self.peek()
        return t is not None and _is(self.text, t, ch)


def _is_function(text: str, toks: List[Token]) -> bool:
    words = [_word(text, t) for t in toks if t.kind != "comment"][:4]
    return words[:2] == ["CREATE", "FUNCTION"] or words == ["CREATE", "OR", "REPLACE", "FUNCTION"]


def _read_name(r: _Reader) -> Tuple[str, str, int, int]:
    """(qualifier, name, start, end) of the name before the argument list."""
    first = r.peek()
    parts: List[Token] = []
    while r.peek() is not None and not r.is_punct("("):
        parts.append(r.take())
    if not parts or parts[-1].kind not in ("word", "ident"):
        raise r.fail("no function name before an argument list")
    last = parts[-1]
    r.name = r.text[first.start:last.end]
    qual = ""
    if len(parts) > 1:
        if not _is(r.text, parts[-2], "."):
            raise r.fail(f"cannot read the name {r.name!r}")
        qual = r.text[first.start:parts[-2].start].strip()
    return qual, r.text[last.start:last.end], first.start, last.end


def _read_args(r: _Reader) -> Tuple[str, Tuple[Arg, ...]]:
    """The argument list's text (inside the parentheses) and its arguments."""
    opening = r.take()
    depth = 1
    while depth:
        t = r.take()
        if t.kind == "punct" and r.text[t.start] == "(":
            depth += 1
        elif t.kind == "punct" and r.text[t.start] == ")":
            depth -= 1
    args_text = r.text[opening.end:t.start]
    return args_text, tuple(parse_args(args_text, f"{r.source}: function {r.name}"))


def _read_body(r: _Reader) -> List[Token]:
    """The tokens of AS's definition: a dollar-quoted body, or a string (and a C function's link symbol)."""
    body = r.take()
    if body.kind not in ("dollar", "string"):
        raise r.fail("AS takes the body as one dollar-quoted or quoted string")
    if body.kind == "string" and r.is_punct(","):
        return [body, r.take(), r.take()]
    return [body]


def _read_clauses(r: _Reader) -> List[Tuple[str, List[Token]]]:
    """The clauses after the argument list: (first word, tokens); AS's tokens after the word are the body."""
    clauses: List[Tuple[str, List[Token]]] = []
    depth = 0
    while r.peek() is not None:
        t = r.take()
        w = _word(r.text, t)
        previous = clauses[-1][1][-1] if clauses and clauses[-1][1] else None
        starts = depth == 0 and w in _CLAUSE_WORDS and not (
            previous is not None and _word(r.text, previous) in _CONTINUING)
        if starts:
            clauses.append((w, [t]))
            if w == "AS":
                clauses[-1][1].extend(_read_body(r))
            continue
        if not clauses:
            raise r.fail(f"unexpected {r.text[t.start:t.end]!r} after the arguments")
        if clauses[-1][0] == "AS":
            raise r.fail(f"unexpected {r.text[t.start:t.end]!r} after the body")
        if t.kind == "punct" and r.text[t.start] in "([":
            depth += 1
        elif t.kind == "punct" and r.text[t.start] in ")]":
            depth -= 1
        clauses[-1][1].append(t)
    return clauses


def _one(r: _Reader, clauses: List[Tuple[str, List[Token]]], word: str) -> List[Token]:
    found = [toks for w, toks in clauses if w == word]
    if len(found) != 1:
        raise r.fail(f"{len(found)} {word} clauses (one is expected)")
    return found[0]


def _returns(r: _Reader, clauses: List[Tuple[str, List[Token]]], args: Sequence[Arg]) -> List[Token]:
    """The RETURNS clause's tokens; none when OUT arguments say what the function returns."""
    if not any(w == "RETURNS" for w, _ in clauses) and any(a.mode in ("OUT", "INOUT") for a in args):
        return []
    returns = _one(r, clauses, "RETURNS")
    if len(returns) < 2:
        raise r.fail("RETURNS without a type")
    return returns


def _returns_null_on_null_input(text: str, toks: List[Token]) -> bool:
    return [_word(text, t) for t in toks[1:]] == ["NULL", "ON", "NULL", "INPUT"]


def _read_header(text: str, statement: Statement, source: str) -> FunctionHeader:
    start = next(t for t in statement.tokens if t.kind != "comment").start
    r = _Reader(text, statement.tokens, source, text.count("\n", 0, start) + 1)
    while not (r.word() == "FUNCTION"):
        r.take()
    r.take()
    qual, name, name_start, name_end = _read_name(r)
    args_text, args = _read_args(r)
    clauses = [(w if not (w == "RETURNS" and _returns_null_on_null_input(text, toks)) else "OPTION", toks)
               for w, toks in _read_clauses(r)]
    returns = _returns(r, clauses, args)
    language = _one(r, clauses, "LANGUAGE")
    if len(language) != 2:
        raise r.fail("LANGUAGE takes one name")
    body = _one(r, clauses, "AS")[1]
    tag = re.match(r"\$\w*\$|'", text[body.start:body.end]).group(0)
    return FunctionHeader(
        source=source, qual=qual, name=name, args_text=args_text, args=args,
        returns=text[returns[1].start:returns[-1].end] if returns else "",
        language=text[language[1].start:language[1].end].strip("'\"").lower(),
        options=tuple(text[toks[0].start:toks[-1].end] for w, toks in clauses
                      if w not in ("RETURNS", "LANGUAGE", "AS")),
        tag=tag, start=start, end=statement.end,
        name_start=name_start, name_end=name_end,
        language_start=language[0].start, language_end=language[1].end,
        body_start=body.start + len(tag), body_end=body.end - len(tag),
    )


@functools.lru_cache(maxsize=512)
def function_headers(text: str, source: str = "<sql>") -> Tuple[FunctionHeader, ...]:
    """Every ``CREATE [OR REPLACE] FUNCTION`` of ``text`` outside quotes and comments, in order.

    Cached: each step of the build reads the headers of the same files (an
    install builds the script, a test suite installs many times).
    """
    return tuple(_read_header(text, statement, source) for statement in statements(text)
                 if _is_function(text, statement.tokens))
