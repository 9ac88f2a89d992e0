"""make bench's import benchmark reads one stream three ways, the 0.1.0 release's importer among them."""

from __future__ import annotations

import json
from pathlib import Path

from bench.imports import _untyped

CORPORA = Path(__file__).resolve().parents[2] / "bench" / "corpora"
# The keys of a mention 0.1.0's importer accepts (it refuses a file with any other).
BASELINE_KEYS = {"event_date", "gold", "nearby", "resolve", "text"}


def test_the_corpora_are_imported_in_a_shape_the_baseline_reads():
    files = sorted(CORPORA.glob("*.jsonl"))
    assert any('"attributes"' in p.read_text(encoding="utf-8") for p in files)   # what it must strip
    for path in files:
        facts = [json.loads(line) for line in _untyped(path).splitlines()]
        assert len(facts) == len(path.read_text(encoding="utf-8").splitlines())
        for fact in facts:
            for m in fact["mentions"]:
                assert isinstance(m, str) or set(m) <= BASELINE_KEYS, (path.name, m)
