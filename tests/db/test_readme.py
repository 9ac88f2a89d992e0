"""The README's examples run as written and say what they show."""

from __future__ import annotations

import re
from pathlib import Path

from entity_resolver import Client

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_block(language: str) -> str:
    match = re.search(rf"```{language}\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert match, f"README has no {language} block"
    return match.group(1)


def test_readme_psql_example_tells_the_two_alexes_apart(conn):
    statements = [s.strip() for s in readme_block("sql").split(";") if s.strip()]
    results = []
    for statement in statements:
        body = "\n".join(line for line in statement.splitlines() if not line.lstrip().startswith("--"))
        cur = conn.execute(body)
        results.append(cur.fetchall() if cur.description else None)
    # The two look-ups: Acme/renewal -> Alex Morgan, React/Sprint 14 -> Alex Kim.
    assert (results[1][0][0], results[1][0][2]) == ("Alex Morgan", "resolved")
    assert str(results[1][0][1]) == re.search(r"Alex Morgan\s+\| ([0-9.]+)", readme_block("sql")).group(1)
    assert results[2] == [("Alex Kim",)]
    decisions = {row[0]: row[-1] for row in results[3]}
    assert decisions["Alex Morgan"] == "chosen"
    # The look-ups wrote nothing: one mention each, from the facts.
    overview = {name: count for name, _, count, _ in results[4]}
    assert overview["Alex Morgan"] == 1 and overview["Alex Kim"] == 1


def test_readme_python_example_runs(conn):
    with Client(conn) as er:
        er.retain("team", ["Alex Morgan", "Acme", "renewal"], content="Alex Morgan asked about the renewal.")
        resolution = er.resolve("team", "Alex", nearby=["Acme", "renewal"])
        assert resolution.canonical_name == "Alex Morgan"
        decisions = {c.canonical_name: c.decision for c in er.explain("team", "Alex", nearby=["Acme"])}
        assert decisions["Alex Morgan"] in ("chosen", "below_threshold", "outscored")


def quick_start_commands() -> list[str]:
    """The entity-resolver lines of the README's Quick start, as written (comments included)."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Quick start"):]
    section = section[: section.index("\n## ", 1)]
    return [line.strip() for line in section.splitlines() if line.startswith("    entity-resolver ")]


def test_readme_quick_start_runs_as_written_on_the_sample_facts(conn):
    import os
    import subprocess
    import sys

    commands = quick_start_commands()
    assert 'entity-resolver import examples/facts.jsonl --dsn "$DSN"' in [c.split("  #")[0].strip() for c in commands]
    i = conn.info
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENTITY_RESOLVER_")}
    env.update(DSN=f"host={i.host} port={i.port} user={i.user} dbname={i.dbname}", COLUMNS="100",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    outputs = {}
    for command in commands:
        # From the checkout, as a reader of the README runs them.
        done = subprocess.run(["bash", "-c", command], cwd=README.parent, env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, (command, done.stdout, done.stderr)
        outputs[command.split()[1]] = done.stdout
    facts = (README.parent / "examples" / "facts.jsonl").read_text(encoding="utf-8").splitlines()
    assert re.search(rf"facts imported\s+{len(facts)}\b", outputs["import"])
    assert "Alex Morgan" in outputs["entities"] and "Alex Kim" in outputs["entities"]
    assert "resolves to 'Alex Morgan'" in outputs["explain"]
    assert "dry run" in outputs["merge"]
