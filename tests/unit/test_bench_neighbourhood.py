"""bench.neighbourhood_speed: the targets it reports are read from its figures, not restated."""

from bench.neighbourhood_speed import markdown, targets


def _size(entities, off, on, ratio, differing=0):
    return {"entities": entities, "off_ms": {"median": off, "p95": off}, "on_ms": {"median": on, "p95": on},
            "median_ratio": ratio, "differing_mentions": differing}


def test_the_targets_follow_the_figures():
    r = {"sizes": {"10000": _size(10_000, 50.0, 60.0, 1.2), "100000": _size(100_000, 240.0, 110.0, 0.46),
                   "1000000": _size(1_000_000, 900.0, 85.0, 0.1, differing=1)},
         "curve": {"from": 10_000, "to": 1_000_000, "on": 1.42, "off": 18.0}}
    got = targets(r)
    assert got["neighbourhood ÷ full probe, one batch, 100,000 entities"]["met"] is True
    assert got["neighbourhood batch at 1,000,000 ÷ at 10,000 entities"] == {"target": "<= 1.5", "value": 1.42,
                                                                             "met": True}
    # A mention decided differently is a failure, whatever the speed.
    assert got["mentions decided differently, neighbourhood against full probe"]["met"] is False
    r["sizes"]["100000"]["median_ratio"] = 0.55
    assert targets(r)["neighbourhood ÷ full probe, one batch, 100,000 entities"]["met"] is False
    table = "\n".join(markdown(r))
    assert "| 1,000,000 | 900.0 | 900.0 | 85.0 | 85.0 | 0.10 | 1 |" in table


def test_without_a_million_the_curve_is_no_target():
    r = {"sizes": {"10000": _size(10_000, 50.0, 60.0, 1.2), "100000": _size(100_000, 240.0, 110.0, 0.46)},
         "curve": {"from": 10_000, "to": 100_000, "on": 1.83, "off": 4.8}}
    assert not any("÷ at" in name for name in targets(r))
