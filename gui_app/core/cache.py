"""Where derived data is kept between runs: the library's ``.rollscope/cache/``, else the user's cache folder.

Two things are worth keeping: the result of passes over a recording (step <-> video alignment decodes the whole
video; its answer is a few numbers) and files extracted from containers (the screenshots inside an Inspect
``.eval`` zip, which the viewer needs as files). Both are keyed by what they were computed from (path, size,
mtime, a version), so a changed input is recomputed, never served stale.

The cache for a path lives in the nearest ancestor folder that holds a ``.rollscope`` folder (a library opened or
scanned with Rollscope keeps its catalog and labels there), so it travels with the library; outside any library,
or when that folder is not writable, it goes to ``$ROLLSCOPE_CACHE_DIR`` (default ``$XDG_CACHE_HOME/rollscope``,
else ``~/.cache/rollscope``). Losing a cache loses nothing but time.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from gui_app.core.settings import user_dir

LIBRARY_DIR = ".rollscope"
CACHE_SUBDIR = "cache"


def user_cache_dir() -> Path:
    """``$ROLLSCOPE_CACHE_DIR``, else ``$XDG_CACHE_HOME/rollscope``, else ``~/.cache/rollscope``."""
    return user_dir("ROLLSCOPE_CACHE_DIR", "XDG_CACHE_HOME", ".cache")


def library_root(path: str | Path) -> Path | None:
    """The nearest folder at or above ``path`` that holds a ``.rollscope`` folder, or None."""
    p = Path(os.path.abspath(path))
    for d in (p, *p.parents):
        if (d / LIBRARY_DIR).is_dir():
            return d
    return None


def _writable(d: Path) -> bool:
    try:
        d.mkdir(parents=True, exist_ok=True)
        return os.access(d, os.W_OK)
    except OSError:
        return False


def cache_dir(path: str | Path, kind: str) -> Path:
    """The folder for ``kind`` (``alignment``, ``inspect``...) of data derived from ``path`` (created)."""
    lib = library_root(path)
    if lib is not None:
        d = lib / LIBRARY_DIR / CACHE_SUBDIR / kind
        if _writable(d):
            return d
    d = user_cache_dir() / kind
    d.mkdir(parents=True, exist_ok=True)
    return d


def source_key(path: str | Path, *parts: Any) -> str:
    """A hex key for ``path`` as it is now (absolute path, size, mtime) plus ``parts`` (versions, parameters)."""
    p = Path(os.path.abspath(path))
    st = p.stat()
    raw = json.dumps([str(p), st.st_size, st.st_mtime_ns, *[str(x) for x in parts]])
    return hashlib.sha1(raw.encode("utf-8")).hexdigest()


def read_json(file: Path) -> Any | None:
    """A cached JSON value, or None when absent or unreadable (a damaged cache entry is a miss, not an error)."""
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_bytes(file: Path, data: bytes) -> bool:
    """Write atomically (temp file + rename) so a reader never sees half a file; False when it cannot."""
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, file)
        return True
    except OSError:
        return False


def write_json(file: Path, value: Any) -> bool:
    """:func:`write_bytes` of ``value`` as JSON."""
    return write_bytes(file, json.dumps(value).encode("utf-8"))
