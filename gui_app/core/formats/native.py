"""The native format as an importer (see :mod:`gui_app.core.native`)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from gui_app.core import native
from gui_app.core.safety import open_regular
from gui_app.core.trajectory import Trajectory

# The version of another format's ``trajectory.json`` (ATIF's "ATIF-v1.6"): a string that does not start with a digit.
_OTHER_VERSION = re.compile(rb'"schema_version"\s*:\s*"[^0-9"]')


class NativeImporter:
    name = "native"

    def sniff(self, path: Path) -> float:
        file = path / native.FILENAME if path.is_dir() else path
        if file.name != native.FILENAME or not os.path.lexists(file):
            return 0.0
        try:
            with open_regular(file) as fh:
                head = fh.read(4096)
        except OSError:
            # A trajectory.json that is there but cannot be read (no permission, a folder, a FIFO, a symlink loop)
            # is a damaged run of ours: claimed, so loading names the file and why, rather than the folder being
            # taken for another format's run (an empty plain video, its catalog row overwritten).
            return 0.5
        if re.search(rb'"schema_version"\s*:\s*\d', head):
            return 1.0
        # ATIF files are often named trajectory.json too; theirs is a string ("ATIF-v1.6"), ours the integer 1.
        # Anything else (cut short, even right after "schema_version":, not JSON, not an object) is ours to report.
        return 0.0 if _OTHER_VERSION.search(head) else 0.5

    def load_all(self, path: Path, align: bool = True) -> list[Trajectory]:  # noqa: ARG002 (no recording to align)
        return [native.load(path)]


IMPORTER = NativeImporter()
