"""Names beyond their spelling: nicknames, initials, organisation legal forms.

The levers of the enhanced profile (docs/accuracy.md) read a name as a person
or an organisation would:

* "Bob Smith" is "Robert Smith": a nickname is equivalent to its given name
  (the nicknames package's relations, table name_variants);
* "R. Smith" may be "Robert Smith": an initial is compatible with a word it
  begins, but it is weaker evidence than the word and needs context;
* "Acme", "Acme Inc" and "ACME Corp" are one name: legal forms at the end of an
  organisation's name are decorations (table org_suffixes); "Acme Bank" is
  another name.

Every name here is already lowercased by PostgreSQL. Standard library only.
"""

from typing import Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

import words

# How many alternative forms one mention is probed with at most (each word's
# nickname equivalents multiply them).
MAX_FORMS = 8


class NameData:
    """The shipped name data, as the resolver reads it."""

    def __init__(self, variant_rows: Iterable[Tuple[str, str]] = (), suffix_forms: Iterable[str] = ()):
        self.variants: Dict[str, Set[str]] = {}
        for name, variant in variant_rows:
            if name == variant:
                continue
            # One hop each way: Bob is Robert's, Robert is Bob's.
            self.variants.setdefault(name, set()).add(variant)
            self.variants.setdefault(variant, set()).add(name)
        # A legal form as a sequence of words ("s.a." is s a), by its last
        # word, longest first.
        forms = {tuple(words.split_words(f)) for f in suffix_forms}
        self.suffixes: Dict[str, List[Tuple[str, ...]]] = {}
        for f in sorted((f for f in forms if f), key=lambda f: (-len(f), f)):
            self.suffixes.setdefault(f[-1], []).append(f)
        self._stripped: Dict[Tuple[str, ...], Tuple[str, ...]] = {}

    def equivalents(self, word: str) -> FrozenSet[str]:
        """The words a word may stand for (its nicknames or its given names)."""
        return frozenset(self.variants.get(word, ()))

    def is_given_name(self, word: str) -> bool:
        """True iff the name data knows the word as a given name or a nickname."""
        return word in self.variants

    def strip_suffixes(self, name_words: Tuple[str, ...]) -> Tuple[str, ...]:
        """The words of a name without the legal forms at its end (they stack); never empty."""
        done = self._stripped.get(name_words)
        if done is not None:
            return done
        out = tuple(name_words)
        while len(out) > 1:
            form = next((f for f in self.suffixes.get(out[-1], ()) if len(f) < len(out) and out[-len(f):] == f),
                        None)
            if form is None:
                break
            out = out[:-len(form)]
        if len(self._stripped) < 100000:
            self._stripped[name_words] = out
        return out


EMPTY = NameData()


def stripped(key: str, data: NameData) -> Optional[str]:
    """The name without its legal forms, as words joined by spaces; None when it has none."""
    w = tuple(words.split_words(key))
    s = data.strip_suffixes(w)
    return " ".join(s) if s != w else None


def variant_forms(key: str, data: NameData) -> List[str]:
    """The name with its first word (the given name) replaced by an equivalent (Bob Smith -> Robert Smith).

    Only the given name: the nickname data also relates surnames ("smith",
    "smitty"), which are not nicknames of each other. A few forms at most.
    """
    w = words.split_words(key)
    if not w:
        return []
    out: List[str] = []
    for eq in sorted(data.equivalents(w[0])):
        form = " ".join([eq] + w[1:])
        if form != key and form not in out:
            out.append(form)
        if len(out) >= MAX_FORMS:
            break
    return out


def different_given_names(a: str, b: str, data: NameData) -> bool:
    """True iff the two names begin with two different given names, however close their spelling.

    "Joan Kerr" / "Jean Kerr", "Mabel" / "Abel Quist": both first words are
    names the data knows, neither is a nickname of the other, and neither
    abbreviates the other (a prefix or an initial: "Jen" / "Jennifer" is one
    name). A near spelling of a different given name is not a typo: within
    one surname it is another member of the family, and the shared surname
    is no evidence of identity (issue 31 item 6). A name the data does not
    know is still read as a possible misspelling.
    """
    wa, wb = words.split_words(a), words.split_words(b)
    if not wa or not wb:
        return False
    x, y = wa[0], wb[0]
    if x == y or x.startswith(y) or y.startswith(x):
        return False
    if not (data.is_given_name(x) and data.is_given_name(y)):
        return False
    return y not in data.equivalents(x)


def organisation_words(a: str, b: str, data: NameData) -> Optional[bool]:
    """For two names of which one carries a legal form: whether they name one organisation by their words.

    None when neither has a legal form (not an organisation comparison).
    Otherwise the names without legal forms must have the same words, exactly:
    an organisation's extra word names another one ("Acme Bank" beside
    "Acme"), and a near-spelling is another company ("Initech"/"Innotech")
    as often as a typo.
    """
    wa, wb = tuple(words.split_words(a)), tuple(words.split_words(b))
    sa, sb = data.strip_suffixes(wa), data.strip_suffixes(wb)
    if sa == wa and sb == wb:
        return None
    return sa == sb
