"""``python -m bench`` (what ``make bench`` runs): the benchmark of bench/run.py.

The options are those of ``entity-resolver bench``, declared once in the
command-line tool, which calls the same ``run_bench``.
"""

import typer

from entity_resolver.cli import bench_cmd

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
app.command()(bench_cmd)

if __name__ == "__main__":
    app(prog_name="python -m bench")
