"""Checkers: read the real end state the way OSWorld's evaluators do, and say whether the task is done.

Each returns a :class:`Verdict`: the files parsed with the libraries users open them with (openpyxl for .xlsx,
python-docx for .docx, odfpy for .odt), the file system, the X clipboard as another client reads it, the
browser's state through its DevTools endpoint. Nothing here looks at what the agent did or believes.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Verdict:
    """The checker's answer: success, and what it read (stored in the episode's metadata, never on screen)."""

    success: bool
    reason: str
    observed: dict[str, Any] = field(default_factory=dict)


def _num(v: Any) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def xlsx_cells(path: Path, cells: list[str], data_only: bool = True) -> dict[str, Any]:
    """Values (or, with ``data_only=False``, formulas) of ``cells`` in the first sheet of an .xlsx file."""
    import openpyxl

    wb = openpyxl.load_workbook(path, data_only=data_only)
    try:
        ws = wb.worksheets[0]
        return {c: ws[c].value for c in cells}
    finally:
        wb.close()


def xlsx_bold(path: Path, cells: list[str]) -> dict[str, bool]:
    import openpyxl

    wb = openpyxl.load_workbook(path)
    try:
        ws = wb.worksheets[0]
        return {c: bool(ws[c].font is not None and ws[c].font.b) for c in cells}
    finally:
        wb.close()


def docx_paragraphs(path: Path) -> list[str]:
    import docx

    return [p.text for p in docx.Document(str(path)).paragraphs]


def docx_bold_words(path: Path) -> list[str]:
    """Words of the document that are set in bold (a run's own bold, as python-docx reads it)."""
    import docx

    words = []
    for p in docx.Document(str(path)).paragraphs:
        for run in p.runs:
            if run.bold:
                words += run.text.split()
    return words


def odt_text(path: Path) -> str:
    """All paragraph text of an OpenDocument text file (odfpy)."""
    from odf import teletype, text
    from odf.opendocument import load

    doc = load(str(path))
    return "\n".join(teletype.extractText(p) for p in doc.getElementsByType(text.P))


def devtools_urls(user_data_dir: Path, timeout: float = 5.0) -> list[str]:
    """URLs of the pages open in a Chromium started with ``--remote-debugging-port=0`` (its DevToolsActivePort
    file names the port), read from the DevTools HTTP endpoint as OSWorld's Chrome evaluators do."""
    port_file = user_data_dir / "DevToolsActivePort"
    port = int(port_file.read_text().split()[0])
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=timeout) as resp:  # noqa: S310
        pages = json.loads(resp.read().decode())
    return [p.get("url", "") for p in pages if p.get("type") == "page"]


def query_of(url: str) -> dict[str, str]:
    q = urllib.parse.urlparse(url).query
    return {k: v[-1] for k, v in urllib.parse.parse_qs(q, keep_blank_values=True).items()}


def same_number(a: Any, b: Any, tol: float = 1e-6) -> bool:
    x, y = _num(a), _num(b)
    return x is not None and y is not None and abs(x - y) <= tol * max(1.0, abs(y))
