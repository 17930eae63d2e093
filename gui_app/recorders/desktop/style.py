"""The look of one episode: cursor theme and size, GTK theme, desktop colour; drawn at random per episode.

A reward model trained on one look learns the look. Real runs differ in pointer sprites above all (the one thing
on screen that moves with the agent), so the pointer theme and size vary per episode, taken from the X cursor
themes Debian installs (``dmz-cursor-theme``, ``xcursor-themes``, ``breeze-cursor-theme``,
``chameleon-cursor-theme``, ``adwaita-icon-theme``). The GTK theme varies among themes with the same widget
metrics (Adwaita and its dark and high-contrast variants), so that the scripted agent's knowledge of where things
are holds whatever the colours.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ICON_DIRS = (Path("/usr/share/icons"), Path.home() / ".icons")

#: Cursor themes by preference; those not installed are skipped at draw time.
CURSOR_THEMES = ("Adwaita", "DMZ-White", "DMZ-Black", "breeze_cursors", "Breeze_Snow", "redglass", "whiteglass",
                 "handhelds", "Chameleon-Pearl-Regular", "Chameleon-Anthracite-Regular",
                 "Chameleon-SkyBlue-Regular", "Chameleon-White-Small")
CURSOR_SIZES = (16, 24, 24, 32, 48)
#: GTK themes that share Adwaita's metrics (gnome-themes-extra ships the dark and high-contrast variants).
GTK_THEMES = ("Adwaita", "Adwaita", "Adwaita-dark", "HighContrast")
DESKTOP_COLOURS = ("#2e3440", "#3b6ea5", "#505a64", "#1d5c4d", "#6b4c7a", "#303030")


def installed_cursor_themes() -> list[str]:
    """Cursor themes present on this machine (a theme is a directory with a ``cursors/`` folder)."""
    found = []
    for name in CURSOR_THEMES:
        if any((d / name / "cursors").is_dir() for d in ICON_DIRS):
            found.append(name)
    return found


def installed_gtk_themes() -> list[str]:
    # Adwaita and HighContrast are built into GTK 3; the others must be installed under /usr/share/themes.
    out = []
    for name in GTK_THEMES:
        if name in ("Adwaita", "Adwaita-dark", "HighContrast") or Path("/usr/share/themes", name).is_dir():
            out.append(name)
    return out


@dataclass(frozen=True)
class Style:
    """How the desktop looks in one episode (recorded in the episode's metadata)."""

    cursor_theme: str = "Adwaita"
    cursor_size: int = 24
    gtk_theme: str = "Adwaita"
    desktop_colour: str = "#3b6ea5"

    @classmethod
    def draw(cls, rng: random.Random) -> "Style":
        cursors = installed_cursor_themes() or ["Adwaita"]
        themes = installed_gtk_themes() or ["Adwaita"]
        return cls(cursor_theme=rng.choice(cursors), cursor_size=rng.choice(CURSOR_SIZES),
                   gtk_theme=rng.choice(themes), desktop_colour=rng.choice(DESKTOP_COLOURS))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def env(self) -> dict[str, str]:
        """Environment variables every program of the episode starts with (libXcursor reads the first two)."""
        return {"XCURSOR_THEME": self.cursor_theme, "XCURSOR_SIZE": str(self.cursor_size),
                "GTK_THEME": self.gtk_theme}

    def xresources(self) -> str:
        # Programs that ignore the environment (or start through a launcher that drops it) read X resources.
        return f"Xcursor.theme: {self.cursor_theme}\nXcursor.size: {self.cursor_size}\n"

    def write_home(self, home: Path) -> None:
        """GTK settings in the episode's HOME: theme, cursor, no caret blinking (a still screen means the
        application is done reacting), no animations (they would make every frame differ)."""
        for version in ("gtk-3.0", "gtk-4.0"):
            d = home / ".config" / version
            d.mkdir(parents=True, exist_ok=True)
            (d / "settings.ini").write_text(
                "[Settings]\n"
                f"gtk-theme-name={self.gtk_theme}\n"
                f"gtk-application-prefer-dark-theme={'true' if 'dark' in self.gtk_theme else 'false'}\n"
                f"gtk-cursor-theme-name={self.cursor_theme}\n"
                f"gtk-cursor-theme-size={self.cursor_size}\n"
                "gtk-cursor-blink=false\n"
                "gtk-enable-animations=false\n"
                "gtk-font-name=DejaVu Sans 10\n"
                "gtk-recent-files-enabled=false\n")
        (home / ".gtkrc-2.0").write_text(f'gtk-theme-name="{self.gtk_theme}"\n'
                                          f'gtk-cursor-theme-name="{self.cursor_theme}"\n'
                                          f"gtk-cursor-theme-size={self.cursor_size}\n")
        (home / ".Xresources").write_text(self.xresources())
