"""One X display per worker: Xvfb, a real window manager (openbox), screenshots, screen recording, waiting.

Everything here talks to real X programs (``Xvfb``, ``openbox``, ``xdotool``, ``ffmpeg``'s x11grab, ``xclip``)
through subprocesses, and every wait is a poll on a condition with a deadline: the machines this runs on are small
and shared, so a fixed sleep is either too short under load or wasted when idle.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from gui_app.core.errors import RollscopeError

T = TypeVar("T")

#: Programs the recorder needs on PATH (Debian packages: xvfb, openbox, xdotool, ffmpeg, xclip, x11-xserver-utils).
REQUIRED_PROGRAMS = ("Xvfb", "openbox", "xdotool", "ffmpeg", "xclip", "xrdb", "xsetroot", "xprop", "xwininfo")


class DesktopError(RollscopeError):
    """The desktop (X server, window manager, an application, an input or capture program) misbehaved."""


def require_programs(names: tuple[str, ...] = REQUIRED_PROGRAMS) -> None:
    """Fail with the Debian package names to install when a program is missing."""
    missing = [n for n in names if shutil.which(n) is None]
    if missing:
        raise DesktopError(f"missing programs: {', '.join(missing)} (run `make system-deps` as root: they come "
                           "from the Makefile's DESKTOP_APT_PACKAGES)")


def wait_for(what: str, cond: Callable[[], T], timeout: float, interval: float = 0.05) -> T:
    """Poll ``cond`` until it returns something truthy; return it, or raise naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise DesktopError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


@dataclass
class Window:
    """A top-level X window as xdotool sees it (geometry of the client area, in screen pixels)."""

    wid: int
    name: str
    x: int
    y: int
    w: int
    h: int


class Display:
    """An Xvfb server with openbox on a free display number.

    Args:
        size: screen size in pixels (width, height).
    """

    def __init__(self, size: tuple[int, int] = (1280, 720)):
        self.size = (int(size[0]), int(size[1]))
        self.name = ""
        self._xvfb: subprocess.Popen | None = None
        self._wm: subprocess.Popen | None = None
        self._tmp = Path(tempfile.mkdtemp(prefix="rollscope-x-"))
        self._grab: Any = None
        self.env: dict[str, str] = {}

    # -- lifecycle -------------------------------------------------------------------------------------------
    def start(self, timeout: float = 30.0) -> "Display":
        require_programs()
        r, w = os.pipe()
        w_, h_ = self.size
        # -displayfd: the server picks a free display number and writes it to the pipe once it accepts clients,
        # so two workers (or other programs on the machine) never race for the same number.
        self._xvfb = subprocess.Popen(
            ["Xvfb", "-displayfd", str(w), "-screen", "0", f"{w_}x{h_}x24", "-nolisten", "tcp", "-noreset",
             "+extension", "XFIXES", "-dpi", "96"],
            pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            preexec_fn=die_with_parent)
        os.close(w)
        buf = b""
        deadline = time.monotonic() + timeout
        with os.fdopen(r, "rb", buffering=0) as fh:
            os.set_blocking(fh.fileno(), False)
            while not buf.endswith(b"\n"):
                if self._xvfb.poll() is not None:
                    raise DesktopError(f"Xvfb exited with code {self._xvfb.returncode} before accepting clients")
                if time.monotonic() > deadline:
                    raise DesktopError(f"timed out after {timeout:.0f} s waiting for Xvfb to start")
                with contextlib.suppress(BlockingIOError, TypeError):
                    chunk = fh.read(16)
                    if chunk:
                        buf += chunk
                        continue
                time.sleep(0.02)
        self.name = f":{int(buf.strip())}"
        self.env = {k: v for k, v in os.environ.items() if k not in ("WAYLAND_DISPLAY", "XAUTHORITY")}
        self.env.update({"DISPLAY": self.name, "NO_AT_BRIDGE": "1", "GTK_A11Y": "none"})
        return self

    def start_wm(self, env: dict[str, str], timeout: float = 20.0) -> None:
        """(Re)start openbox with ``env`` (the episode's cursor theme): decorations and the root cursor follow it."""
        self.stop_wm()
        cfg = self._tmp / "openbox-rc.xml"
        if not cfg.exists():
            cfg.write_text(OPENBOX_RC)
        self._wm = subprocess.Popen(["openbox", "--sm-disable", "--config-file", str(cfg)], env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                                    preexec_fn=die_with_parent)
        wait_for("openbox to manage the screen", lambda: self._wm_running(env), timeout)
        # The root window's own cursor (seen between windows): the themed arrow, not X's default cross.
        self.run(["xsetroot", "-cursor_name", "left_ptr"], env=env, check=False)

    def _wm_running(self, env: dict[str, str]) -> bool:
        if self._wm is not None and self._wm.poll() is not None:
            raise DesktopError(f"openbox exited with code {self._wm.returncode}")
        out = self.run(["xprop", "-root", "_NET_SUPPORTING_WM_CHECK"], env=env, check=False)
        return "window id #" in out

    def stop_wm(self) -> None:
        if self._wm is not None:
            _terminate(self._wm)
            self._wm = None

    def close(self) -> None:
        self.stop_recording_quietly()
        self.stop_wm()
        if self._grab is not None:
            with contextlib.suppress(Exception):
                self._grab.close()
            self._grab = None
        if self._xvfb is not None:
            _terminate(self._xvfb)
            self._xvfb = None
        shutil.rmtree(self._tmp, ignore_errors=True)

    def stop_recording_quietly(self) -> None:
        rec = getattr(self, "_recording", None)
        if rec is not None:
            with contextlib.suppress(Exception):
                rec.stop()
            self._recording = None

    def __enter__(self) -> "Display":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- programs --------------------------------------------------------------------------------------------
    def run(self, argv: list[str], env: dict[str, str] | None = None, check: bool = True, timeout: float = 20.0,
            input: str | None = None) -> str:
        """Run an X client to completion on this display; its stdout as text."""
        try:
            p = subprocess.run(argv, env=env or self.env, capture_output=True, text=True, timeout=timeout,
                               input=input)
        except subprocess.TimeoutExpired as exc:
            raise DesktopError(f"{argv[0]} did not finish in {timeout:.0f} s: {' '.join(argv)}") from exc
        if check and p.returncode != 0:
            raise DesktopError(f"{' '.join(argv)} failed ({p.returncode}): {p.stderr.strip()[:300]}")
        return p.stdout

    def xdotool(self, *args: str, check: bool = True, timeout: float = 20.0) -> str:
        return self.run(["xdotool", *args], check=check, timeout=timeout)

    # -- windows ---------------------------------------------------------------------------------------------
    def windows(self, name: str | None = None, cls: str | None = None) -> list[Window]:
        """Visible top-level windows whose title (regex) or class matches."""
        args = ["search", "--onlyvisible"]
        args += ["--class", cls] if cls else ["--name", name or "."]
        out = self.xdotool(*args, check=False)
        wins = []
        for line in out.split():
            with contextlib.suppress(DesktopError, ValueError):
                wins.append(self.window(int(line)))
        # Toolkits park helper windows off screen (pcmanfm at -100,-100): they are not on the desktop.
        return [w for w in wins if w.w > 1 and w.h > 1 and w.x + w.w > 0 and w.y + w.h > 0]

    def window(self, wid: int) -> Window:
        # xwininfo, not `xdotool getwindowgeometry`: the latter counts the window manager's frame offset twice.
        info = self.run(["xwininfo", "-id", str(wid)])
        vals = dict(re.findall(r"^\s*(Absolute upper-left [XY]|Width|Height):\s+(-?\d+)", info, re.M))
        name = self.xdotool("getwindowname", str(wid), check=False).strip()
        return Window(wid, name, int(vals["Absolute upper-left X"]), int(vals["Absolute upper-left Y"]),
                      int(vals["Width"]), int(vals["Height"]))

    def wait_window(self, title_re: str, timeout: float = 60.0, cls: str | None = None) -> Window:
        """The first visible window whose title matches ``title_re`` (and class ``cls``), once it is mapped."""
        pat = re.compile(title_re)

        def find() -> Window | None:
            for w in self.windows(cls=cls) if cls else self.windows():
                if pat.search(w.name):
                    return w
            return None

        return wait_for(f"a window titled /{title_re}/", find, timeout, interval=0.1)

    def wait_no_window(self, title_re: str, timeout: float = 20.0) -> None:
        pat = re.compile(title_re)
        wait_for(f"the window /{title_re}/ to close",
                 lambda: not any(pat.search(w.name) for w in self.windows()), timeout, interval=0.1)


    # -- screen ----------------------------------------------------------------------------------------------
    def screenshot(self) -> np.ndarray:
        """The whole screen as (H, W, 3) uint8 RGB, without the pointer (XGetImage never includes it, as with
        pyautogui's screenshots in OSWorld)."""
        import mss

        if self._grab is None:
            factory = getattr(mss, "MSS", None) or mss.mss  # mss 10 renamed the factory (the old name warns)
            self._grab = factory(display=self.name.encode())
        shot = self._grab.grab({"left": 0, "top": 0, "width": self.size[0], "height": self.size[1]})
        bgra = np.frombuffer(shot.bgra, dtype=np.uint8).reshape(shot.height, shot.width, 4)
        return np.ascontiguousarray(bgra[:, :, 2::-1])

    def wait_still(self, timeout: float = 4.0, quiet_ms: float = 250, tol: int = 40) -> np.ndarray:
        """Wait until the screen stops changing (fewer than ``tol`` pixels differ over ``quiet_ms``); return it.

        A still screen is how a person knows an application has reacted; the deadline keeps a blinking caret or
        an animation from holding the agent forever (the last screenshot is returned then).
        """
        deadline = time.monotonic() + timeout
        last = self.screenshot()
        since = time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.06)
            cur = self.screenshot()
            changed = int(np.count_nonzero(np.any(cur != last, axis=2)))
            if changed > tol:
                since = time.monotonic()
            elif time.monotonic() - since >= quiet_ms / 1000.0:
                return cur
            last = cur
        return last

    def pointer(self) -> tuple[int, int]:
        out = self.xdotool("getmouselocation", "--shell")
        vals = dict(line.split("=", 1) for line in out.split() if "=" in line)
        return int(vals["X"]), int(vals["Y"])

    # -- clipboard -------------------------------------------------------------------------------------------
    def clipboard(self, timeout: float = 5.0) -> str:
        """The CLIPBOARD selection's text as an X client reads it (xclip), '' when it holds none."""
        try:
            p = subprocess.run(["xclip", "-selection", "clipboard", "-o"], env=self.env, capture_output=True,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            return ""
        return p.stdout.decode("utf-8", "replace") if p.returncode == 0 else ""


class Recording:
    """A real-time screen capture of the display with the pointer drawn (ffmpeg x11grab, H.264).

    ffmpeg stamps x11grab frames with the wall clock and prints the first frame's stamp as the input's
    ``start``: that is the video's time 0, so a step's wall time minus :attr:`t0` is its place in the video.
    """

    def __init__(self, display: Display, path: Path, fps: int = 5, crf: int = 30):
        self.display = display
        self.path = Path(path)
        self.fps = int(fps)
        self.crf = int(crf)
        self.t0: float | None = None
        self._proc: subprocess.Popen | None = None
        self._log = self.path.with_suffix(".ffmpeg.log")

    def start(self, timeout: float = 20.0) -> "Recording":
        w, h = self.display.size
        argv = ["ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "info", "-f", "x11grab", "-draw_mouse", "1",
                "-framerate", str(self.fps), "-video_size", f"{w}x{h}", "-i", self.display.name,
                "-c:v", "libx264", "-preset", "veryfast", "-tune", "stillimage", "-crf", str(self.crf),
                "-pix_fmt", "yuv420p", "-g", str(self.fps * 2), "-threads", "1", "-r", str(self.fps),
                "-movflags", "+faststart", "-y", str(self.path)]
        self._logfh = open(self._log, "wb")  # noqa: SIM115 (closed in stop)
        self._proc = subprocess.Popen(argv, env=self.display.env, stdout=subprocess.DEVNULL, stderr=self._logfh,
                                      start_new_session=True, preexec_fn=die_with_parent)
        self.display._recording = self

        def started() -> float | None:
            if self._proc.poll() is not None:
                raise DesktopError(f"ffmpeg exited with code {self._proc.returncode}: {self._tail()}")
            m = re.search(r"Input #0, x11grab.*?start: ([0-9.]+)", self._log.read_text(errors="replace"), re.S)
            return float(m.group(1)) if m else None

        self.t0 = wait_for("ffmpeg to start grabbing the screen", started, timeout)
        # The first encoded frame exists once ffmpeg reports frame progress; until then, nothing is on tape.
        wait_for("ffmpeg's first frame", lambda: "frame=" in self._log.read_text(errors="replace"), timeout)
        return self

    def _tail(self) -> str:
        with contextlib.suppress(OSError):
            return self._log.read_text(errors="replace")[-400:].replace("\n", " | ")
        return ""

    def stop(self, timeout: float = 30.0) -> Path:
        """Stop (SIGINT: ffmpeg finishes the file) and wait for the MP4 to be complete."""
        if self._proc is None:
            return self.path
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGINT)
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            _terminate(self._proc)
            raise DesktopError(f"ffmpeg did not finish {self.path} in {timeout:.0f} s") from None
        finally:
            self._logfh.close()
            self.display._recording = None
        rc, self._proc = self._proc.returncode, None
        if rc not in (0, 255) or not self.path.is_file() or self.path.stat().st_size == 0:
            raise DesktopError(f"ffmpeg failed writing {self.path} (code {rc}): {self._tail()}")
        self._log.unlink(missing_ok=True)
        return self.path


def die_with_parent() -> None:
    """``preexec_fn``: the child gets SIGTERM when the recorder dies (a killed collection leaves no X server,
    window manager or ffmpeg behind). Linux only; elsewhere a no-op."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _terminate(proc: subprocess.Popen, timeout: float = 5.0) -> None:
    """End a process we started and its whole process group (apps fork helpers: LibreOffice's oosplash starts
    soffice.bin, which may outlive it), politely first."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
    # Whatever is left of the group (the leader may have gone first) is killed.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout)


#: openbox configuration: new windows are placed under the pointer's monitor centre and application windows
#: open maximised (as on the desktops OSWorld records); no desktop switching by wheel, which would empty the
#: screen when a scroll lands on the root window.
OPENBOX_RC = """<?xml version="1.0" encoding="UTF-8"?>
<openbox_config xmlns="http://openbox.org/3.4/rc">
  <focus><focusNew>yes</focusNew><followMouse>no</followMouse></focus>
  <placement><policy>Smart</policy><center>yes</center></placement>
  <theme><name>Clearlooks</name><titleLayout>NLIMC</titleLayout><keepBorder>yes</keepBorder>
    <font place="ActiveWindow"><name>DejaVu Sans</name><size>9</size><weight>bold</weight></font>
    <font place="InactiveWindow"><name>DejaVu Sans</name><size>9</size><weight>bold</weight></font>
  </theme>
  <desktops><number>1</number></desktops>
  <keyboard><chainQuitKey>C-g</chainQuitKey>
    <keybind key="A-Tab"><action name="NextWindow"><dialog>icons</dialog></action></keybind>
  </keyboard>
  <mouse><dragThreshold>3</dragThreshold><doubleClickTime>400</doubleClickTime></mouse>
  <applications>
    <application type="normal"><maximized>yes</maximized><decor>yes</decor></application>
  </applications>
</openbox_config>
"""
