#!/usr/bin/env python3
"""Freeze the extension install script of a released version (run once per release).

    .venv/bin/python scripts/freeze_release.py <git ref> <version>

Renders the sources of <git ref> (migrations/, sql/, plpython/) with today's
build into extension/released/entity_resolver--<version>.sql, the script
CREATE EXTENSION ... VERSION '<version>' runs and every later update starts
from. Released scripts are frozen: extension/released/SHA256SUMS records them
and a unit test fails if one changes.

0.1.0 predates the numbered idempotent files: its sql/ files are renamed into
the order its installer applied them (its SQL_FILES list).
"""

import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

from entity_resolver import build

REPO = Path(__file__).resolve().parents[1]
OLD_ORDER = ["modules.sql", "banks.sql", "resolve.sql", "write_path.sql", "retrieval.sql", "views.sql",
             "grants.sql"]


def export(ref: str, target: Path) -> None:
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref, "migrations", "sql", "plpython"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    sql = target / "sql"
    for n, name in enumerate(OLD_ORDER, 1):
        if (sql / name).exists():
            (sql / name).rename(sql / f"{n:03d}_{name}")


def main(ref: str, version: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        export(ref, base)
        text = build.script(build.DEFAULT_SCHEMA, extension=True, base=base, version=version)
    out = REPO / "extension" / "released" / f"entity_resolver--{version}.sql"
    out.write_text(text, encoding="utf-8")
    sums = REPO / "extension" / "released" / "SHA256SUMS"
    lines = [line for line in (sums.read_text().splitlines() if sums.exists() else [])
             if not line.endswith("  " + out.name)]
    lines.append(f"{hashlib.sha256(text.encode()).hexdigest()}  {out.name}")
    sums.write_text("\n".join(sorted(lines, key=lambda s: s.split()[1])) + "\n")
    print(f"wrote {out.relative_to(REPO)}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
