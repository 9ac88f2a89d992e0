"""Benchmark and evaluation inputs: the seeded corpus generator and its corpora."""
