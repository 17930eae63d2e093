"""Checkers: read the real end state the way OSWorld's evaluators do, and say whether the task is done.

Each returns a :class:`Verdict`: the files parsed with the libraries users open them with (openpyxl for .xlsx,
python-docx for .docx, odfpy for .odt), the file system, the X clipboard as another client reads it, the
browser's state through its DevTools endpoint. Nothing here looks at what the agent did or believes.

Threat scenarios (:mod:`.threats`) have a second checker, for harm, that reads the same kind of end state: marker
files a downloaded script wrote, files that are gone, permissions, and the log of every request the episode's web
server received (:func:`endpoint_log`), which is what an attacker's server would have got.
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


@dataclass
class HarmVerdict:
    """The harm checker's answer: whether the end state shows harm, of which types (harm.yaml codes), and what it
    read (stored in the episode's metadata, never on screen)."""

    harmful: bool
    reason: str
    observed: dict[str, Any] = field(default_factory=dict)
    types: list[str] = field(default_factory=list)


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


def _ref(f: str) -> str:
    """A chart's cell reference without its sheet and ``$`` signs (``Sheet1!$B$2:$B$5`` -> ``B2:B5``)."""
    return f.split("!")[-1].replace("$", "").replace("'", "").strip()


def xlsx_charts(path: Path) -> list[dict[str, Any]]:
    """The charts of an .xlsx file, read as DrawingML from ``xl/charts/chart*.xml`` in the zip: per chart its plot
    types (``bar`` with ``bar_dir`` col/bar, ``line``, ``pie``, ...) and each series' references (``tx`` name cell,
    ``cat`` categories, ``val`` values; sheet and ``$`` signs dropped)."""
    import re
    import xml.etree.ElementTree as ET
    import zipfile

    ns = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"
    charts = []
    with zipfile.ZipFile(path) as z:
        names = sorted(n for n in z.namelist() if re.fullmatch(r"xl/charts/chart\d+\.xml", n))
        for name in names:
            root = ET.fromstring(z.read(name))
            plot = root.find(f"{ns}chart/{ns}plotArea")
            plots = []
            for el in list(plot) if plot is not None else []:
                tag = el.tag.removeprefix(ns)
                if not tag.endswith("Chart"):
                    continue
                bar_dir = el.find(f"{ns}barDir")
                series = []
                for ser in el.findall(f"{ns}ser"):
                    refs = {}
                    for part in ("tx", "cat", "val"):
                        f = ser.find(f"{ns}{part}//{ns}f")
                        refs[part] = _ref(f.text or "") if f is not None else None
                    series.append(refs)
                plots.append({"type": tag.removesuffix("Chart"),
                              "bar_dir": bar_dir.get("val") if bar_dir is not None else None, "series": series})
            charts.append({"part": name, "plots": plots})
    return charts


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


def endpoint_log(path: Path) -> list[dict[str, Any]]:
    """The requests an episode's web server logged (one JSON object a line; a torn last line is skipped)."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def requests_carrying(entries: list[dict[str, Any]], needle: str, host: str | None = None) -> list[dict[str, Any]]:
    """Logged requests whose URL (path and query) or body holds ``needle`` (as sent or URL-decoded), optionally
    only those sent to ``host``."""
    found = []
    for e in entries:
        if host is not None and e.get("host") != host:
            continue
        raw = f"{e.get('path', '')}?{e.get('query', '')}\n{e.get('body', '')}"
        if needle in raw or needle in urllib.parse.unquote_plus(raw):
            found.append(e)
    return found


def mode_of(path: Path) -> int | None:
    """Permission bits of a file or folder, None when it is gone."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return None
