"""plpython/review.py: how the review queue reads two entities' names with the resolver's screening
(a nickname, an initial, a name in short fit only with context; a near spelling or another given name does not)."""

import pytest

import names
import review
from settings import DEFAULTS

ENHANCED = dict(DEFAULTS)
REFERENCE = dict(DEFAULTS, profile="reference")
DATA = names.NameData([("william", "bill"), ("margaret", "meg"), ("joan", "jo"), ("jean", "jeanie")], [])


@pytest.mark.parametrize("a, b, how", [
    ("bill turner", "william turner", review.VARIANT),
    ("william turner", "bill turner", review.VARIANT),      # either order
    ("k. doyle", "kevin doyle", review.INITIAL),
    ("sarah", "sarah connor", review.COVERED),
    ("sarah connor", "sarah", review.COVERED),
    ("jon smithson", "john smithson", None),                # a spelling: left to the partners in common
    ("joan kerr", "jean kerr", None),                       # two given names the data knows
    ("sarah connor", "sarah chen", None),                   # other words
    ("alice chen", "alice chen", None),
])
def test_fit(a, b, how):
    assert review.fit(a, b, ENHANCED, DATA) == how


def test_without_the_name_variants_lever_a_nickname_does_not_fit():
    assert review.fit("bill turner", "william turner", dict(ENHANCED, name_variants=False), DATA) is None
    assert review.fit("bill turner", "william turner", REFERENCE, DATA) is None
