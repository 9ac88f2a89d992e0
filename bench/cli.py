"""The benchmark's command line: ``python -m bench`` (what ``make bench`` runs).

The benchmark is tooling of the repository checkout, not part of the installed
package: it imports the product (the installer, the embedded cluster, the
command-line tool's options and error handling), the product never imports it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from entity_resolver.cli import (CliError, DataDirOpt, DsnOpt, JsonOpt, _check_dsn, _embedded, _err, _handled, _out,
                                 _print_json)

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)


def _citus_bench(seconds: float, out: Optional[Path], as_json: bool) -> None:
    """--citus: bench/citus.py's run_citus_bench, reported."""
    from bench.citus import markdown, run_citus_bench

    err = _err()
    result = run_citus_bench(seconds=seconds, out=out,
                             progress=None if as_json else (lambda msg: err.print(msg, style="dim")))
    if as_json:
        _print_json(result)
        return
    print(markdown(result))
    if out is not None:
        _out().print(f"figures written into {out}")


@app.command()
@_handled
def bench(
    sizes: Annotated[str, typer.Option("--sizes", help="Bank sizes (entities), comma-separated (1000000 takes about 15 minutes more).")] = "10000,100000",
    out: Annotated[Optional[Path], typer.Option("--out", help="Markdown report to write.")] = Path("docs/benchmarks.md"),
    no_out: Annotated[bool, typer.Option("--no-out", help="Write no report file (neither benchmarks.md nor evaluation.md).")] = False,
    batches: Annotated[int, typer.Option("--batches", min=1, help="Timed batches per size.")] = 30,
    writer_seconds: Annotated[float, typer.Option("--writer-seconds", min=0.1, help="Seconds per write-throughput run.")] = 12.0,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the scratch database.")] = False,
    imports: Annotated[bool, typer.Option("--imports/--no-imports", help="Also time imports: default batch, "
                                          "batch 1 and the 0.1.0 release, and the fact-by-fact replay against the "
                                          "version before the per-fact work (bench/per_fact.py's baseline; about "
                                          "4 minutes).")] = True,
    accuracy: Annotated[bool, typer.Option("--accuracy/--no-accuracy", help="Also replay the committed corpora "
                                           "under both profiles (the accuracy figures, evaluation.md; about 1.5 "
                                           "minutes).")] = True,
    heldout: Annotated[bool, typer.Option("--heldout/--no-heldout", help="Also replay the held-out families "
                                          "(bench/heldout.py) under each lever alone and both profiles: the wrong "
                                          "merges each lever adds over the reference (about 5 minutes).")] = True,
    neighbours: Annotated[int, typer.Option("--neighbours", min=0, help="Entities of 100 other banks beside a bank "
                                            "of 1,000 in the banks-side-by-side figure (0: skip it).")] = 1_000_000,
    reresolve_facts: Annotated[int, typer.Option("--reresolve-facts", min=0, help="Facts of the 10,000-entity bank "
                                                 "whose reresolve dry run is timed (0: skip it; 10,000 takes about "
                                                 "4 minutes).")] = 10_000,
    order: Annotated[bool, typer.Option("--order/--no-order", help="Also replay the corpora in order and in three "
                                        "shuffles, each followed by reresolve (bench/order.py; about 5 "
                                        "minutes).")] = True,
    attributes: Annotated[bool, typer.Option("--attributes/--no-attributes", help="Also time the same batches "
                                             "with and without mention attributes at 10,000 entities "
                                             "(bench/attributes_speed.py; under a minute).")] = True,
    auto_reresolve: Annotated[bool, typer.Option("--auto-reresolve/--no-auto-reresolve", help="Also time the "
                                                 "write path with the bank setting auto_reresolve on and off, and "
                                                 "reresolve_queued per queued fact (bench/auto_reresolve.py; about "
                                                 "2 minutes).")] = True,
    neighbourhood: Annotated[bool, typer.Option("--neighbourhood/--no-neighbourhood", help="Also time each "
                                                "size's batches with the neighbourhood probe and the full probe, "
                                                "side by side, on a bank dated at a constant rate "
                                                "(bench/neighbourhood_speed.py; about a minute at 100,000 "
                                                "entities, 15 at 1,000,000).")] = True,
    import_facts: Annotated[int, typer.Option("--import-facts", min=0, help="Facts imported at the default "
                                              "batch into each size's bank, last (0: skip it; 2,000 take about a "
                                              "minute at 100,000 entities).")] = 2000,
    citus: Annotated[bool, typer.Option("--citus", help="Instead: single node against a Citus coordinator with two "
                                        "workers on this machine (per-call delegation cost, facts/s); figures into "
                                        "docs/scaling.md. Needs Citus installed (make citus).")] = False,
    pairs: Annotated[bool, typer.Option("--pairs", help="Instead: only the time per pair of one fact of 100, 400 "
                                        "and 1,000 mentions (INSERT and COMMIT; about a minute); prints the "
                                        "figures, writes no file.")] = False,
    dsn: DsnOpt = None, data_dir: DataDirOpt = None, as_json: JsonOpt = False,
) -> None:
    """Time resolution and the write path on generated banks (in a scratch database)."""
    if citus:
        _citus_bench(writer_seconds, None if no_out else Path("docs/scaling.md"), as_json)
        return
    if pairs:
        from bench.pairs import markdown as pairs_markdown, measure_fact_pairs

        result = measure_fact_pairs(dsn or _embedded(data_dir, quiet=as_json).dsn("postgres"))
        if as_json:
            _print_json(result)
        else:
            print(pairs_markdown(result))
        return
    from bench.run import run_bench

    try:
        parsed = [int(x.replace("_", "")) for x in sizes.split(",") if x.strip()]
    except ValueError:
        raise CliError(f"--sizes: expected comma-separated integers, got {sizes!r}") from None
    if dsn:
        _check_dsn(dsn)
    else:
        dsn = _embedded(data_dir, quiet=as_json).dsn("postgres")
    err = _err()
    extra = {"evaluation_out": None} if no_out else {}
    if not accuracy:
        extra["corpora"] = None  # run_bench then writes no evaluation.md either
    if not heldout:
        extra["heldout_seeds"] = ()
    result = run_bench(dsn, parsed, None if no_out else out, keep=keep, batches=batches, **extra,
                       writer_seconds=writer_seconds, imports=imports, neighbours=neighbours or None,
                       reresolve_facts=reresolve_facts or None, order=order, attributes=attributes,
                       auto_reresolve=auto_reresolve, import_facts=import_facts, neighbourhood=neighbourhood,
                       progress=None if as_json else (lambda msg: err.print(msg, style="dim")))
    if as_json:
        _print_json(result)
        return
    _out().print(f"benchmark done in {result.get('seconds')} s" + ("" if no_out else f"; report: {out}"))
    for name, target in (result.get("targets") or {}).items():
        _out().print(f"  {name}: {target.get('value')} (target {target.get('target')}): "
                     f"{'met' if target.get('met') else 'NOT met'}")


def main() -> None:
    app(prog_name="python -m bench")
