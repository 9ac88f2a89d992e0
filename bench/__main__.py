"""``python -m bench`` (what ``make bench`` runs): the benchmark of bench/run.py, options in bench/cli.py."""

from bench.cli import main

if __name__ == "__main__":
    main()
