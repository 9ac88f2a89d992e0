"""Unit tests import the PL/Python modules by bare name, as they import each other."""

import sys
from pathlib import Path

PLPYTHON = Path(__file__).resolve().parents[2] / "plpython"

if str(PLPYTHON) not in sys.path:
    sys.path.insert(0, str(PLPYTHON))
