"""What the Makefile's pgspot suppressions hide is only what their comment says.

``make lint-extension`` ignores pgspot's unqualified-name findings (PS001,
PS016, PS017) and PS005 because they come from function bodies, which run
under the search_path every function pins. Were a top-level statement of the
script to use an unqualified name, or a function to pin another path (or
none), the suppression would hide a real finding: this test runs pgspot
without it and fails then.
"""

from __future__ import annotations

import re
import subprocess
import sys

from entity_resolver import build

BODY_ONLY = ("PS001", "PS005", "PS016", "PS017")
FINDING = re.compile(r"^(PS\d{3}): .* at line (\d+)$")


def findings(path) -> list[tuple[str, int]]:
    out = subprocess.run([sys.executable, "-m", "pgspot", "--ignore-lang", "plpython3u", str(path)],
                         capture_output=True, text=True).stdout
    assert "Errors:" in out, out  # pgspot ran to its summary (no parse failure)
    return [(m.group(1), int(m.group(2))) for m in map(FINDING.match, out.splitlines()) if m]


def statement_at(lines: list[str], line: int) -> str:
    """The statement pgspot reports at ``line``: from there (past blank and comment lines) to its body."""
    start = line - 1
    while not lines[start].strip() or lines[start].lstrip().startswith("--"):
        start += 1
    end = start
    while not lines[end].startswith("AS $"):
        end += 1
    return "\n".join(lines[start:end + 1])


def test_suppressed_pgspot_findings_come_only_from_function_bodies_with_the_pinned_search_path(tmp_path):
    script = build.script(extension=True)
    path = tmp_path / "entity_resolver.sql"
    path.write_text(script, encoding="utf-8")
    lines = script.splitlines()
    pinned = "SET search_path = " + build.static_values(build.DEFAULT_SCHEMA)["search_path"] + "\n"

    found = findings(path)
    assert any(code in BODY_ONLY for code, _ in found)  # the suppression has something to suppress
    for code, line in found:
        if code not in BODY_ONLY:
            continue
        statement = statement_at(lines, line)
        assert statement.startswith("CREATE OR REPLACE FUNCTION "), (code, line, statement[:200])
        assert pinned in statement, (code, line, statement)
