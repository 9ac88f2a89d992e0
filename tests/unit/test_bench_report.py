"""bench.report: the targets of `make bench`, each read from its figures against the issue that set it."""

from bench.report import targets


def test_four_writers_are_held_to_the_issue_s_target_for_each_size():
    def size(entities, mps):
        return {"entities": entities, "ratio_of_medians": 0.4, "trigger": {"4": {"mentions_per_second": mps}}}

    got = targets({"sizes": {"10000": size(10_000, 1200.0), "100000": size(100_000, 1200.0),
                             "1000000": size(1_000_000, 1200.0)}})
    assert got["trigger with 4 writers at 10,000 entities"]["met"] is True
    assert got["trigger with 4 writers at 100,000 entities"] == {"target": ">= 1500 mentions/s", "value": 1200.0,
                                                                 "met": False}
    assert got["trigger with 4 writers at 1,000,000 entities"]["target"] == ">= 1000 mentions/s"
