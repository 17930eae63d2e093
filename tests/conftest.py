"""Test set-up: headless Qt, isolated settings, shared fixtures."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before Qt loads

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path_factory, monkeypatch):
    """Settings, recent folders and caches go to a temp dir, never to the user's home."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("ROLLSCOPE_CONFIG_DIR", str(home / "config"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg"))
    monkeypatch.setenv("ROLLSCOPE_CACHE_DIR", str(home / "cache"))
    monkeypatch.delenv("ROLLSCOPE_OSWORLD_TASKS_ROOT", raising=False)
