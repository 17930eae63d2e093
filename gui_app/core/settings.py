"""Typed, versioned user settings: one frozen dataclass, stored as JSON, overridable from the environment.

The file is ``$ROLLSCOPE_CONFIG_DIR/settings.json`` (default ``$XDG_CONFIG_HOME/rollscope``, else
``~/.config/rollscope``). It carries a ``schema_version``; :data:`MIGRATIONS` holds one function per version step,
so an old file is brought forward field by field instead of being thrown away (napari's rule: renaming or
re-typing a field is a version bump with a migration; changing a default is not).

Any field can be overridden for one run with ``ROLLSCOPE_<FIELD>`` (``ROLLSCOPE_PLAYBACK_SPEED=2``,
``ROLLSCOPE_ANNOTATOR=alice``). An overridden field is shown in the app but never written back, so a one-off
override does not silently become the saved value.

Loading never raises: a missing file gives the defaults, a corrupted one is set aside as ``settings.json.corrupt``
(nothing the user had is deleted) and gives the defaults, a field of the wrong type falls back to its default;
each case is reported in :attr:`SettingsStore.warnings` for the GUI to show. Saving is atomic (temp file + rename).
Window geometry is not here: it is Qt's business (QSettings, in the same folder).
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, get_args, get_origin, get_type_hints

SCHEMA_VERSION = 1
ENV_PREFIX = "ROLLSCOPE_"
FILENAME = "settings.json"
MAX_RECENT = 10

# MIGRATIONS[n] brings a settings dict from version n to n + 1 (and must set nothing else). Append only.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


@dataclass(frozen=True)
class Settings:
    """Everything the app remembers between runs (window geometry aside).

    Attributes:
        last_folder: the folder opened last (reopened at start when no path is given).
        recent_folders: most recent first, at most :data:`MAX_RECENT`.
        playback_speed: speed factor the player starts at.
        overlay: whether the token-pruning overlay is shown over the video.
        annotator: the name written with every label.
        label_dock: whether the label panel is shown.
        prefetch_next: load the next library item in the background while the current one is viewed.
        reopen_last: reopen ``last_folder`` when the app starts without a path.
        model: the active reward model: the weights folder ``rollscope score``, ``eval`` and the app use when none
            is named (None: the shipped weights). ``rollscope train --from-labels --activate`` sets it when the
            fine-tuned model is not worse than its base; ``rollscope model use|reset`` by hand.
        label_store: where labels go: empty for each library's own file (``.rollscope/labels.sqlite``), or a team's
            server, ``postgresql://USER@HOST:PORT/DB``, shared by every machine that labels the same media.
        export_folder: the folder File → Export wrote to last (the next export starts there; empty: the user's
            documents folder, never the library itself).
        judge: the judge the app scores with (Model → Judge settings…; ``rollscope judges`` lists them): empty for
            the built-in model (``rollscope``, with the active ``model``).
        judge_options: per judge, the options set for it in the app (``{"openai-compatible": {"endpoint": ...}}``),
            only those that differ from the judge's defaults, so a changed default reaches them. Never an API key:
            a judge reads its key from the environment (the variable its ``api-key-env`` names) or the keyring.
    """

    last_folder: str | None = None
    recent_folders: tuple[str, ...] = ()
    playback_speed: float = 1.0
    overlay: bool = False
    annotator: str = ""
    label_dock: bool = True
    prefetch_next: bool = True
    reopen_last: bool = False
    model: str | None = None
    label_store: str = ""
    export_folder: str = ""
    judge: str = ""
    judge_options: dict[str, dict[str, str]] = field(default_factory=dict)

    def with_recent(self, folder: str) -> Settings:
        """A copy with ``folder`` first in the recent list and as the last folder."""
        folder = str(folder)
        recent = (folder, *[f for f in self.recent_folders if f != folder])[:MAX_RECENT]
        return replace(self, last_folder=folder, recent_folders=recent)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["recent_folders"] = list(self.recent_folders)
        return d


_HINTS = get_type_hints(Settings)


def user_dir(override: str, xdg: str, fallback: str) -> Path:
    """``$override``, else ``$xdg/rollscope``, else ``~/<fallback>/rollscope`` (the XDG base-directory rule)."""
    explicit = os.environ.get(override)
    if explicit:
        return Path(explicit)
    base = os.environ.get(xdg) or str(Path.home() / fallback)
    return Path(base) / "rollscope"


def config_dir() -> Path:
    """Where settings (and the Qt window state) live: ``$ROLLSCOPE_CONFIG_DIR`` or the XDG config folder."""
    return user_dir("ROLLSCOPE_CONFIG_DIR", "XDG_CONFIG_HOME", ".config")


def _coerce(name: str, value: Any) -> Any:
    """``value`` as the type of field ``name``; raises ValueError/TypeError when it cannot be."""
    hint = _HINTS[name]
    args = [a for a in get_args(hint) if a is not type(None)]
    if value is None:
        if type(None) in get_args(hint):
            return None
        raise TypeError("null is not allowed")
    base = args[0] if get_origin(hint) not in (tuple, dict) and args else hint
    if get_origin(hint) is dict:  # judge_options: names to {option: value}, every one a string
        if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, dict) and all(isinstance(a, str) and isinstance(b, str)
                                                                   for a, b in v.items()) for k, v in value.items()):
            raise TypeError("expected an object of names, each an object of strings")
        return {k: dict(v) for k, v in value.items()}
    if get_origin(hint) is tuple:
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise TypeError("expected a list of strings")
        return tuple(value)
    if base is bool:
        if isinstance(value, bool):
            return value
        raise TypeError("expected true or false")
    if base is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError("expected a number")
        return float(value)
    if base is str:
        if not isinstance(value, str):
            raise TypeError("expected a string")
        return value
    raise TypeError(f"unsupported field type {hint}")


def _from_env_text(name: str, text: str) -> Any:
    """Parse an environment string for field ``name``: JSON first (``true``, ``2``, ``["a"]``), else the raw text."""
    hint = _HINTS[name]
    if get_origin(hint) is tuple and not text.lstrip().startswith("["):
        return tuple(p for p in text.split(os.pathsep) if p)
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = text
    if value is None and str in get_args(hint) + (hint,):
        value = text  # the literal word "null" as a name
    if isinstance(value, (int, float)) and not isinstance(value, bool) and (hint is str or str in get_args(hint)):
        value = text
    return _coerce(name, value)


class SettingsStore:
    """Loads and saves :class:`Settings` in a config folder.

    Args:
        directory: the config folder (default :func:`config_dir`).
        environ: the environment to read ``ROLLSCOPE_*`` overrides from (default ``os.environ``).

    Attributes:
        warnings: what went wrong while loading or saving, in words, for the GUI to show. Never raised.
        overridden: names of fields that the environment overrides for this run.
    """

    def __init__(self, directory: str | Path | None = None, environ: dict[str, str] | None = None):
        self.directory = Path(directory) if directory is not None else config_dir()
        self.environ = dict(os.environ if environ is None else environ)
        self.warnings: list[str] = []
        self.overridden: set[str] = set()
        self._stored: dict[str, Any] = {}  # field values as read from the file (env overrides excluded)
        self._read_only = False

    @property
    def path(self) -> Path:
        return self.directory / FILENAME

    def load(self) -> Settings:
        """Read the file, migrate it, apply environment overrides. Never raises."""
        self.warnings, self.overridden, self._read_only = [], set(), False
        stored = self._read_file()
        values: dict[str, Any] = {}
        for f in fields(Settings):
            if f.name not in stored:
                continue
            try:
                values[f.name] = _coerce(f.name, stored[f.name])
            except (TypeError, ValueError) as exc:
                self.warnings.append(f"{self.path}: field '{f.name}': {exc}; using the default")
        self._stored = dict(values)
        for f in fields(Settings):
            env_name = ENV_PREFIX + f.name.upper()
            if env_name in self.environ:
                try:
                    values[f.name] = _from_env_text(f.name, self.environ[env_name])
                    self.overridden.add(f.name)
                except (TypeError, ValueError) as exc:
                    self.warnings.append(f"environment variable {env_name}: {exc}; ignored")
        return Settings(**values)

    def _read_file(self) -> dict[str, Any]:
        path = self.path
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as exc:
            self.warnings.append(f"{path}: cannot read the settings ({exc}); using the defaults")
            self._read_only = True  # an unreadable file may still hold something; do not overwrite it blindly
            return {}
        try:
            doc = json.loads(text)
            if not isinstance(doc, dict):
                raise ValueError("expected a JSON object")
            version = doc.get("schema_version", 0)
            if not isinstance(version, int) or isinstance(version, bool) or version < 0:
                raise ValueError(f"field 'schema_version': not a version number: {version!r}")
        except (json.JSONDecodeError, ValueError) as exc:
            self._set_aside(path, str(exc))
            return {}
        if version > SCHEMA_VERSION:
            # Written by a newer Rollscope: use what we understand, but never overwrite what we do not.
            self._read_only = True
            self.warnings.append(f"{path}: settings schema version {version} is newer than this Rollscope's "
                                 f"({SCHEMA_VERSION}); using what it understands and not saving changes")
            return doc
        for v in range(version, SCHEMA_VERSION):
            step = MIGRATIONS.get(v)
            if step is None:
                self.warnings.append(f"{path}: no migration from settings version {v}; using the defaults")
                return {}
            doc = step(dict(doc))
            doc["schema_version"] = v + 1
        return doc

    def _set_aside(self, path: Path, reason: str) -> None:
        backup = path.with_name(FILENAME + ".corrupt")
        try:
            os.replace(path, backup)
            kept = f"; the file was kept as {backup}"
        except OSError:
            kept = ""
            self._read_only = True
        self.warnings.append(f"{path}: corrupted settings ({reason}); using the defaults{kept}")

    def save(self, settings: Settings) -> bool:
        """Write ``settings`` atomically (env-overridden fields keep their stored value). Never raises.

        Returns:
            True when written; False (with a warning) when the folder is not writable or the file is newer.
        """
        if self._read_only:
            return False
        doc = settings.to_dict()
        for name in self.overridden:
            if name in self._stored:
                value = self._stored[name]
                doc[name] = list(value) if isinstance(value, tuple) else value
            else:
                doc.pop(name, None)
        doc = {"schema_version": SCHEMA_VERSION, **doc}
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".settings.", suffix=".json", dir=self.directory)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump(doc, fh, indent=1, ensure_ascii=False)
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            self.warnings.append(f"{self.path}: cannot save the settings: {exc.strerror or exc}")
            return False
        self._stored = {k: v for k, v in doc.items() if k != "schema_version"}
        return True


def active_model(directory: str | Path | None = None) -> str | None:
    """The active reward model's weights folder (the ``model`` setting, ``ROLLSCOPE_MODEL`` overriding it), or None
    for the shipped weights."""
    return SettingsStore(directory).load().model or None


def set_active_model(path: str | Path | None, directory: str | Path | None = None) -> list[str]:
    """Make ``path`` (None: the shipped weights) the active reward model; returns the warnings (empty when saved)."""
    store = SettingsStore(directory)
    current = store.load()
    store.save(replace(current, model=None if path is None else str(Path(path).resolve())))
    return list(store.warnings)



