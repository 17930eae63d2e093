"""Helpers of the hostile-input tests: run the real ``rollscope`` in a subprocess, kill it, run it unprivileged."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NOBODY = 65534


def rollscope(*argv: str, timeout: float = 120, user: int | None = None, **kw) -> subprocess.CompletedProcess:
    """``python -m gui_app ARGV`` (the installed ``rollscope`` entry point's code), as ``user`` when given; stdout
    and stderr are captured as text unless ``stdout`` / ``stderr`` say where they go."""
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    return subprocess.run([*_as(user), sys.executable, "-m", "gui_app", *argv], timeout=timeout, cwd=REPO,
                          env=_env(), **{**streams, **kw})


def spawn(*argv: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "gui_app", *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, cwd=REPO, env=_env())


def kill_after(proc: subprocess.Popen, seconds: float) -> bool:
    """SIGKILL ``proc`` if it is still running ``seconds`` from now; returns whether it was killed.

    Waits on the process itself (it may finish first), not a sleep."""
    try:
        proc.wait(timeout=seconds)
        return False
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return True


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("ROLLSCOPE_DEBUG", None)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _as(user: int | None) -> list[str]:
    # setpriv (util-linux, part of every Debian system) rather than os.setuid in a preexec_fn: it changes user in a
    # way that still lets the interpreter under root's private home be executed.
    if user is None:
        return []
    return ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"]


def unprivileged() -> int | None:
    """The user to run as so that file permissions apply: ``nobody`` when the tests run as root (root ignores
    them), else None (this user already obeys them)."""
    return NOBODY if os.geteuid() == 0 else None


def open_dir() -> Path:
    """A temporary folder that an unprivileged user can traverse (pytest's are private to their owner)."""
    path = Path(tempfile.mkdtemp(prefix="rollscope-hostile-"))
    path.chmod(0o755)
    return path


def one_error_line(stderr: str) -> str:
    """The single ``rollscope: error:`` line of a failed command; fails the test on a traceback or several lines."""
    assert "Traceback" not in stderr, stderr
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("rollscope: error: "), lines[0]
    return lines[0]
