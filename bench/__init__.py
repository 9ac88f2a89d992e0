"""Tooling, not part of the installed package: the benchmark (``python -m bench``,
bench/run.py), the seeded corpus generator and its corpora, and the soak."""
