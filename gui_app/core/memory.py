"""Give freed memory back to the system after a burst of work (scoring), where the C library keeps it.

glibc's allocator keeps what a thread frees in that thread's arena for reuse, and returns it to the system only
when the top of the main heap is free. Scoring decodes, prunes and pads frames in worker threads (hundreds of MB for
a library, all freed at the end), so without a trim the app's resident memory stays at its peak after every scoring:
``bench/scoring_memory.py`` measured ~75 MB held that way after scoring the 16 bundled samples. ``malloc_trim``
hands it back; elsewhere (macOS, Windows, musl) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        fn = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn


def trim() -> bool:
    """Return the C heap's free memory to the system; True when the platform can (glibc)."""
    fn = _malloc_trim()
    if fn is None:
        return False
    fn(0)
    return True
