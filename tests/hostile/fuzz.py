"""The hostile-input fuzz campaign: mutate every format's fixtures and check what ``scan`` and ``inspect`` make of them.

Seeds are real-shaped units of every format (the bundled samples, the builders of ``tests/formats/builders.py``,
and every unit under ``tests/fixtures/real`` when that folder exists). Each input is a seed copied to a fresh folder
and mutated once: truncated, bytes flipped, emptied, given a BOM, deleted, replaced by a FIFO, a symlink loop or a
link out of the folder, a JSON value set to a wrong type, a huge number, deep nesting, a long string or a path
outside the trajectory, a CSV cell likewise.

Every input is then scanned into a fresh catalog (:meth:`Catalog.scan`, which classifies and loads the unit the way
the library does) and inspected (``rollscope inspect PATH --json`` through :func:`gui_app.cli.main`), both in this
process, each within :data:`TIME_LIMIT_S` and :data:`MEMORY_LIMIT_MB`. The property: every input ends with a clean
one-line error naming a file, or a load (with warnings, or without when the mutation did no harm); never a traceback
(an exception that is not a domain error, an importer bug, an "internal error" exit), a hang or a blow-up.

Run by ``tests/hostile/test_fuzz.py`` (seeded, a few hundred inputs) and ``bench/fuzz_inputs.py`` (a larger
campaign, printing the counts). ``python -m tests.hostile.fuzz --n 300 --seed 18 --json`` runs one directly.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import re
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

TIME_LIMIT_S = 30.0  # per input, scan and inspect together, on two busy cores
MEMORY_LIMIT_MB = 1024.0  # growth of the peak resident memory one input may cause
MESSAGE_LIMIT = 600  # longest error or warning line accepted (the core clips at 500; the prefix adds a little)
SAMPLES = REPO / "resources" / "samples"
REAL = REPO / "tests" / "fixtures" / "real"

TEXT_SUFFIXES = (".json", ".jsonl", ".csv", ".txt", ".log", ".eval", ".ndjson")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp")


# --- seeds -----------------------------------------------------------------------------------------------------

def build_seeds(folder: Path) -> dict[str, Path]:
    """One unit of every format under ``folder``, keyed by a name; each the unit's path (a folder or a file)."""
    from tests.formats import builders as b

    seeds: dict[str, Path] = {}
    shutil.copytree(SAMPLES / "miniwob" / "login-user-success", folder / "native" / "run")
    seeds["native"] = folder / "native" / "run"
    shutil.copytree(SAMPLES / "plain_video" / "use-autocomplete", folder / "plain_csv" / "run")
    seeds["plain_video_csv"] = folder / "plain_csv" / "run"
    seeds["plain_video_jsonl"] = b.plain_video_dir(folder / "plain_jsonl" / "run", log="jsonl")["path"]
    seeds["osworld"] = b.osworld_dir(folder / "osworld")["path"]
    seeds["atif"] = b.atif_file(folder / "atif")["path"]
    seeds["agentnet"] = b.agentnet_file(folder / "agentnet")["path"]
    seeds["browsergym"] = b.browsergym_dir(folder / "browsergym")["path"]
    (folder / "whowhen").mkdir()
    (folder / "whowhen" / "record.json").write_text(json.dumps(b.whowhen_record()), encoding="utf-8")
    seeds["whowhen"] = folder / "whowhen" / "record.json"
    seeds["image_folder"] = b.image_folder(folder / "images" / "shots", log=True)["path"]
    seeds["osworld_trace"] = b.osworld_trace_dir(folder / "osworld_trace")["path"]
    seeds["webvoyager"] = b.webvoyager_dir(folder / "webvoyager")["path"]
    seeds["harbor"] = b.harbor_trial(folder / "harbor", "hello-world__Ab3dE9f", b.atif_v12_claude_code())
    (folder / "inspect").mkdir()
    seeds["inspect"] = b.inspect_computer_eval(folder / "inspect" / "computer.eval")["path"]
    seeds["agentlab_killed"] = b.agentlab_killed_dir(folder / "agentlab", folder / "UNPICKLED")
    if REAL.is_dir():  # real files from public repositories (the formats' own fixtures)
        from gui_app.core.trajectory.formats import find_units

        for unit, imp in find_units(REAL):
            rel = unit.relative_to(REAL)
            dest = folder / "real" / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            (shutil.copytree if unit.is_dir() else shutil.copy2)(unit, dest)
            seeds[f"real:{imp.name}:{rel}"] = dest
    return seeds


# --- mutations -------------------------------------------------------------------------------------------------

BAD_PATHS = ["/etc/passwd", "../../etc/passwd", "/proc/self/environ", "/dev/zero", "../../../../../../etc/shadow",
             "frames/../../../etc/hosts", "\x00nul.png", "x" * 5000 + ".png", "file:///etc/passwd"]


def _json_payloads(rng: random.Random, quick: bool) -> list[tuple[str, str]]:
    """(name, JSON text) of the values set into a document: wrong types, huge numbers, deep nesting, long strings,
    bad paths, odd text."""
    long_n = 200_000 if quick else 2_000_000
    return [
        ("wrong type: list", "[]"), ("wrong type: object", "{}"), ("wrong type: string", '"x"'),
        ("wrong type: int", "7"), ("wrong type: bool", "true"), ("wrong type: null", "null"),
        ("negative", "-1"), ("huge int 2**64", str(2**64)), ("huge int 10**400", "1" + "0" * 400),
        ("5000-digit int", "9" * 5000), ("float 1e308", "1e308"), ("float -1e308", "-1e308"),
        ("float 1e400 (inf)", "1e400"), ("NaN", "NaN"), ("Infinity", "-Infinity"),
        ("deep nesting", "[" * 3000 + "]" * 3000), ("deep objects", '{"a":' * 1500 + "1" + "}" * 1500),
        ("long string", json.dumps("A" * long_n)), ("long list", json.dumps(list(range(50_000)))),
        ("lone surrogate", '"\\udcff\\ud800"'), ("NUL and newlines", json.dumps("a\x00b\n\r\n" * 100)),
        ("bad path", json.dumps(rng.choice(BAD_PATHS))),
    ]


def _json_paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _json_paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:50]):
            out += _json_paths(v, (*prefix, i))
    return out


_MARK = "\u2063ROLLSCOPE_FUZZ_VALUE\u2063"


def _set_raw(doc: Any, path: tuple, raw: str) -> str:
    """The JSON text of ``doc`` with the value at ``path`` replaced by the raw JSON text ``raw`` (which Python's
    json cannot always produce itself: 5000-digit ints, NaN, deep nesting)."""
    if not path:
        return raw
    target = doc
    for k in path[:-1]:
        target = target[k]
    target[path[-1]] = _MARK
    return json.dumps(doc, ensure_ascii=False).replace(json.dumps(_MARK, ensure_ascii=False), raw, 1)


def mutate_json_value(rng: random.Random, target: Path, quick: bool) -> str:
    text = target.read_text(encoding="utf-8-sig")
    name, raw = rng.choice(_json_payloads(rng, quick))
    lines = text.splitlines()
    try:
        doc = json.loads(text)
        is_lines = False
    except json.JSONDecodeError:
        is_lines = True
    if is_lines:  # JSON Lines: one line's record
        idx = [i for i, ln in enumerate(lines) if ln.strip()]
        if not idx:
            return mutate_truncate(rng, target, quick)
        i = rng.choice(idx)
        try:
            doc = json.loads(lines[i])
        except json.JSONDecodeError:
            return mutate_flip(rng, target, quick)
        where = rng.choice(_json_paths(doc))
        lines[i] = _set_raw(doc, where, raw)
        target.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
        return f"{target.name}:{i + 1} {'.'.join(map(str, where)) or '(root)'} <- {name}"
    where = rng.choice(_json_paths(doc))
    target.write_text(_set_raw(doc, where, raw), encoding="utf-8", errors="surrogatepass")
    return f"{target.name} {'.'.join(map(str, where)) or '(root)'} <- {name}"


def mutate_zip_member(rng: random.Random, target: Path, quick: bool) -> str:
    """A JSON member of a zip archive (an Inspect ``.eval`` log) mutated like a JSON file, the archive rewritten."""
    import zipfile

    try:
        with zipfile.ZipFile(target) as z:
            members = [(i, z.read(i.filename)) for i in z.infolist()]
    except (zipfile.BadZipFile, OSError, ValueError):
        return mutate_flip(rng, target, quick)
    names = [i.filename for i, _ in members if i.filename.endswith(".json")]
    if not names:
        return mutate_flip(rng, target, quick)
    name = rng.choice(names)
    scratch = target.with_name(target.name + ".member.json")
    scratch.write_bytes(dict((i.filename, d) for i, d in members)[name])
    what = mutate_json_value(rng, scratch, quick)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for info, data in members:
            z.writestr(info.filename, scratch.read_bytes() if info.filename == name else data)
    scratch.unlink()
    return f"member {name}: {what}"


def mutate_csv_cell(rng: random.Random, target: Path, quick: bool) -> str:
    lines = target.read_text(encoding="utf-8-sig").splitlines()
    if len(lines) < 2:
        return mutate_truncate(rng, target, quick)
    i = rng.randrange(1, len(lines))
    cells = lines[i].split(",")
    j = rng.randrange(len(cells))
    name, value = rng.choice([("huge number", "9" * 5000), ("1e308", "1e308"), ("negative", "-5"), ("nan", "nan"),
                              ("inf", "inf"), ("text", "abc"), ("bad path", rng.choice(BAD_PATHS[:6])),
                              ("clock", "99:99:99"), ("empty", ""), ("long", "B" * (100_000 if quick else 1_000_000)),
                              ("quote", '"unclosed')])
    cells[j] = value
    lines[i] = ",".join(cells)
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return f"{target.name}:{i + 1} cell {j} <- {name}"


def mutate_truncate(rng: random.Random, target: Path, quick: bool) -> str:
    data = target.read_bytes()
    cut = rng.randrange(0, max(1, len(data)))
    target.write_bytes(data[:cut])
    return f"{target.name} truncated to {cut} of {len(data)} bytes"


def mutate_flip(rng: random.Random, target: Path, quick: bool) -> str:
    data = bytearray(target.read_bytes())
    if not data:
        return mutate_bom(rng, target, quick)
    n = rng.randint(1, 8)
    for _ in range(n):
        k = rng.randrange(len(data))
        data[k] ^= 1 << rng.randrange(8)
    target.write_bytes(bytes(data))
    return f"{target.name}: {n} bits flipped"


def mutate_empty(rng: random.Random, target: Path, quick: bool) -> str:
    target.write_bytes(b"")
    return f"{target.name} emptied"


def mutate_bom(rng: random.Random, target: Path, quick: bool) -> str:
    target.write_bytes(b"\xef\xbb\xbf" + target.read_bytes())
    return f"{target.name}: UTF-8 BOM added"


def mutate_delete(rng: random.Random, target: Path, quick: bool) -> str:
    target.unlink()
    return f"{target.name} deleted"


def mutate_fifo(rng: random.Random, target: Path, quick: bool) -> str:
    target.unlink()
    os.mkfifo(target)
    return f"{target.name} replaced by a FIFO"


def mutate_symlink_loop(rng: random.Random, target: Path, quick: bool) -> str:
    target.unlink()
    other = target.with_name(target.name + ".loop")
    target.symlink_to(other.name)
    other.symlink_to(target.name)
    return f"{target.name} replaced by a symlink loop"


def mutate_symlink_out(rng: random.Random, target: Path, quick: bool) -> str:
    target.unlink()
    target.symlink_to(rng.choice(["/etc/passwd", "/proc/self/environ", "/dev/zero", "/dev/null"]))
    return f"{target.name} replaced by a link to {os.readlink(target)}"


def mutate_deep_file(rng: random.Random, target: Path, quick: bool) -> str:
    target.write_text(rng.choice(["[" * 5000, '{"a":' * 3000, "[" * 3000 + "]" * 3000]), encoding="utf-8")
    return f"{target.name} replaced by deep nesting"


def mutate_long_line(rng: random.Random, target: Path, quick: bool) -> str:
    with target.open("ab") as fh:
        fh.write(b"\n" + b"C" * (1_000_000 if quick else 5_000_000) + b"\n")
    return f"{target.name}: a long line appended"


def mutate_dir_symlink(rng: random.Random, unit: Path, quick: bool) -> str:
    folder = unit if unit.is_dir() else unit.parent
    name = rng.choice(["sub", "loop", "frames2"])
    (folder / name).symlink_to(rng.choice([".", "..", "/", "/proc"]))
    return f"{name} -> {os.readlink(folder / name)} added"


# --- round two: what shows only when frames are decoded, a whole run is aligned or text reaches a terminal ---------

_CLOCK_KEY = ("timestamp", "time", "t_start", "t_end", "created", "started", "ts")


def _walk_set(doc: Any, want: Callable[[str, Any], bool], value: Callable[[Any], Any], rng: random.Random) -> int:
    """Set ``value(old)`` into every dict entry of ``doc`` whose (key, old value) ``want`` accepts, each with
    probability 1/2 (at least the first); returns how many were set."""
    hits: list[tuple[dict, str]] = []

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                if want(str(k), x):
                    hits.append((v, k))
                walk(x)
        elif isinstance(v, list):
            for x in v[:2000]:
                walk(x)

    walk(doc)
    n = 0
    for i, (d, k) in enumerate(hits):
        if i == 0 or rng.random() < 0.5:
            d[k] = value(d[k])
            n += 1
    return n


def _edit_json(target: Path, edit: Callable[[Any], int]) -> int:
    """Apply ``edit`` to a JSON document or to every record of a JSON Lines file; returns the edits made."""
    text = target.read_text(encoding="utf-8-sig")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        out, n = [], 0
        for line in text.splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                out.append(line)
                continue
            n += edit(rec)
            out.append(json.dumps(rec, ensure_ascii=False))
        target.write_text("\n".join(out) + "\n", encoding="utf-8")
        return n
    n = edit(doc)
    target.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return n


def mutate_clock(rng: random.Random, target: Path, quick: bool) -> str:
    """A wrong clock: a timestamp ten years early, at the epoch, or in the year 9999 (an unsynced VM)."""
    name, shift = rng.choice([("10 years early", -10 * 365.25 * 86400), ("at 1970", None), ("in 9999", 253402300799.0),
                              ("3 years late", 3 * 365.25 * 86400)])

    def wrong(old: Any) -> Any:
        if isinstance(old, (int, float)) and not isinstance(old, bool):
            return 0 if shift is None else (shift if shift > 1e11 else old + shift)
        if isinstance(old, str):
            return "1970-01-01T00:00:00" if shift is None or shift < 0 else "9999-12-31T23:59:59"
        return old

    n = _edit_json(target, lambda d: _walk_set(d, lambda k, v: any(c in k.lower() for c in _CLOCK_KEY)
                                               and isinstance(v, (int, float, str)), wrong, rng))
    return f"{target.name}: {n} timestamps {name}" if n else mutate_json_value(rng, target, quick)


def mutate_long_action(rng: random.Random, target: Path, quick: bool) -> str:
    """A 100 KB action string: code that would exhaust the parser, or plain words."""
    big = rng.choice(["pyautogui.click(" + "1," * 50_000 + ")", "(" * 50_000, "click " * 20_000])
    n = _edit_json(target, lambda d: _walk_set(d, lambda k, v: "action" in k.lower() and isinstance(v, str),
                                               lambda _: big, rng))
    return f"{target.name}: {n} actions of {len(big)} characters" if n else mutate_json_value(rng, target, quick)


def mutate_many_steps(rng: random.Random, target: Path, quick: bool) -> str:
    """A long run: the last record of a JSON Lines log repeated (or a JSON list's last item), up to a file of a
    size real logs have (5 MB quick, 25 MB full: the issue's 100,000-step traj.jsonl): past that it is the reading
    of a large file that is timed, not a long run."""
    k = 5_000 if quick else 50_000
    budget = 5 << 20 if quick else 25 << 20
    text = target.read_text(encoding="utf-8-sig")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        if not lines:
            return mutate_truncate(rng, target, quick)
        k = max(1, min(k, budget // (len(lines[-1]) + 1)))
        target.write_text("\n".join(lines + [lines[-1]] * k) + "\n", encoding="utf-8")
        return f"{target.name}: last line repeated {k} times"
    lists: list[list] = []

    def walk(v: Any) -> None:
        if isinstance(v, list) and v and isinstance(v[-1], dict):
            lists.append(v)
        for x in (v.values() if isinstance(v, dict) else v if isinstance(v, list) else ()):
            walk(x)

    walk(doc)
    if not lists:
        return mutate_json_value(rng, target, quick)
    longest = max(lists, key=len)
    k = max(1, min(k, budget // (len(json.dumps(longest[-1])) + 1)))
    longest.extend([longest[-1]] * k)
    target.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return f"{target.name}: a list of {len(longest)} records"


def mutate_duplicate_key(rng: random.Random, target: Path, quick: bool) -> str:
    """A key given twice in one object (the second wins in Python, the first in some readers)."""
    text = target.read_text(encoding="utf-8-sig")
    i = text.find('{"')
    if i < 0:
        return mutate_json_value(rng, target, quick)
    j = text.find('"', i + 2)
    key = text[i + 2:j]
    target.write_text(text[:i + 1] + json.dumps(key) + ': "duplicate", ' + text[i + 1:], encoding="utf-8")
    return f"{target.name}: key {key!r} given twice"


TERMINAL = ["\x1b]0;pwned\x07", "\x1b[2J\x1b[H", "ok\noutcome: success=True", "\x1b[8mhidden\x1b[0m", "\u202egnp.exe",
            "\r\x1b[Kforged", "\x9b31m"]


def mutate_terminal(rng: random.Random, target: Path, quick: bool) -> str:
    """Text that would drive a terminal: escape sequences, a forged line, a bidi override, in every string."""
    payload = rng.choice(TERMINAL)
    n = _edit_json(target, lambda d: _walk_set(d, lambda k, v: isinstance(v, str) and not v.startswith(("/", ".")) and
                                               "." not in v[-5:], lambda old: old + payload, rng))
    return f"{target.name}: {n} strings end in {payload!r}" if n else mutate_json_value(rng, target, quick)


def _png_header(w: int, h: int) -> bytes:
    import struct
    import zlib

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    chunk = lambda kind, data: (struct.pack(">I", len(data)) + kind + data  # noqa: E731
                                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 4096)) \
        + chunk(b"IEND", b"")


def mutate_image_bomb(rng: random.Random, target: Path, quick: bool) -> str:
    """A picture whose header declares 20000x20000 or 60000x60000 px (a decompression bomb)."""
    side = rng.choice([20_000, 60_000, 65_535])
    target.write_bytes(_png_header(side, side))
    return f"{target.name} declares {side}x{side} px"


def mutate_timescale(rng: random.Random, target: Path, quick: bool) -> str:
    """An MP4 whose media header says a time scale of 0."""
    data = bytearray(target.read_bytes())
    k = data.find(b"mdhd")
    if k < 0:
        return mutate_flip(rng, target, quick)
    version = data[k + 4]
    at = k + 4 + 4 + (16 if version == 1 else 8)  # version/flags, then creation and modification times
    data[at:at + 4] = b"\x00\x00\x00\x00"
    target.write_bytes(bytes(data))
    return f"{target.name}: time scale 0"


TEXT_OPS: list[tuple[str, Callable[[random.Random, Path, bool], str], int]] = [
    ("json value", mutate_json_value, 10), ("csv cell", mutate_csv_cell, 0), ("truncate", mutate_truncate, 4),
    ("flip", mutate_flip, 3), ("empty", mutate_empty, 1), ("bom", mutate_bom, 2), ("delete", mutate_delete, 1),
    ("fifo", mutate_fifo, 1), ("symlink loop", mutate_symlink_loop, 1), ("symlink out", mutate_symlink_out, 1),
    ("deep file", mutate_deep_file, 1), ("long line", mutate_long_line, 1), ("clock", mutate_clock, 2),
    ("long action", mutate_long_action, 1), ("many steps", mutate_many_steps, 1),
    ("duplicate key", mutate_duplicate_key, 1),
    ("terminal", mutate_terminal, 2),
]
MEDIA_OPS: list[tuple[str, Callable[[random.Random, Path, bool], str], int]] = [
    ("truncate", mutate_truncate, 3), ("flip", mutate_flip, 3), ("empty", mutate_empty, 1),
    ("delete", mutate_delete, 1), ("fifo", mutate_fifo, 2), ("symlink loop", mutate_symlink_loop, 1),
    ("symlink out", mutate_symlink_out, 1), ("image bomb", mutate_image_bomb, 2),
]


def _pick(rng: random.Random, ops: list[tuple[str, Callable[..., str], int]]) -> Callable[..., str]:
    return rng.choices([op for _, op, _ in ops], weights=[w for _, _, w in ops])[0]


def mutate(rng: random.Random, unit: Path, quick: bool) -> str:
    """Mutate one file of ``unit`` (or the unit itself), once; returns what was done."""
    files = [unit] if unit.is_file() else sorted(p for p in unit.rglob("*") if p.is_file() and not p.is_symlink())
    if not files:
        return "nothing to mutate"
    if unit.is_dir() and rng.random() < 0.05:
        return mutate_dir_symlink(rng, unit, quick)
    text = [p for p in files if p.suffix.lower() in TEXT_SUFFIXES]
    target = rng.choice(text) if text and rng.random() < 0.75 else rng.choice(files)
    is_text = target.suffix.lower() in TEXT_SUFFIXES
    if is_text:
        op = _pick(rng, TEXT_OPS)
        if target.suffix.lower() == ".csv" and op is mutate_json_value:
            op = mutate_csv_cell
        elif target.suffix.lower() == ".eval" and op is mutate_json_value:
            op = mutate_zip_member
        elif op is mutate_json_value and target.suffix.lower() not in (".json", ".jsonl", ".ndjson"):
            op = mutate_flip
    else:
        op = _pick(rng, MEDIA_OPS)
        if op is mutate_image_bomb and target.suffix.lower() not in IMAGE_SUFFIXES:
            op = mutate_timescale if target.suffix.lower() in (".mp4", ".mov", ".m4v") else mutate_flip
    if op in (mutate_clock, mutate_long_action, mutate_many_steps, mutate_duplicate_key, mutate_terminal) and \
            target.suffix.lower() not in (".json", ".jsonl", ".ndjson"):
        op = mutate_flip
    rel = target.relative_to(unit.parent if unit.is_file() else unit)
    try:
        return f"{rel}: {op(rng, target, quick)}"
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError):
        return f"{rel}: {mutate_flip(rng, target, quick)}"


# --- checking --------------------------------------------------------------------------------------------------

CLEAN_ERROR, WARNINGS, CLEAN_LOAD = "clean error", "load with warnings", "clean load"
TRACEBACK, HANG, MEMORY, BAD_MESSAGE = "traceback", "hang", "memory", "bad message"
FAILURES = (TRACEBACK, HANG, MEMORY, BAD_MESSAGE)


@dataclass
class Result:
    """What one input came to: its outcome (one of the constants above) and why, for a failure."""

    seed: str
    mutation: str
    outcome: str
    detail: str = ""
    seconds: float = 0.0


def _message_ok(line: str, names: list[str]) -> str | None:
    """Why an error or warning line is not acceptable, or None."""
    if "\n" in line.strip() or "Traceback" in line:
        return "more than one line"
    if len(line) > MESSAGE_LIMIT:
        return f"{len(line)} characters long"
    if names and not any(n in line for n in names):
        return "names no file"
    return None


def _inspect(path: str, *flags: str) -> tuple[int, str, str]:
    """``rollscope inspect PATH [--json]`` in this process, its output encoded as a terminal would (UTF-8, strict:
    text Python cannot encode fails here as it would on a real stdout)."""
    from gui_app import cli

    out, err = io.BytesIO(), io.BytesIO()
    out_text = io.TextIOWrapper(out, encoding="utf-8", errors="strict", write_through=True)
    err_text = io.TextIOWrapper(err, encoding="utf-8", errors="strict", write_through=True)
    with contextlib.redirect_stdout(out_text), contextlib.redirect_stderr(err_text):
        code = cli.main(["inspect", path, *flags])
    return code, out.getvalue().decode("utf-8"), err.getvalue().decode("utf-8")


# What may reach a terminal from a file: no C0/C1 control character but newline and tab, no bidi override.
_RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def _terminal_problem(text: str) -> str | None:
    m = _RAW_CONTROL.search(text)
    return None if m is None else f"a raw {m.group(0)!r} reaches the terminal"


def check(seed: str, mutation: str, unit: Path, box: Path) -> Result:
    """Scan ``box`` (holding the mutated ``unit``) and inspect ``unit``; classify what happened."""
    from gui_app.core.library.catalog import Catalog

    names = [str(box)]
    try:
        with Catalog(box.parent / f"{box.name}.catalog.sqlite") as cat:
            report = cat.scan(box)
            rows = cat.query(limit=None)
    except Exception as exc:  # noqa: BLE001 -- anything out of scan is the failure being looked for
        return Result(seed, mutation, TRACEBACK, f"scan: {type(exc).__name__}: {str(exc)[:300]}")
    for err in report.errors:
        why = _message_ok(err["error"], names)
        if why is not None or "importer error" in err["error"]:
            return Result(seed, mutation, BAD_MESSAGE if why else TRACEBACK, f"scan error {why or ''}: "
                                                                            f"{err['error'][:300]}")
    if len(rows) < report.trajectories:
        return Result(seed, mutation, TRACEBACK,
                      f"scan reported {report.trajectories} trajectories, stored {len(rows)}")
    key = str(unit) + ("#0" if unit.is_file() and any(r.key.endswith("#0") for r in rows) else "")
    code, out, err = _inspect(key, "--json")
    t_code, t_out, t_err = _inspect(key)  # the human-readable output: nothing from the file drives the terminal
    why = _terminal_problem(t_out + t_err)
    if why is not None:
        return Result(seed, mutation, BAD_MESSAGE, f"inspect's text: {why}")
    if t_code != code:
        return Result(seed, mutation, TRACEBACK, f"inspect exit {t_code} in text, {code} in JSON: {t_err[:300]}")
    if code == 0:
        try:
            info = json.loads(out)
        except json.JSONDecodeError as exc:
            return Result(seed, mutation, TRACEBACK, f"inspect --json printed no JSON: {exc}")
        for w in info["warnings"]:
            why = _message_ok(w, [])
            if why is not None:
                return Result(seed, mutation, BAD_MESSAGE, f"warning {why}: {w[:300]}")
        if err.strip():
            return Result(seed, mutation, BAD_MESSAGE, f"inspect succeeded but wrote to stderr: {err[:300]}")
        return Result(seed, mutation, WARNINGS if info["warnings"] else CLEAN_LOAD)
    if code == 1 and err.startswith("rollscope: error: ") and out == "":
        why = _message_ok(err.strip(), names)
        if why is None:
            return Result(seed, mutation, CLEAN_ERROR, err.strip()[:200])
        return Result(seed, mutation, BAD_MESSAGE, f"inspect error {why}: {err[:300]}")
    return Result(seed, mutation, TRACEBACK, f"inspect exit {code}: {err[:400]}")


def _peak_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return float(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


# --- the campaign ----------------------------------------------------------------------------------------------

@dataclass
class Campaign:
    """Counts of a campaign, and the failing inputs (seed, mutation, why)."""

    inputs: int = 0
    counts: Counter = field(default_factory=Counter)
    by_seed: dict[str, Counter] = field(default_factory=dict)
    failures: list[Result] = field(default_factory=list)
    seconds: float = 0.0
    slowest: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"inputs": self.inputs, "clean_errors": self.counts[CLEAN_ERROR],
                "loads_with_warnings": self.counts[WARNINGS], "clean_loads": self.counts[CLEAN_LOAD],
                "tracebacks": self.counts[TRACEBACK], "hangs": self.counts[HANG], "memory": self.counts[MEMORY],
                "bad_messages": self.counts[BAD_MESSAGE], "seconds": round(self.seconds, 1),
                "slowest_input_s": round(self.slowest, 2), "seeds": len(self.by_seed),
                "by_seed": {k: dict(v) for k, v in sorted(self.by_seed.items())},
                "failures": [r.__dict__ for r in self.failures[:50]]}


def run(n: int, seed: int = 18, quick: bool = True, work: Path | None = None,
        progress: Callable[[int, Result], None] | None = None) -> Campaign:
    """Run ``n`` mutated inputs (round-robin over the seeds, mutations drawn from ``seed``)."""
    own = work is None
    work = Path(tempfile.mkdtemp(prefix="rollscope-fuzz-", dir=_memory_disk())) if work is None else work
    camp = Campaign()
    t0 = time.perf_counter()
    try:
        seeds = build_seeds(work / "seeds")
        names = sorted(seeds)
        rng = random.Random(seed)
        for i in range(n):
            name = names[i % len(names)]
            src = seeds[name]
            box = work / "inputs" / f"{i:05d}"
            unit = box / src.name
            box.mkdir(parents=True)
            if src.is_dir():
                shutil.copytree(src, unit, symlinks=True)
            else:
                shutil.copy2(src, unit)
            mutation = mutate(random.Random(rng.random()), unit, quick)
            res = _bounded(name, mutation, unit, box)
            camp.inputs += 1
            camp.counts[res.outcome] += 1
            camp.by_seed.setdefault(name, Counter())[res.outcome] += 1
            camp.slowest = max(camp.slowest, res.seconds)
            if res.outcome in FAILURES:
                camp.failures.append(res)
            if progress is not None:
                progress(i + 1, res)
            if res.outcome == HANG:
                break  # the stuck thread cannot be stopped: report what we have
            shutil.rmtree(box, ignore_errors=True)
            for extra in work.joinpath("inputs").glob(f"{i:05d}.catalog.sqlite*"):
                extra.unlink(missing_ok=True)
        for marker in (work / "seeds").rglob("UNPICKLED"):  # the builders' trap pickles create it when unpickled
            camp.counts[TRACEBACK] += 1
            camp.failures.append(Result("(campaign)", "", TRACEBACK, f"a pickle was unpickled: {marker}"))
    finally:
        camp.seconds = time.perf_counter() - t0
        if own and not any(r.outcome == HANG for r in camp.failures):
            shutil.rmtree(work, ignore_errors=True)
    return camp


def _memory_disk() -> str | None:
    """A RAM-backed folder when there is one with room (``/dev/shm``): every input writes a catalog, whose commits
    would otherwise wait on the disk (most of a campaign's time on a busy machine)."""
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    return "/dev/shm" if st.f_bavail * st.f_frsize > (2 << 30) and os.access("/dev/shm", os.W_OK) else None


def _bounded(name: str, mutation: str, unit: Path, box: Path) -> Result:
    """:func:`check` in a thread of its own, within the time and memory limits."""
    box_result: list[Result] = []
    before = _peak_mb()
    t0 = time.perf_counter()

    def work() -> None:
        try:
            box_result.append(check(name, mutation, unit, box))
        except BaseException as exc:  # noqa: BLE001 -- whatever escapes is counted, never kills the campaign
            box_result.append(Result(name, mutation, TRACEBACK, f"{type(exc).__name__}: {str(exc)[:300]}"))

    th = threading.Thread(target=work, daemon=True)
    th.start()
    th.join(TIME_LIMIT_S)
    seconds = time.perf_counter() - t0
    if th.is_alive():
        return Result(name, mutation, HANG, f"still running after {TIME_LIMIT_S:g} s", seconds)
    res = box_result[0]
    res.seconds = seconds
    grown = _peak_mb() - before
    if grown > MEMORY_LIMIT_MB and res.outcome not in FAILURES:
        return Result(name, mutation, MEMORY, f"peak memory grew by {grown:.0f} MB", seconds)
    return res


def run_cli(n: int, seed: int = 18, quick: bool = True) -> Campaign:
    """``n`` mutated inputs through the real command line (``rollscope inspect --json`` and ``rollscope scan
    --json`` in subprocesses): what in-process runs cannot see (the interpreter's exit, output encoding) is seen."""
    import subprocess

    work = Path(tempfile.mkdtemp(prefix="rollscope-fuzz-cli-", dir=_memory_disk()))
    camp = Campaign()
    t0 = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONIOENCODING": "utf-8:strict"}
    env.pop("ROLLSCOPE_DEBUG", None)
    try:
        seeds = build_seeds(work / "seeds")
        names = sorted(seeds)
        rng = random.Random(seed)
        for i in range(n):
            name = names[i % len(names)]
            box = work / "inputs" / f"{i:05d}"
            unit = box / seeds[name].name
            box.mkdir(parents=True)
            (shutil.copytree if seeds[name].is_dir() else shutil.copy2)(seeds[name], unit)
            mutation = mutate(random.Random(rng.random()), unit, quick)
            outcome, detail = CLEAN_LOAD, ""
            for argv in (["inspect", str(unit), "--json"], ["scan", str(box), "--json"]):
                try:
                    res = subprocess.run([sys.executable, "-m", "gui_app", *argv], capture_output=True, text=True,
                                         timeout=TIME_LIMIT_S * 2, cwd=REPO, env=env)
                except subprocess.TimeoutExpired:
                    outcome, detail = HANG, f"{argv[0]} still running after {TIME_LIMIT_S * 2:g} s"
                    break
                own = [ln for ln in res.stderr.splitlines() if ln.startswith("rollscope") or "Traceback" in ln
                       or "Error" in ln.split(":", 1)[0]]
                if "Traceback" in res.stderr or res.returncode not in (0, 1) or len(own) > 1:
                    outcome, detail = TRACEBACK, f"{argv[0]} exit {res.returncode}: {res.stderr[-400:]}"
                    break
                if argv[0] == "inspect":
                    if res.returncode == 1:
                        outcome = CLEAN_ERROR
                    elif json.loads(res.stdout)["warnings"]:
                        outcome = WARNINGS
            camp.inputs += 1
            camp.counts[outcome] += 1
            camp.by_seed.setdefault(name, Counter())[outcome] += 1
            if outcome in FAILURES:
                camp.failures.append(Result(name, mutation, outcome, detail))
            shutil.rmtree(box, ignore_errors=True)
    finally:
        camp.seconds = time.perf_counter() - t0
        shutil.rmtree(work, ignore_errors=True)
    return camp


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Run a hostile-input fuzz campaign and print its counts.")
    p.add_argument("--n", type=int, default=300, help="inputs to try")
    p.add_argument("--seed", type=int, default=18)
    p.add_argument("--full", action="store_true", help="full-size payloads (10x longer strings)")
    p.add_argument("--cli", action="store_true", help="through the real command line, in subprocesses (slower)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    camp = (run_cli if args.cli else run)(args.n, args.seed, quick=not args.full)
    d = camp.to_dict()
    print(json.dumps(d) if args.json else "\n".join(f"{k}: {v}" for k, v in d.items() if k not in ("by_seed",
                                                                                                   "failures")))
    return 1 if any(d[k] for k in ("tracebacks", "hangs", "memory", "bad_messages")) else 0


if __name__ == "__main__":
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    sys.exit(main())
