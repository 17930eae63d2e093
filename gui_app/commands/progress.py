"""Progress bars for CLI commands: on stderr, off under ``--json`` or when stderr is not a terminal."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm import tqdm

T = TypeVar("T")


def progress(items: Iterable[T], total: int | None = None, desc: str = "", json_mode: bool = False) -> Iterator[T]:
    """Wrap ``items`` in a progress bar shown on stderr (hidden in ``--json`` mode)."""
    return iter(tqdm(items, total=total, desc=desc, unit="it", file=sys.stderr, disable=_disable(json_mode),
                     leave=False, dynamic_ncols=True))


def bar(total: int | None, desc: str = "", json_mode: bool = False) -> tqdm:
    """A manual progress bar (``bar.update(n)``), hidden in ``--json`` mode."""
    return tqdm(total=total, desc=desc, file=sys.stderr, disable=_disable(json_mode), leave=False,
                dynamic_ncols=True)


def _disable(json_mode: bool) -> bool | None:
    """tqdm's ``disable``: always under ``--json``; None (tqdm: off when the stream is not a terminal) otherwise, so a
    log or a pipe gets the command's lines, not bar frames between them (``score`` prints as it goes)."""
    return True if json_mode else None
