"""The review queue's reading of two names: whether the resolver's own rules let one stand for the other
only with context.

review_queue lists two entities as a likely duplicate when their names are
close and their facts share partners. Some pairs the resolver's screening
(screen.py) passes only as weaker evidence that needs context: a nickname
("Bill Turner" / "William Turner", table name_variants), an initial
("K. Doyle" / "Kevin Doyle"), or a shorter name the longer one's words cover
("Sarah" / "Sarah Connor", the bare_names case). Where the context was not
there when the mention arrived, the resolver made a new entity; later facts
need not link the two, so only review can bring them together. Such a pair is
an item even without partners in common, and says how the names fit.

The check is the resolver's, with the bank's settings and name data: the
screening of one name as a candidate for the other (the word check, two
different given names, legal forms), the shorter name as the mention.
"""

from typing import Any, Dict, List, Optional

import banks
import screen
import words
from scoring import Candidate

# How two names fit besides their spelling (screen's Candidate.how), and a
# shorter name whose words the longer one's include.
INITIAL, VARIANT, COVERED = "initial", "variant", "covered"


def fit(a: str, b: str, cfg: Dict[str, Any], data) -> Optional[str]:
    """How one folded name may stand for the other only with context: INITIAL, VARIANT, COVERED; else None.

    None also when the screening refuses the pair (other words, another
    given name): a plain near spelling is left to the partners in common.
    """
    wa, wb = words.split_words(a), words.split_words(b)
    if len(wa) > len(wb):
        a, b, wa, wb = b, a, wb, wa
    # The floor was checked by the caller (pg_trgm similarity): 1.0 here.
    (cand, skipped), = screen.screen(a, [Candidate(None, b, 1.0, None)], cfg, names=data)
    if skipped is not None:
        return None
    if cand.how in (INITIAL, VARIANT):
        return cand.how
    if len(wa) < len(wb) and set(wa) <= set(wb):
        return COVERED
    return None


def name_fits_sql(plpy, bank_id: str, a: Optional[List[str]], b: Optional[List[str]]) -> List[Optional[str]]:
    """_name_fits: for each pair of folded names (a[i], b[i]), how one may stand for the other (fit), or NULL."""
    cfg = banks.read_bank(plpy, bank_id).cfg
    data = banks.name_data(plpy, cfg)
    return [fit(x, y, cfg, data) for x, y in zip(a or [], b or [])]
