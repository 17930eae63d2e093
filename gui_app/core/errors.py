"""Domain errors raised by the core and shown by the GUI and the CLI.

Every error names the file and, where it applies, the line and the field, so a user can find the problem
without a stack trace.
"""

from __future__ import annotations

from pathlib import Path

# The longest error or warning line the core writes. A bad value is quoted by a short prefix only: a 10 MB string in
# a wrong-typed field must not become a 10 MB error line, catalog cell or ``scan --json`` output.
MAX_MESSAGE = 500


def clip(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` on one line and at most ``limit`` characters (the cut says how much was left out)."""
    if "\n" in text or "\r" in text:
        text = " ".join(text.split())
    if len(text) <= limit:
        return text
    more = f"... ({len(text) - limit:,} more characters)"
    return text[: max(0, limit - len(more))] + more


class RollscopeError(Exception):
    """Base of every error the core raises on purpose. Its text is one line of at most :data:`MAX_MESSAGE`
    characters: callers print it as it is."""

    def __str__(self) -> str:
        return clip(super().__str__())


class TrajectoryFormatError(RollscopeError):
    """A trajectory file is malformed: names the file, the line (when known) and the field.

    Args:
        path: the offending file or directory.
        field: the field (dotted path, e.g. ``steps[3].t_start``) or ``None`` for the file as a whole.
        reason: what is wrong, in words.
        line: 1-based line number for line-oriented files (JSONL, CSV), when known.
    """

    def __init__(self, path: str | Path, field: str | None, reason: str, line: int | None = None):
        self.path = str(path)
        self.field = None if field is None else clip(field, 120)
        self.reason = clip(reason)
        self.line = line
        super().__init__(self._message())

    def _message(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        if self.field:
            return f"{where}: field '{self.field}': {self.reason}"
        return f"{where}: {self.reason}"


class UnknownFormatError(TrajectoryFormatError):
    """No importer recognises the path."""

    def __init__(self, path: str | Path, reason: str = "no importer recognises this path"):
        super().__init__(path, None, reason)


class VideoError(RollscopeError):
    """A video cannot be opened or a frame cannot be read."""

    def __init__(self, path: str | Path, reason: str):
        self.path = str(path)
        self.reason = clip(reason)
        super().__init__(f"{path}: {self.reason}")


class CatalogError(RollscopeError):
    """The catalog database cannot be opened or is of an unknown schema."""


class CatalogDamagedError(CatalogError):
    """The catalog file is damaged (SQLite finds it malformed, a text in it no longer decodes, it is no longer a
    database at all). The catalog is derived data: ``rollscope scan`` sets the file aside and rebuilds it from the
    library; only the model scores in it are lost.

    Args:
        path: the catalog file.
        reason: what was found, in words.
    """

    def __init__(self, path: str | Path, reason: str):
        self.path, self.reason = str(path), clip(reason, 300)
        super().__init__(f"{path}: the catalog is damaged ({self.reason}); `rollscope scan` sets it aside and "
                         "rebuilds it (the model scores in it are lost; labels are kept apart and are not touched)")
