"""What the desktop bundle leaves out of what PyInstaller collected, and what it shares (``packaging/rollscope.spec``).

PyInstaller's Qt hooks collect every plugin of a type and every Qt translation, and the libraries those plugins
need; the wheels of OpenCV and PyAV each carry their own copy of the same FFmpeg. :func:`trim` takes the collected
table of contents (``Analysis.binaries`` and ``Analysis.datas``), drops the entries a predicate names and then the
libraries nothing left needs any more (found by reading each ELF file's ``DT_NEEDED`` list: a library only a dropped
plugin needed goes with it); a library that nothing needed before (one loaded with ``dlopen`` by name) is kept.
:func:`share_libraries` makes one wheel's copy of a library a symbolic link to another wheel's copy of the same
library (same name, same ``SONAME`` major and minor version, so the same ABI and the same struct layouts): the
dynamic loader then maps the one file once, whichever extension loads it first.

Plain Python (no PyInstaller import), so the tests and ``packaging/build.py`` can use it too.
"""

from __future__ import annotations

import mmap
import os
import re
import struct
from collections.abc import Callable, Iterable
from pathlib import Path

Entry = tuple[str, str, str]  # PyInstaller's TOC entry: (destination name, source path or link target, typecode)

_SHT_SYMTAB, _SHT_DYNAMIC = 2, 6
_DT_NEEDED = 1


def _sections(buf: mmap.mmap) -> tuple[str, list[tuple[int, int, int, int, int]]] | None:
    """The struct format of the ELF file's dynamic entries (tag, value) and (type, offset, size, link, entry size)
    of each section; None: not ELF."""
    if buf[:4] != b"\x7fELF":
        return None
    wide = buf[4] == 2
    order = "<" if buf[5] == 1 else ">"
    if wide:
        shoff, = struct.unpack_from(order + "Q", buf, 0x28)
        shentsize, shnum = struct.unpack_from(order + "HH", buf, 0x3A)
        fmt = order + "IIQQQQIIQQ"
    else:
        shoff, = struct.unpack_from(order + "I", buf, 0x20)
        shentsize, shnum = struct.unpack_from(order + "HH", buf, 0x2E)
        fmt = order + "IIIIIIIIII"
    out = []
    for i in range(shnum):
        _, sh_type, _, _, offset, size, link, _, _, entsize = struct.unpack_from(fmt, buf, shoff + i * shentsize)
        out.append((sh_type, offset, size, link, entsize))
    return order + ("QQ" if wide else "II"), out


def _read(path: str | os.PathLike[str], fn: Callable[[mmap.mmap], object], default: object) -> object:
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size < 64:
                return default
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                return fn(buf)
    except (OSError, ValueError, struct.error):
        return default


def needed(path: str | os.PathLike[str]) -> list[str]:
    """The ``DT_NEEDED`` names of an ELF shared library or executable ([] for any other file)."""

    def parse(buf: mmap.mmap) -> list[str]:
        found = _sections(buf)
        if found is None:
            return []
        dyn, sections = found
        names = []
        for sh_type, offset, size, link, _ in sections:
            if sh_type != _SHT_DYNAMIC:
                continue
            str_off = sections[link][1]
            step = struct.calcsize(dyn)
            for pos in range(offset, offset + size - step + 1, step):
                tag, val = struct.unpack_from(dyn, buf, pos)
                if tag == 0:
                    break
                if tag == _DT_NEEDED:
                    end = buf.find(b"\0", str_off + val)
                    names.append(buf[str_off + val:end].decode())
        return names

    return _read(path, parse, [])  # type: ignore[return-value]


def has_symbol_table(path: str | os.PathLike[str]) -> bool:
    """Whether an ELF file still carries the linker's symbol table (``.symtab``: what ``strip`` removes)."""

    def parse(buf: mmap.mmap) -> bool:
        found = _sections(buf)
        return found is not None and any(s[0] == _SHT_SYMTAB for s in found[1])

    return bool(_read(path, parse, False))


def segments_aligned(path: str | os.PathLike[str]) -> bool:
    """Whether the loader can map every ``PT_LOAD`` segment of an ELF file: its file offset and its address agree
    modulo the page size, and it lies inside the file. ``strip`` can break that in a file patchelf rewrote (numpy's
    OpenBLAS: "ELF load command address/offset not page-aligned"); False for a file that is not ELF."""

    def parse(buf: mmap.mmap) -> bool:
        if buf[:4] != b"\x7fELF":
            return False
        order = "<" if buf[5] == 1 else ">"
        if buf[4] == 2:
            phoff, = struct.unpack_from(order + "Q", buf, 0x20)
            phentsize, phnum = struct.unpack_from(order + "HH", buf, 0x36)
            fmt, fields = order + "IIQQQQQQ", (0, 2, 3, 5)
        else:
            phoff, = struct.unpack_from(order + "I", buf, 0x1C)
            phentsize, phnum = struct.unpack_from(order + "HH", buf, 0x2A)
            fmt, fields = order + "IIIIIIII", (0, 1, 2, 4)
        for i in range(phnum):
            ph = struct.unpack_from(fmt, buf, phoff + i * phentsize)
            p_type, offset, vaddr, filesz = (ph[k] for k in fields)
            if p_type == 1 and ((vaddr - offset) % 4096 or offset + filesz > len(buf)):
                return False
        return True

    return bool(_read(path, parse, False))


def _target(dest: str, link: str) -> str:
    return os.path.normpath(os.path.join(os.path.dirname(dest), link))


def _reach(roots: Iterable[str], files: dict[str, str], links: dict[str, str], by_name: dict[str, list[str]]
           ) -> set[str]:
    """Every destination reached from ``roots`` through symbolic links and ``DT_NEEDED`` names."""
    seen: set[str] = set()
    todo = list(roots)
    deps: dict[str, list[str]] = {}
    while todo:
        dest = todo.pop()
        if dest in seen:
            continue
        seen.add(dest)
        if dest in links:
            todo.append(links[dest])
        elif dest in files:
            if dest not in deps:
                deps[dest] = needed(files[dest])
            for name in deps[dest]:
                todo.extend(by_name.get(name, ()))
    return seen


def _graph(binaries: list[Entry]) -> tuple[dict[str, str], dict[str, str], dict[str, list[str]]]:
    files = {d: s for d, s, t in binaries if t != "SYMLINK"}
    links = {d: _target(d, s) for d, s, t in binaries if t == "SYMLINK"}
    by_name: dict[str, list[str]] = {}
    for dest in (*files, *links):
        by_name.setdefault(os.path.basename(dest), []).append(dest)
    return files, links, by_name


def _roots(binaries: list[Entry]) -> list[str]:
    """What the app loads by itself: Python extension modules, Qt plugins, ``libpython``, and any library no other
    collected file names in its ``DT_NEEDED`` (it is loaded by name at run time)."""
    files, _, by_name = _graph(binaries)
    named: set[str] = set()
    for src in files.values():
        for name in needed(src):
            named.update(by_name.get(name, ()))
    return [d for d, _, t in binaries if t in ("EXTENSION", "EXECUTABLE") or "/plugins/" in d
            or os.path.basename(d).startswith("libpython") or (t == "BINARY" and d not in named)]


def drop_orphans(original: list[Entry], changed: list[Entry]) -> tuple[list[Entry], list[str]]:
    """``changed`` (``original`` with entries removed or turned into links) without the libraries, and the links
    to them, that something in ``original`` needed and nothing in ``changed`` needs any more."""
    roots = _roots(original)
    before = _reach(roots, *_graph(original))
    files, links, by_name = _graph(changed)
    after = _reach([d for d in roots if d in files or d in links], files, links, by_name)
    orphans = {d for d in (*files, *links) if d in before and d not in after}
    orphans |= {d for d, target in links.items() if target in orphans or (target not in files and target not in links)}
    return [e for e in changed if e[0] not in orphans], sorted(orphans)


def trim(binaries: list[Entry], datas: list[Entry], drop: Callable[[str], bool]
         ) -> tuple[list[Entry], list[Entry], list[str]]:
    """``binaries`` and ``datas`` without the entries whose destination ``drop`` names, nor the libraries (and
    links to them) that only those needed (:func:`drop_orphans`). Returns the two lists and what was removed."""
    kept, orphans = drop_orphans(binaries, [e for e in binaries if not drop(e[0])])
    gone = sorted({e[0] for e in binaries + datas if drop(e[0])} | set(orphans))
    return kept, [e for e in datas if not drop(e[0])], gone


_VERSIONED = re.compile(r"^(lib[A-Za-z0-9_+]+?)-[0-9a-f]{8}\.so\.(\d+)\.(\d+)(?:\.\d+)*$")


def share_libraries(binaries: list[Entry], names: Iterable[str], from_dir: str, to_dir: str
                    ) -> tuple[list[Entry], list[str]]:
    """Each library ``names`` lists (``libavcodec``, ...) that both ``from_dir`` and ``to_dir`` hold, with the same
    major and minor version, becomes in ``from_dir`` a symbolic link to ``to_dir``'s copy (the auditwheel names:
    ``libavcodec-<hash>.so.62.28.101``). Returns the new list and the destinations now shared.

    A library loaded through a link finds its own dependencies beside the link (``$ORIGIN`` is the folder of the
    path it was opened by), so every library of ``to_dir`` the shared ones need, directly or not, gets a link in
    ``from_dir`` too: OpenCV may be imported before PyAV."""
    wanted = set(names)

    def key(dest: str) -> tuple[str, str, str] | None:
        m = _VERSIONED.match(os.path.basename(dest))
        return (m.group(1), m.group(2), m.group(3)) if m and m.group(1) in wanted else None

    in_to = {os.path.basename(d): (d, s) for d, s, t in binaries if t == "BINARY" and Path(d).parent == Path(to_dir)}
    targets = {key(d): d for d, _ in in_to.values() if key(d)}
    out: list[Entry] = []
    shared = []
    for dest, src, typecode in binaries:
        k = key(dest) if typecode == "BINARY" and Path(dest).parent == Path(from_dir) else None
        if k is not None and k in targets:
            out.append((dest, os.path.relpath(targets[k], os.path.dirname(dest)), "SYMLINK"))
            shared.append(dest)
        else:
            out.append((dest, src, typecode))
    # the shared libraries' dependencies in to_dir, linked from from_dir under their own names
    present = {os.path.basename(d) for d, _, _ in out if Path(d).parent == Path(from_dir)}
    todo = [os.path.basename(targets[k]) for k in {key(d) for d in shared}]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or name not in in_to:
            continue
        seen.add(name)
        dest, src = in_to[name]
        if name not in present:
            out.append((f"{from_dir}/{name}", os.path.relpath(dest, from_dir), "SYMLINK"))
        todo.extend(needed(src))
    return out, shared
