"""Released migrations are frozen: each one's digest is recorded in migrations/SHA256SUMS.

An installed database records the digest of every migration it applied and the
installer refuses to upgrade it when a file changed since (install.py); this
test catches the edit before it is released. A new migration adds its line.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

MIGRATIONS = Path(__file__).resolve().parents[2] / "migrations"


def recorded() -> dict[str, str]:
    lines = (MIGRATIONS / "SHA256SUMS").read_text().splitlines()
    return {name: digest for digest, name in (line.split() for line in lines if line.strip())}


def test_every_migration_is_recorded_and_unchanged():
    actual = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(MIGRATIONS.glob("*.sql"))}
    assert set(actual) == set(recorded()), "add the new migration's line to migrations/SHA256SUMS"
    changed = [name for name, digest in actual.items() if recorded()[name] != digest]
    assert not changed, f"released migrations were edited (put the change in a new migration): {changed}"


RELEASED = Path(__file__).resolve().parents[2] / "extension" / "released"


def test_released_extension_scripts_are_frozen():
    # CREATE EXTENSION ... VERSION 'x' and every update path start from these.
    lines = (RELEASED / "SHA256SUMS").read_text().splitlines()
    recorded_scripts = {name: digest for digest, name in (line.split() for line in lines if line.strip())}
    actual = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(RELEASED.glob("*.sql"))}
    assert actual == recorded_scripts, "released extension scripts must not change"
