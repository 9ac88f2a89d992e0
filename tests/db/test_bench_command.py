"""The benchmark's command line (bench/cli.py, ``python -m bench``, ``make bench``): the
tooling's own entry point, outside the product (tests/hygiene/test_product_boundary.py)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bench.cli import app

CLEAN_ENV = {"ENTITY_RESOLVER_DSN": None, "ENTITY_RESOLVER_SCHEMA": None, "COLUMNS": "200"}


@pytest.mark.slow
def test_bench_runs_on_a_tiny_bank(pg_cluster):
    # The corpora replay is test_accuracy's, the held-out one test_heldout_levers's; the banks
    # side by side at a small scale.
    result = CliRunner().invoke(app, ["--dsn", pg_cluster.dsn(), "--sizes", "300", "--batches", "2",
                                      "--writer-seconds", "0.2", "--no-out", "--no-imports", "--no-accuracy",
                                      "--no-heldout", "--neighbours", "2000", "--reresolve-facts", "100",
                                      "--import-facts", "50", "--json"], env=CLEAN_ENV)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert "300" in data["sizes"] and "evaluation" not in data and "heldout" not in data
    assert data["neighbours"]["others"] == 2000 and data["neighbours"]["ratio_of_medians"] > 0
    assert data["reresolve"]["plan_facts"] == 100 and data["reresolve"]["seconds"] > 0
    assert data["attributes"]["batches"] == 2 and data["attributes"]["ratio_of_medians"] > 0
    assert data["attributes"]["mentions_with_attributes_per_batch"] > 0
    # auto_reresolve: two INSERTs of 10 facts with it on were queued, and reresolve_queued emptied the queue.
    assert data["auto_reresolve"]["facts"] == 100 and data["auto_reresolve"]["queued"] == 20
    assert data["auto_reresolve"]["calls"] == 2 and data["auto_reresolve"]["ratio_of_medians"] > 0
    # The bulk import: every fact of the file imported into the bank, each of several mentions.
    bulk = data["sizes"]["300"]["bulk_import"]
    assert bulk["facts"] == 50 and bulk["mentions"] >= 4 * 50 and bulk["mentions_per_second"] > 0


def test_a_bad_size_is_one_error_line_and_exit_status_1(pg_cluster):
    result = CliRunner().invoke(app, ["--dsn", pg_cluster.dsn(), "--sizes", "ten", "--no-out"], env=CLEAN_ENV)
    assert result.exit_code == 1
    assert result.stderr.strip() == "error: --sizes: expected comma-separated integers, got 'ten'"
