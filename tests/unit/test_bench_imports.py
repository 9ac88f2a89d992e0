"""make bench's import and per-fact benchmarks replay the corpora beside older releases, which read fewer keys."""

from __future__ import annotations

import json
from pathlib import Path

from bench.imports import _untyped
from bench.per_fact import load_corpora

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


# The keys of a mention the per-fact benchmark's baseline (f872891) accepts.
PER_FACT_BASELINE_KEYS = {"event_date", "nearby", "resolve", "text", "type"}


def test_the_per_fact_replay_gives_its_baseline_only_what_it_reads():
    data = load_corpora(CORPORA)
    assert len(data) == len(list(CORPORA.glob("*.jsonl")))
    for name, (_config, facts) in data.items():
        for _content, mentions, _date in facts:
            for m in json.loads(mentions):
                assert isinstance(m, str) or set(m) <= PER_FACT_BASELINE_KEYS, (name, m)
