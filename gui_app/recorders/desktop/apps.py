"""The applications an episode runs, each started fresh in the episode's throwaway HOME.

:class:`Desk` is one episode's desktop: a new HOME (with the episode's :class:`~.style.Style` written into it),
the environment every program gets, and the programs started in it (killed at the end, process group by
process group). LibreOffice starts from an empty profile each time, with a registry file that sets what a
prepared machine would have set (no "what's new" infobar, no tip of the day, no recovery) and what varies between
episodes (the keep-format question on saving to Microsoft formats).

When the recorder runs as root (CI, containers) the applications run as ``nobody``: as root, editors paint a red
"you are using the root account" bar that no real run shows.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from gui_app.recorders.desktop.display import DesktopError, Display, Window, _terminate, die_with_parent, wait_for
from gui_app.recorders.desktop.style import Style

NOBODY = 65534

#: Window title patterns of each application's main window.
TITLES = {
    "calc": r"LibreOffice Calc$",
    "writer": r"LibreOffice Writer$",
    "mousepad": r"Mousepad$",
    "pcmanfm": r".",  # pcmanfm titles its window with the folder name
    "galculator": r"^galculator$",
    "chromium": r"Chromium$|^Rollscope form",
}

# LibreOffice settings applied to every episode's profile: no "what's new" infobar, no crash recovery or
# autosave (a fresh profile per episode has nothing to recover, and autosave would write files mid-run), no
# donation/get-involved infobars.
_LO_ITEMS = (
    ("/org.openoffice.Setup/Product", "ooSetupLastVersion", "string", "7.4"),
    ("/org.openoffice.Setup/Product", "LastTimeGetInvolvedShown", "long", "4102444800"),
    ("/org.openoffice.Setup/Product", "LastTimeDonateShown", "long", "4102444800"),
    ("/org.openoffice.Office.Common/Misc", "FirstRun", "boolean", "false"),
    ("/org.openoffice.Office.Recovery/AutoSave", "Enabled", "boolean", "false"),
    ("/org.openoffice.Office.Recovery/RecoveryInfo", "Enabled", "boolean", "false"),
    ("/org.openoffice.Office.Common/Misc", "CollectUsageInformation", "boolean", "false"),
)


def lo_registry(warn_format: bool) -> str:
    items = [*_LO_ITEMS,
             ("/org.openoffice.Office.Common/Misc", "ShowTipOfTheDay", "boolean", "false"),
             ("/org.openoffice.Office.Common/Save/Document", "WarnAlienFormat", "boolean", str(warn_format).lower())]
    body = "".join(f'<item oor:path="{p}"><prop oor:name="{n}" oor:op="fuse" oor:type="xs:{t}"><value>{v}</value>'
                   f"</prop></item>\n" for p, n, t, v in items)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<oor:items xmlns:oor="http://openoffice.org/2001/registry" '
            'xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
            f"{body}</oor:items>\n")


def _demote() -> list[str]:
    return (["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
            if os.geteuid() == 0 and shutil.which("setpriv") else [])


def _chown_tree(path: Path) -> None:
    if os.geteuid() != 0:
        return
    for root, dirs, files in os.walk(path):
        for n in [*dirs, *files]:
            with contextlib.suppress(OSError):
                os.lchown(os.path.join(root, n), NOBODY, NOBODY)
    with contextlib.suppress(OSError):
        os.lchown(path, NOBODY, NOBODY)


class Desk:
    """One episode's desktop on a :class:`Display`: fresh HOME, the episode's look, the programs it started.

    Args:
        display: the worker's X display (already started).
        style: the episode's look.
    """

    def __init__(self, display: Display, style: Style):
        self.display = display
        self.style = style
        # HOME is <tmp>/user: file dialogs and title bars show "user", as on a real desktop.
        self._root = Path(tempfile.mkdtemp(prefix="rollscope-desk-"))
        self._root.chmod(0o711)  # the apps' user must reach its HOME inside
        self.home = self._root / "user"
        self.home.mkdir()
        self.procs: list[subprocess.Popen] = []
        style.write_home(self.home)
        for d in ("tmp", "Documents", "Desktop", "Downloads"):
            (self.home / d).mkdir()
        self.env = {k: v for k, v in display.env.items()
                    if not k.startswith(("XDG_", "DBUS_", "SESSION_MANAGER", "GNOME_", "KDE_"))}
        self.env.update(style.env())
        self.env.update({
            "HOME": str(self.home), "TMPDIR": str(self.home / "tmp"), "USER": "user", "LOGNAME": "user",
            "XDG_CONFIG_HOME": str(self.home / ".config"), "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_DATA_HOME": str(self.home / ".local/share"), "XDG_RUNTIME_DIR": str(self.home / "tmp"),
            # No session bus here: keep GLib from trying to reach one (dconf, portals), which only adds delays.
            "GSETTINGS_BACKEND": "memory", "GTK_USE_PORTAL": "0", "SAL_USE_VCLPLUGIN": "gtk3",
            "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
        })

    def prepare(self, lo: bool = False, warn_format: bool = True) -> None:
        """Finish the HOME (LibreOffice profile when needed), hand it to the apps' user, apply the look."""
        if lo:
            dest = self.home / ".config" / "libreoffice" / "4" / "user"
            dest.mkdir(parents=True, exist_ok=True)
            (dest / "registrymodifications.xcu").write_text(lo_registry(warn_format), encoding="utf-8")
        self.display.start_wm(self.env)
        self.display.run(["xrdb", "-merge", str(self.home / ".Xresources")], env=self.env, check=False)
        self.display.run(["xsetroot", "-solid", self.style.desktop_colour], env=self.env, check=False)
        _chown_tree(self.home)  # last: the programs above (root) may have made ~/.cache

    def own(self, path: Path) -> None:
        """Give files the task created to the apps' user (they must be able to save over them)."""
        _chown_tree(path) if path.is_dir() else (os.geteuid() == 0 and os.lchown(path, NOBODY, NOBODY))

    def launch(self, argv: list[str], title_re: str, timeout: float = 90.0) -> Window:
        """Start a program and return its main window once it is mapped and the screen has settled."""
        log = open(self.home / "tmp" / f"{Path(argv[0]).name}.log", "ab")  # noqa: SIM115
        try:
            p = subprocess.Popen([*_demote(), *argv], env=self.env, cwd=self.home, stdout=log, stderr=log,
                                 stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=die_with_parent)
        finally:
            log.close()
        self.procs.append(p)

        def mapped() -> Window | None:
            if p.poll() is not None and p.returncode != 0:
                raise DesktopError(f"{argv[0]} exited with code {p.returncode} before showing a window "
                                   f"(log: {self.home / 'tmp'})")
            for w in self.display.windows():
                if re.search(title_re, w.name):
                    return w
            return None

        try:
            win = wait_for(f"{Path(argv[0]).name}'s window /{title_re}/", mapped, timeout, interval=0.1)
        except DesktopError as exc:
            shown = [w.name for w in self.display.windows()]
            raise DesktopError(f"{exc} (windows on screen: {shown}; log: {self.home / 'tmp'})") from None
        # Keyboard focus on the new window before anything is typed: the window manager gives it, but late on a
        # loaded machine (a first keystroke into galculator was lost that way). Not fatal: a window that never
        # reports focus still gets the episode (the checker will say if input went astray).
        self.display.xdotool("windowactivate", "--sync", str(win.wid), check=False, timeout=10)
        with contextlib.suppress(DesktopError):
            wait_for(f"keyboard focus on {Path(argv[0]).name}",
                     lambda: self.display.xdotool("getwindowfocus", check=False).strip() == str(win.wid), 5.0, 0.1)
        self.display.wait_still(timeout=8.0, quiet_ms=400)
        return win

    def close(self) -> None:
        """End every program of the episode and delete the HOME (outputs were read before)."""
        for p in reversed(self.procs):
            with contextlib.suppress(Exception):
                _terminate(p, timeout=5.0)
        self.procs.clear()
        shutil.rmtree(self._root, ignore_errors=True)
