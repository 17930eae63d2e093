"""packaging/bundle_trim.py: what the desktop bundle drops and shares, on the installed wheels' real libraries (fast;
the bundle itself is tested by tests/test_packaging.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import cv2
import PySide6

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "packaging"))
import bundle_trim  # noqa: E402 -- packaging/bundle_trim.py: the spec's helper

SITE = Path(cv2.__file__).resolve().parents[1]
CV_LIBS = SITE / "opencv_python_headless.libs"
AV_LIBS = SITE / "av.libs"
QT = Path(PySide6.__file__).resolve().parent / "Qt"
FFMPEG = ["libavcodec", "libavformat", "libavutil", "libswscale", "libswresample"]


def _cv2_so() -> Path:
    return next(Path(cv2.__file__).parent.glob("cv2*.so"))


def test_needed_reads_the_dynamic_section():
    names = bundle_trim.needed(_cv2_so())
    assert any(n.startswith("libavcodec-") for n in names) and "libc.so.6" in names
    assert "libQt6Core.so.6" in bundle_trim.needed(QT / "lib" / "libQt6Gui.so.6")
    assert bundle_trim.needed(Path(__file__)) == [] and bundle_trim.needed(QT / "nonexistent.so") == []


def test_has_symbol_table():
    import av.video.frame

    assert bundle_trim.has_symbol_table(av.video.frame.__file__)  # PyAV's Cython modules keep theirs
    assert not bundle_trim.has_symbol_table(Path(__file__))


def _entry(dest: str, src: Path, typecode: str = "BINARY") -> tuple[str, str, str]:
    return dest, str(src), typecode


def test_trim_drops_a_plugin_with_the_libraries_only_it_needed():
    lib, plugins = "PySide6/Qt/lib/", "PySide6/Qt/plugins/platforms/"
    binaries = [
        _entry(plugins + "libqxcb.so", QT / "plugins" / "platforms" / "libqxcb.so"),
        _entry(plugins + "libqeglfs.so", QT / "plugins" / "platforms" / "libqeglfs.so"),
        *(_entry(lib + n, QT / "lib" / n) for n in ("libQt6Core.so.6", "libQt6Gui.so.6", "libQt6DBus.so.6",
                                                      "libQt6XcbQpa.so.6", "libQt6EglFSDeviceIntegration.so.6")),
        ("libQt6EglFSDeviceIntegration.so.6", lib + "libQt6EglFSDeviceIntegration.so.6", "SYMLINK"),
        ("libQt6Core.so.6", lib + "libQt6Core.so.6", "SYMLINK"),
        _entry("libloaded_by_name.so.1", QT / "lib" / "libQt6Network.so.6"),  # nothing names it: dlopen'ed, kept
    ]
    datas = [("PySide6/Qt/translations/qtbase_de.qm", "x", "DATA"), ("gui_app/resources/x.json", "y", "DATA")]
    kept, kept_data, gone = bundle_trim.trim(binaries, datas,
                                             lambda d: d.endswith("libqeglfs.so") or "/translations/" in d)
    assert gone == sorted([plugins + "libqeglfs.so", lib + "libQt6EglFSDeviceIntegration.so.6",
                           "libQt6EglFSDeviceIntegration.so.6", "PySide6/Qt/translations/qtbase_de.qm"])
    assert {e[0] for e in kept} == {e[0] for e in binaries} - set(gone)
    assert kept_data == [datas[1]]


def test_opencvs_ffmpeg_becomes_links_to_pyavs_and_its_own_dependencies_go():
    binaries = [_entry("cv2/cv2.abi3.so", _cv2_so(), "EXTENSION")]
    for folder in (CV_LIBS, AV_LIBS):
        binaries += [_entry(f"{folder.name}/{p.name}", p) for p in sorted(folder.iterdir())]
    import av.video.frame

    binaries.append(_entry("av/video/frame.abi3.so", Path(av.video.frame.__file__), "EXTENSION"))
    linked, shared = bundle_trim.share_libraries(binaries, FFMPEG, CV_LIBS.name, AV_LIBS.name)
    assert {Path(d).name.split("-")[0] for d in shared} >= {"libavcodec", "libavformat", "libavutil", "libswscale"}
    for dest, src, typecode in linked:
        if dest in shared:
            assert typecode == "SYMLINK" and src.startswith(f"../{AV_LIBS.name}/")
            target = AV_LIBS / Path(src).name
            # the same library: same name and major.minor version
            assert Path(dest).name.split("-")[0] == target.name.split("-")[0]
            assert Path(dest).name.split(".so.")[1].split(".")[:2] == target.name.split(".so.")[1].split(".")[:2]
    # a library loaded through a link looks for its own dependencies beside the link ($ORIGIN): every one of the
    # shared copies' dependencies in av.libs, direct or not, has a name in OpenCV's folder too
    in_cv = {Path(d).name for d, _, _ in linked if Path(d).parent.name == CV_LIBS.name}
    todo = [Path(s).name for d, s, t in linked if d in shared]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or not (AV_LIBS / name).is_file():
            continue
        seen.add(name)
        assert name in in_cv, name
        todo += bundle_trim.needed(AV_LIBS / name)
    assert any(n.startswith("libx264") for n in in_cv)  # libavcodec's encoder, two levels down
    kept, orphans = bundle_trim.drop_orphans(binaries, linked)
    orphan_names = {Path(d).name.split("-")[0] for d in orphans}
    # OpenCV's FFmpeg alone needed its libvpx, OpenSSL 1.1 and libswresample (cv2 does not link it)
    assert {"libvpx", "libssl", "libcrypto", "libswresample"} <= orphan_names
    # what cv2 itself links stays: its OpenBLAS, libavif and libpng, and PyAV's libraries
    assert not orphan_names & {"libopenblasp", "libavif", "libpng16", "libx264", "libdav1d"}
    assert all(os.path.basename(d) != "cv2.abi3.so" for d in orphans)
    assert len(kept) == len(linked) - len(orphans)


def test_segments_aligned_finds_a_load_segment_the_loader_refuses(tmp_path):
    """strip can misalign a file patchelf rewrote (numpy's OpenBLAS did): the build keeps such a file unstripped."""
    import struct

    good = QT / "lib" / "libQt6DBus.so.6"
    assert bundle_trim.segments_aligned(good) and not bundle_trim.segments_aligned(Path(__file__))
    data = bytearray(good.read_bytes())
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        at = phoff + i * phentsize
        if struct.unpack_from("<I", data, at)[0] == 1 and struct.unpack_from("<Q", data, at + 8)[0] > 0:
            struct.pack_into("<Q", data, at + 8, struct.unpack_from("<Q", data, at + 8)[0] + 8)  # p_offset moved
            break
    bad = tmp_path / "bad.so"
    bad.write_bytes(bytes(data))
    assert not bundle_trim.segments_aligned(bad)
