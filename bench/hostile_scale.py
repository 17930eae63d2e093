"""Benchmark: small hostile files that must not take gigabytes (issue 31, item 2).

Builds four OSWorld runs under ``data/bench/hostile_scale/`` (reused when present) and runs the real
``rollscope inspect --json`` on each in a process of its own, recording its wall time, its peak resident memory
(``os.wait4``'s rusage of that one child), its exit status and what it said:

- ``wrong_clock``: a three-step run (screenshots, a 4 s recording) whose first ``action_timestamp`` is ``--years``
  early (an unsynced VM). The offset search used to size its arrays by the time span in seconds.
- ``png_bomb``: six steps whose screenshots are six copies of a 1.2 MB PNG declaring 20000x20000 px (1.2 GB of
  pixels once decoded); ``score`` is timed too, as it decodes the screenshots the model judges.
- ``long_run``: ``--steps`` steps (100,000; a 25 MB ``traj.jsonl``), one screenshot file for all of them, stamps 20 ms
  apart and a recording that covers them.
- ``long_action``: a three-step run whose first action is a 100 KB string (``ast.parse`` raised MemoryError on it).

Each child runs under an address-space limit (``--limit-gb``) and a time limit (``--timeout``), so a regression
fails here with MemoryError or a kill instead of taking the machine down; a fresh cache folder per run keeps the
alignment cache from answering.

    python bench/hostile_scale.py [--quick] [--json] [--steps N] [--years Y] [--only NAME ...]
"""

from __future__ import annotations

import datetime as dt
import json
import os
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import av  # noqa: E402
import cv2  # noqa: E402

from bench._common import DATA, REPO, Figures, log, parser  # noqa: E402
from tests.formats import builders as b  # noqa: E402

ROOT = DATA / "hostile_scale"
CASES = ("wrong_clock", "png_bomb", "long_run", "long_action")


# -- inputs --------------------------------------------------------------------------------------------------------


def _rewrite_jsonl(file: Path, change) -> None:
    lines = [json.loads(line) for line in file.read_text().splitlines() if line.strip()]
    change(lines)
    file.write_text("".join(json.dumps(rec) + "\n" for rec in lines))


def wrong_clock(dest: Path, years: int) -> Path:
    """The builders' OSWorld run with its first action stamped ``years`` early."""
    run = b.osworld_dir(dest)["path"]

    def early(lines: list[dict]) -> None:
        ts = lines[0]["action_timestamp"]
        lines[0]["action_timestamp"] = f"{int(ts[:4]) - years:04d}{ts[4:]}"

    _rewrite_jsonl(run / "traj.jsonl", early)
    return run


def bomb_png(path: Path, side: int = 20_000) -> Path:
    """An RGB PNG declaring ``side`` x ``side`` px of black: 1.2 GB of pixels in about 1.2 MB of zlib."""
    if path.is_file():
        return path

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    z = zlib.compressobj(9)
    row = b"\0" * (1 + 3 * side)  # filter byte + RGB
    body = b"".join(z.compress(row * 100) for _ in range(side // 100)) + z.flush()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", body) + chunk(b"IEND", b""))
    return path


def png_bomb(dest: Path) -> Path:
    """An OSWorld run of six steps whose screenshots are six copies of :func:`bomb_png` (a recording, so that
    ``inspect`` aligns and decodes them; a task, so that ``score`` judges them)."""
    run = b.osworld_dir(dest)["path"]
    bomb = bomb_png(ROOT / "bomb_20000.png")

    def six(lines: list[dict]) -> None:
        first = lines[0]
        lines[:] = []
        for k in range(6):
            rec = dict(first, step_num=k + 1, action=f"pyautogui.click(x={10 * k}, y=20)",
                       screenshot_file=f"step_{k + 1}_bomb.png")
            lines.append(rec)
            shutil.copyfile(bomb, run / rec["screenshot_file"])

    _rewrite_jsonl(run / "traj.jsonl", six)
    return run


def long_run(dest: Path, n_steps: int) -> Path:
    """A ``traj.jsonl`` of ``n_steps`` actions 20 ms apart, every screenshot the same file, and a 1 fps recording of
    the whole span."""
    run = dest / "gpt-4o" / "os" / "long-run"
    run.mkdir(parents=True)
    start = dt.datetime(2025, 3, 5, 14, 2, 7)
    b.write_png(run / "shot.png", b.screen(1))
    with open(run / "traj.jsonl", "w", encoding="utf-8") as fh:
        for k in range(n_steps):
            stamp = (start + dt.timedelta(seconds=1 + 0.02 * k)).strftime("%Y%m%d@%H%M%S%f")
            fh.write(json.dumps({"step_num": k + 1, "action_timestamp": stamp,
                                 "action": f"pyautogui.click(x={k % 300}, y={k % 200})",
                                 "response": "I will click the next item in the list to continue.", "reward": 0,
                                 "done": False, "info": {}, "screenshot_file": "shot.png"}) + "\n")
    (run / "task.json").write_text(json.dumps({"id": "long-run", "instruction": "Click through the list"}))
    (run / "result.txt").write_text("0.0\n")
    seconds = int(2 + 0.02 * n_steps) + 1
    frame = cv2.cvtColor(b.screen(1), cv2.COLOR_BGR2RGB)
    with av.open(str(run / "recording.mp4"), "w") as out:
        stream = out.add_stream("libx264", rate=Fraction(1))
        stream.width, stream.height, stream.pix_fmt = b.W, b.H, "yuv420p"
        stream.options = {"preset": "ultrafast", "crf": "30"}
        for _ in range(seconds):
            for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return run


def long_action(dest: Path) -> Path:
    """The builders' OSWorld run with a 100 KB first action (a runaway sign, as a model can emit)."""
    run = b.osworld_dir(dest)["path"]

    def long(lines: list[dict]) -> None:
        lines[0]["action"] = "pyautogui.scroll(" + "-" * 100_000 + "1)"

    _rewrite_jsonl(run / "traj.jsonl", long)
    return run


def build(name: str, args) -> Path:
    """The run of case ``name`` (built once per size; ``data/`` is git-ignored)."""
    tag = {"wrong_clock": f"y{args.years}", "long_run": f"n{args.steps}"}.get(name, "v1")
    dest = ROOT / f"{name}_{tag}"
    done = dest / ".built"
    if not done.is_file():
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        log(f"building {name} in {dest}")
        if name == "wrong_clock":
            run = wrong_clock(dest, args.years)
        elif name == "png_bomb":
            run = png_bomb(dest)
        elif name == "long_run":
            run = long_run(dest, args.steps)
        else:
            run = long_action(dest)
        done.write_text(str(run.relative_to(dest)))
    return dest / done.read_text()


def tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


# -- measuring -------------------------------------------------------------------------------------------------------


def measure(argv: list[str], limit_gb: float, timeout: float) -> dict:
    """Run ``python -m gui_app ARGV`` alone: wall seconds, peak RSS (MiB), exit status and the last stderr line."""
    limit = int(limit_gb * 2**30)
    with tempfile.TemporaryDirectory(prefix="rollscope-bench-") as tmp:
        env = {**os.environ, "PYTHONPATH": str(REPO), "ROLLSCOPE_CACHE_DIR": str(Path(tmp) / "cache"),
               "ROLLSCOPE_CONFIG_DIR": str(Path(tmp) / "config")}
        out_f, err_f = Path(tmp) / "out", Path(tmp) / "err"
        with open(out_f, "wb") as out, open(err_f, "wb") as err:
            t0 = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-m", "gui_app", *argv], stdout=out, stderr=err, cwd=REPO,
                                    env=env, start_new_session=True)
            resource.prlimit(proc.pid, resource.RLIMIT_AS, (limit, limit))  # set as it starts: no preexec_fn
            killed = threading.Event()

            def kill() -> None:
                killed.set()
                os.killpg(proc.pid, signal.SIGKILL)

            timer = threading.Timer(timeout, kill)
            timer.start()
            _, status, usage = os.wait4(proc.pid, 0)
            timer.cancel()
            wall = time.perf_counter() - t0
            proc.returncode = os.waitstatus_to_exitcode(status)
        stdout = out_f.read_text(errors="replace")
        stderr = err_f.read_text(errors="replace").strip().splitlines()
    res = {"seconds": wall, "peak_rss_mb": usage.ru_maxrss / 1024, "rc": "killed (timeout)" if killed.is_set()
           else proc.returncode, "stderr": stderr[-1][:300] if stderr else ""}
    try:
        res["json"] = json.loads(stdout.splitlines()[-1]) if stdout.strip() else None
    except json.JSONDecodeError:
        res["json"] = None
    return res


def report(fig: Figures, name: str, what: str, res: dict) -> None:
    fig.add(f"{name}.{what}_seconds", res["seconds"], "s")
    fig.add(f"{name}.{what}_peak_rss", res["peak_rss_mb"], "MiB")
    fig.add(f"{name}.{what}_exit", res["rc"])
    info = res.get("json")
    if isinstance(info, dict) and "warnings" in info:
        fig.add(f"{name}.{what}_steps", info.get("n_steps"))
        fig.add(f"{name}.{what}_warnings", len(info["warnings"]))
        if info["warnings"]:
            log(f"  first warning: {info['warnings'][0][:240]}")
    elif res["stderr"]:
        log(f"  stderr: {res['stderr']}")


def main() -> None:
    p = parser(__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=None, help="steps of the long run (default 100,000; quick 10,000)")
    p.add_argument("--years", type=int, default=10, help="how early the wrong clock is")
    p.add_argument("--limit-gb", type=float, default=12.0, help="address-space limit of each child (GiB)")
    p.add_argument("--timeout", type=float, default=None, help="seconds each child may run (default 900; quick 300)")
    p.add_argument("--only", nargs="+", choices=CASES, default=list(CASES), help="cases to run")
    args = p.parse_args()
    args.steps = args.steps or (10_000 if args.quick else 100_000)
    timeout = args.timeout or (300.0 if args.quick else 900.0)
    fig = Figures(args.json)
    for name in args.only:
        run = build(name, args)
        fig.add(f"{name}.input_kb", tree_bytes(run) / 1024, "KiB")
        if name == "long_run":
            fig.add(f"{name}.steps", args.steps)
            fig.add(f"{name}.traj_jsonl_mb", (run / "traj.jsonl").stat().st_size / 2**20, "MiB")
        log(f"inspect {name}")
        report(fig, name, "inspect", measure(["inspect", str(run), "--json"], args.limit_gb, timeout))
        if name == "png_bomb":
            log(f"score {name}")
            report(fig, name, "score", measure(["score", str(run), "--json"], args.limit_gb, timeout))
    fig.emit()


if __name__ == "__main__":
    main()
