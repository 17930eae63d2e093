"""Build the desktop bundle: ``make package``, and the bundle test's build.

PyInstaller makes the one-folder app from ``packaging/rollscope.spec`` (``dist/rollscope/``); this script then lays
the Linux desktop files beside it (``share/applications/rollscope.desktop``, the icon in the hicolor theme, a README
saying how to install them) and packs the folder into ``dist/rollscope-VERSION-linux-ARCH.tar.gz``.

The folder records what it was built from (:data:`STAMP`: a digest of the sources, the data files and the installed
distributions, :func:`inputs_digest`), so the bundle test reuses a build that is still fresh (:func:`is_fresh`)
instead of spending minutes rebuilding the same thing.

Usage: ``python packaging/build.py [--dist DIR] [--work DIR] [--if-stale] [--no-tarball]``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from bundle_trim import has_symbol_table, needed, segments_aligned  # packaging/bundle_trim.py, beside this

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "packaging" / "rollscope.spec"
NAME = "rollscope"
STAMP = "BUILD_INPUTS"  # in the bundle folder: the digest of what it was built from
# What the bundle is made of: the code and data under these folders, the build's own files, and pyproject.toml.
_INPUT_DIRS = ("gui_app", "models", "packaging")
_SKIP_PARTS = {"__pycache__", ".mypy_cache", ".pytest_cache"}
_DESKTOP = ROOT / "packaging" / "rollscope.desktop"
_ICON = ROOT / "packaging" / "rollscope.svg"
_README = ROOT / "packaging" / "BUNDLE_README.md"
# Libraries that ship with their symbol tables (the linker's ``.symtab``, not the dynamic symbols a loader reads) are
# stripped after PyInstaller collected them (``strip --strip-unneeded``, :func:`_strip`): Debian's libpython 23 -> 6
# MB, PyAV's Cython modules 26 MB, and Python's, PyYAML's and ICU's own. A stripped copy replaces a file only if the
# loader can still map it: strip misaligns numpy's OpenBLAS, which auditwheel's patchelf rewrote, and that one stays
# as it was.


def _version() -> str:
    sys.path.insert(0, str(ROOT))
    from gui_app import __version__

    return __version__


def tarball_name() -> str:
    """``rollscope-VERSION-linux-ARCH.tar.gz``."""
    return f"{NAME}-{_version()}-linux-{platform.machine()}.tar.gz"


def inputs_digest() -> str:
    """A digest of everything a build reads: the bytes of every file under gui_app/, models/ and packaging/ (caches
    left out), pyproject.toml, and the name and version of every installed distribution (an upgraded wheel makes a
    different bundle). Reading them takes about a second."""
    h = hashlib.sha256()
    files = [ROOT / "pyproject.toml"]
    for top in _INPUT_DIRS:
        for dirpath, dirnames, filenames in os.walk(ROOT / top):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_PARTS)
            files += [Path(dirpath) / f for f in sorted(filenames) if not f.endswith((".pyc", ".pyo"))]
    for path in files:
        h.update(str(path.relative_to(ROOT)).encode() + b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    site = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    if site.is_dir():
        h.update("\n".join(sorted(p.name for p in site.glob("*.dist-info"))).encode())
    return h.hexdigest()


def is_fresh(folder: Path) -> bool:
    """Whether ``folder`` is a complete bundle built from the sources and distributions as they are now."""
    stamp = folder / STAMP
    return (folder / NAME).is_file() and stamp.is_file() and stamp.read_text().strip() == inputs_digest()


def _desktop_files(folder: Path) -> None:
    """The README, the .desktop entry and the icon, where the README's install lines take them from."""
    shutil.copy2(_README, folder / "README.md")
    apps = folder / "share" / "applications"
    icons = folder / "share" / "icons" / "hicolor" / "scalable" / "apps"
    apps.mkdir(parents=True, exist_ok=True)
    icons.mkdir(parents=True, exist_ok=True)
    shutil.copy2(_DESKTOP, apps / f"{NAME}.desktop")
    shutil.copy2(_ICON, icons / f"{NAME}.svg")


def _strip(folder: Path) -> list[Path]:
    """Strip the symbol tables left in the bundle's ELF files (nothing where there is no ``strip``). Each file is
    stripped into a copy that replaces it only when the loader can still map it and it names the same libraries
    (:func:`bundle_trim.segments_aligned`: strip misaligns some files patchelf rewrote). Only under
    ``_internal/``: the ``rollscope`` executable carries its Python archive after its ELF image.

    Returns:
        The files left as they were because their stripped copy failed that check.
    """
    strip = shutil.which("strip")
    if strip is None:
        return []
    kept = []
    for lib in sorted((folder / "_internal").rglob("*")):
        if not lib.is_file() or lib.is_symlink() or ".so" not in lib.name or not has_symbol_table(lib):
            continue
        out = lib.with_name(lib.name + ".stripped")
        subprocess.run([strip, "--strip-unneeded", "-o", str(out), str(lib)], check=True)
        if segments_aligned(out) and needed(out) == needed(lib):
            out.replace(lib)
        else:
            out.unlink()
            kept.append(lib)
    return kept


def make_tarball(folder: Path) -> Path:
    """``folder`` packed as ``rollscope/...`` into the tarball beside it (written whole, then renamed)."""
    target = folder.parent / tarball_name()
    partial = target.with_name(target.name + ".partial")
    gzip = shutil.which("pigz") or shutil.which("gzip")
    if gzip is not None:  # the gzip program: about twice Python's tarfile speed on the same level
        subprocess.run(["tar", "-C", str(folder.parent), f"--use-compress-program={gzip}", "-cf", str(partial),
                        folder.name], check=True)
    else:
        with tarfile.open(partial, "w:gz") as tar:
            tar.add(folder, arcname=folder.name)
    partial.replace(target)
    return target


def build(dist: Path, work: Path, tarball: bool = True, log_level: str = "WARN") -> Path:
    """Run PyInstaller on the spec into ``dist/rollscope``, add the desktop files, stamp it, and pack it.

    Raises:
        subprocess.CalledProcessError: PyInstaller (or tar) failed; its output went to this process's.
    """
    pyinstaller = shutil.which("pyinstaller", path=str(Path(sys.executable).parent)) or shutil.which("pyinstaller")
    if pyinstaller is None:
        raise SystemExit("pyinstaller is not installed: pip install -e '.[package]'")
    folder = dist / NAME
    digest = inputs_digest()  # before building: a source changed during the build makes the stamp stale
    if (folder / STAMP).exists():
        (folder / STAMP).unlink()
    subprocess.run([pyinstaller, "--noconfirm", "--log-level", log_level, "--distpath", str(dist), "--workpath",
                    str(work), str(SPEC)], cwd=ROOT, check=True)
    for lib in _strip(folder):
        print(f"{lib.relative_to(folder)}: left unstripped (its stripped copy would not load)")
    _desktop_files(folder)
    (folder / STAMP).write_text(digest + "\n")
    if tarball:
        make_tarball(folder)
    return folder


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dist", type=Path, default=ROOT / "dist", help="where the bundle goes (default dist/)")
    ap.add_argument("--work", type=Path, default=ROOT / "build" / "pyinstaller", help="PyInstaller's work folder")
    ap.add_argument("--if-stale", action="store_true", help="do nothing when the bundle there is fresh")
    ap.add_argument("--no-tarball", action="store_true", help="leave the folder unpacked only")
    args = ap.parse_args(argv)
    folder = args.dist / NAME
    t0 = time.perf_counter()
    if args.if_stale and is_fresh(folder):
        print(f"{folder}: fresh, not rebuilt")
        if not args.no_tarball and not (args.dist / tarball_name()).is_file():
            make_tarball(folder)
    else:
        build(args.dist, args.work, tarball=not args.no_tarball)
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
    print(f"{folder}: {size / 2**20:.0f} MiB, {time.perf_counter() - t0:.0f} s")
    if not args.no_tarball:
        tar = args.dist / tarball_name()
        print(f"{tar}: {tar.stat().st_size / 2**20:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
