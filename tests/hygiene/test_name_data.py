"""The vendored name data (data/) is well-formed: the install loads it as it stands.

data/nicknames.tsv is generated (scripts/update_name_data.py) and
data/org_suffixes.tsv hand-curated; both become tables at install time, where a
duplicate key, a stray capital or a missing column would fail the install or
silently never match, since the resolver compares lowercased names.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Tuple

DATA = Path(__file__).resolve().parents[2] / "data"


def read_tsv(name: str) -> Tuple[List[str], List[str], List[Tuple[str, ...]]]:
    """(comment lines, header, rows) of a data file."""
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    comments = [line for line in lines if line.startswith("#")]
    body = [line for line in lines if not line.startswith("#")]
    return comments, body[0].split("\t"), [tuple(line.split("\t")) for line in body[1:]]


def test_nicknames_name_their_source_version_and_licence():
    comments, header, rows = read_tsv("nicknames.tsv")
    assert re.search(r"package nicknames \d+\.\d+", comments[0])
    assert "Apache-2.0" in "\n".join(comments)
    assert header == ["name", "nickname", "relationship"]
    assert len(rows) > 2000


def test_nicknames_are_lowercase_sorted_unique_rows():
    _, _, rows = read_tsv("nicknames.tsv")
    assert all(len(r) == 3 and all(c and c == c.lower() and c == c.strip() for c in r) for r in rows)
    assert rows == sorted(set(rows))
    assert not [r for r in rows if r[0] == r[1]]


def test_nicknames_hold_the_relations_the_issue_names():
    _, _, rows = read_tsv("nicknames.tsv")
    pairs = {(a, b) for a, b, _ in rows}
    assert {("robert", "bob"), ("robert", "rob"), ("william", "bill"), ("katherine", "kate")} <= pairs


def test_org_suffix_forms_are_lowercase_sorted_and_in_one_group_each():
    _, header, rows = read_tsv("org_suffixes.tsv")
    assert header == ["canonical", "form"]
    assert all(len(r) == 2 and all(c and c == c.lower() and c == c.strip() for c in r) for r in rows)
    assert rows == sorted(set(rows))
    forms = [form for _, form in rows]
    assert len(forms) == len(set(forms)), "a form belongs to exactly one group"
    # The canonical spelling is itself a form of its group, so a lookup by form finds it.
    assert {c for c, _ in rows} <= set(forms)


def test_org_suffixes_group_abbreviations_with_their_long_forms():
    _, _, rows = read_tsv("org_suffixes.tsv")
    group = dict((form, canonical) for canonical, form in rows)
    assert group["corp."] == group["corporation"] == group["corp"]
    assert group["inc."] == group["incorporated"] == group["inc"]
    assert group["limited"] == group["ltd"]
    for form in ("co", "company", "llc", "llp", "lp", "plc", "gmbh", "ag", "sa", "sas", "sarl", "nv", "bv",
                 "pty", "oy", "ab", "as", "kk", "spa", "srl"):
        assert form in group, form
    # Words that name what a company does are no legal form: "Acme Bank" is not "Acme".
    for word in ("bank", "group", "holdings", "industries"):
        assert word not in group
