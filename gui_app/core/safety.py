"""Guards for reading files we did not write: the one place that says how much of a hostile file we will read.

Users bring folders from anywhere; a file may be truncated, enormous, nested ten thousand levels deep, a FIFO that
never ends, or name ``/etc/shadow`` as its screenshot. Every importer reads through these helpers, so each limit is
set (and tested) once:

- :func:`parse_json`: JSON whose numbers, nesting or syntax Python cannot take becomes one :class:`BadJSON` line
  (``json.loads`` raises ``ValueError`` for a 5,000-digit integer and ``RecursionError`` for deep nesting, neither of
  them a ``JSONDecodeError``).
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from gui_app.core.errors import clip


class BadJSON(ValueError):
    """Text that does not parse as JSON we can hold: ``reason`` in words, and the line when known."""

    def __init__(self, reason: str, line: int | None = None):
        self.reason, self.line = reason, line
        super().__init__(reason)


_DIGITS = re.compile(r"Exceeds the limit \((\d+) digits\)")


def parse_json(text: str | bytes) -> Any:
    """``json.loads(text)``, every failure a :class:`BadJSON`.

    Raises:
        BadJSON: invalid syntax (with line and column), an integer longer than Python converts (4,300 digits), or
            nesting deeper than the interpreter's recursion limit allows (about 1,000 levels).
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadJSON(f"invalid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None
    except RecursionError:
        raise BadJSON(f"JSON nested too deeply (over about {sys.getrecursionlimit()} levels)") from None
    except ValueError as exc:  # int('9' * 5000): Python's guard against quadratic-time conversions
        m = _DIGITS.search(str(exc))
        why = f"a number longer than {m.group(1)} digits" if m else clip(str(exc), 120)
        raise BadJSON(f"invalid JSON: {why}") from None
