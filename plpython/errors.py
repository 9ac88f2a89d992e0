"""The error every stage raises for bad input, and JSON type names for its messages.

An InputError carries the SQLSTATE and the name of the SQL argument it is
about; db.call turns it into an SQL error, and the generated PL/pgSQL wrapper
strips PL/Python's exception prefix, so a caller sees
``ERROR: mentions[2].text: must not be empty or blank`` with SQLSTATE 22023.
Standard library only.
"""

import decimal
from typing import Any


class InputError(Exception):
    """A rejected argument: carries the SQLSTATE, the SQL argument name and a message."""

    def __init__(self, message: str, argument: str = "settings", sqlstate: str = "22023"):
        super().__init__(message, argument, sqlstate)
        self.message = message
        self.argument = argument
        # 22023 invalid_parameter_value: well-formed, but not acceptable.
        self.sqlstate = sqlstate

    def __str__(self) -> str:
        return "%s: %s" % (self.argument, self.message)


def type_name(value: Any) -> str:
    """A JSON-flavoured name for the type of ``value``, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float, decimal.Decimal)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
