"""The desktop recorder: plans, checkers on real files, both output layouts, and (slow) one real episode."""

from __future__ import annotations

import json
import random
import shutil
import time
import xml.etree.ElementTree as ET
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from gui_app.core.trajectory import formats
from gui_app.core.trajectory.formats import native
from gui_app.recorders.desktop import checkers as chk
from gui_app.recorders.desktop.agent import Recorded
from gui_app.recorders.desktop.apps import lo_registry
from gui_app.recorders.desktop.recorder import AGENT_NAME, episode_dir, osworld_root, plan_episode
from gui_app.recorders.desktop.style import Style, installed_cursor_themes
from gui_app.recorders.desktop.tasks import MISTAKE_TYPES, TASKS, typo
from gui_app.recorders.desktop.writer import osworld_paths, write_native, write_osworld


def test_at_least_fifteen_task_types_over_four_apps():
    assert len(TASKS) >= 15
    apps = {a for t in TASKS.values() for a in t.apps}
    assert len(apps) >= 4, apps
    for name, cls in TASKS.items():
        assert cls.MISTAKES and set(cls.MISTAKES) <= set(MISTAKE_TYPES), name
        t = cls(random.Random(3), None)
        assert t.instruction and t.params and t.intended_success


def test_parameters_are_randomised_per_seed():
    for cls in TASKS.values():
        a, b = (cls(random.Random(s), None) for s in (1, 2))
        c = cls(random.Random(1), None)
        assert a.params == c.params and a.instruction == c.instruction
        assert (a.params, a.instruction) != (b.params, b.instruction) or len({
            json.dumps(cls(random.Random(s), None).params, sort_keys=True) for s in range(10)}) > 1


def test_mistake_plan_follows_seed_and_fail_rate():
    assert plan_episode("files_rename", 5, 0.5)[0] == plan_episode("files_rename", 5, 0.5)[0]
    assert all(plan_episode("files_rename", s, 0.0)[0] is None for s in range(30))
    made = [plan_episode("calc_formula", s, 1.0)[0] for s in range(40)]
    assert all(m in TASKS["calc_formula"].MISTAKES for m in made) and len(set(made)) > 1
    half = sum(plan_episode("editor_append_line", s, 0.5)[0] is not None for s in range(200))
    assert 70 < half < 130


def test_typo_never_returns_the_text():
    rng = random.Random(0)
    for word in ("a1", "kettle", "report_final", "hana.jansen", "979"):
        assert all(typo(word, rng) != word for _ in range(50))


def test_style_draws_installed_themes_and_writes_gtk_settings(tmp_path):
    rng = random.Random(4)
    styles = {Style.draw(rng) for _ in range(30)}
    themes = installed_cursor_themes()
    assert all(s.cursor_theme in (themes or ["Adwaita"]) for s in styles)
    assert len({(s.cursor_theme, s.cursor_size) for s in styles}) > 3
    s = next(iter(styles))
    s.write_home(tmp_path)
    ini = (tmp_path / ".config" / "gtk-3.0" / "settings.ini").read_text()
    assert f"gtk-cursor-theme-name={s.cursor_theme}" in ini and "gtk-cursor-blink=false" in ini
    assert s.env()["XCURSOR_SIZE"] == str(s.cursor_size)


def test_libreoffice_registry_is_well_formed():
    root = ET.fromstring(lo_registry(warn_format=False))
    props = {(i.get("{http://openoffice.org/2001/registry}path"), p.get("{http://openoffice.org/2001/registry}name")):
             p.find("value").text for i in root for p in i}
    assert props[("/org.openoffice.Office.Common/Save/Document", "WarnAlienFormat")] == "false"
    assert props[("/org.openoffice.Office.Common/Misc", "ShowTipOfTheDay")] == "false"


# -- checkers on files written by the libraries users have -------------------------------------------------------
def test_checkers_read_xlsx_docx_odt(tmp_path):
    import docx
    import openpyxl
    from odf import text as odftext
    from odf.opendocument import OpenDocumentText
    from openpyxl.styles import Font

    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"], ws["B1"], ws["B2"] = "Name", 12, "=B1*2"
    ws["A1"].font = Font(bold=True)
    wb.save(tmp_path / "a.xlsx")
    assert chk.xlsx_cells(tmp_path / "a.xlsx", ["B1"]) == {"B1": 12}
    assert chk.xlsx_cells(tmp_path / "a.xlsx", ["B2"], data_only=False) == {"B2": "=B1*2"}
    assert chk.xlsx_bold(tmp_path / "a.xlsx", ["A1", "B1"]) == {"A1": True, "B1": False}

    d = docx.Document()
    p = d.add_paragraph("The ")
    p.add_run("amber").bold = True
    p.add_run(" report.")
    d.save(str(tmp_path / "a.docx"))
    assert chk.docx_bold_words(tmp_path / "a.docx") == ["amber"]
    assert chk.docx_paragraphs(tmp_path / "a.docx") == ["The amber report."]

    o = OpenDocumentText()
    o.text.addElement(odftext.P(text="First line."))
    o.text.addElement(odftext.P(text="Second line."))
    o.save(str(tmp_path / "a.odt"))
    assert chk.odt_text(tmp_path / "a.odt") == "First line.\nSecond line."
    assert chk.query_of("file:///x/submitted.html?name=Ana+Ito&news=on") == {"name": "Ana Ito", "news": "on"}
    assert chk.same_number("27904", 27904) and not chk.same_number("", 1) and not chk.same_number("12", 13)


# -- both layouts, from a real H.264 file and real PNG screenshots -----------------------------------------------
def _mp4(path: Path, seconds: float, fps: int = 5) -> None:
    with av.open(str(path), mode="w") as c:
        st = c.add_stream("libx264", rate=fps)
        st.width, st.height, st.pix_fmt, st.time_base = 320, 180, "yuv420p", Fraction(1, fps)
        for i in range(int(seconds * fps)):
            f = av.VideoFrame.from_ndarray(np.full((180, 320, 3), (i * 7) % 255, np.uint8), format="rgb24")
            f.pts = i
            for pk in st.encode(f):
                c.mux(pk)
        for pk in st.encode():
            c.mux(pk)


def _steps(t0: float) -> list[Recorded]:
    shot = np.zeros((180, 320, 3), np.uint8)
    acts = [("pyautogui.click(x=40, y=50)", "click", 40, 50, None), ("pyautogui.typewrite('abc')", "type", None, None,
            "abc"), ("pyautogui.hotkey('ctrl', 's')", "hotkey", None, None, "ctrl+s"), ("DONE", "done", None, None,
                                                                                       None)]
    out = []
    for i, (code, kind, x, y, text) in enumerate(acts):
        s = shot.copy()
        s[i * 10:(i + 1) * 10] = 200
        out.append(Recorded(i, code, kind, x, y, text, t0 + 0.5 + 1.1 * i, t0 + 0.9 + 1.1 * i, s, target=f"t{i}"))
    return out


def test_written_layouts_import_with_instruction_and_video_timing(tmp_path):
    rec = tmp_path / "recording.mp4"
    _mp4(rec, 6.0)
    t0 = time.time() - 100
    steps = _steps(t0)
    out = tmp_path / "out"
    eid, domain = "editor_append_line-s3", "mousepad"
    config = {"id": eid, "instruction": "Add a line.", "snapshot": domain, "related_apps": ["mousepad"]}
    osw = write_osworld(osworld_root(out), domain, eid, AGENT_NAME, config, steps, rec, 0.0)
    nat = write_native(episode_dir(out, "editor_append_line", 3), "desktop-" + eid, "Add a line.", steps,
                       steps[0].screenshot, rec, t0, False, 0.0, "mousepad", AGENT_NAME,
                       {"task": "editor_append_line", "first_error_step": 2}, osw)
    res_dir, cfg = osworld_paths(osworld_root(out), domain, eid, AGENT_NAME)
    assert res_dir == osw and cfg.is_file()
    lines = [json.loads(x) for x in (osw / "traj.jsonl").read_text().splitlines()]
    assert [x["step_num"] for x in lines] == [1, 2, 3, 4] and lines[-1]["done"] is True
    assert all(len(x["action_timestamp"]) == 15 and x["action_timestamp"][8] == "@" for x in lines)
    assert (osw / "result.txt").read_text() == "0.0\n"

    assert formats.detect(nat).name == "native" and formats.detect(osw).name == "osworld"
    n = formats.load(nat)
    assert not n.warnings and n.outcome.success is False and n.video.frames == 30 and n.video.fps == 5.0
    starts = [s.t_start for s in n.steps]
    assert starts == sorted(starts) and starts[0] == pytest.approx(0.5, abs=0.01)
    assert all(0 <= s.t_start <= s.t_end <= 6.0 for s in n.steps)
    assert n.steps[0].align_method == "stored" and n.steps[0].x == 40.0 and n.steps[-1].action_type == "done"
    assert (nat / "frames" / "step_000.png").stat().st_ino == next(osw.glob("step_1_*.png")).stat().st_ino

    o = formats.load(osw)
    assert o.instruction == "Add a line." and o.outcome.success is False and o.outcome.score == 0.0
    assert o.metadata["domain"] == domain and o.agent == AGENT_NAME and o.app == "mousepad"
    assert [s.action_type for s in o.steps] == ["click", "type", "hotkey", "done"]


# -- a real episode (slow) ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_real_episode_label_is_the_checkers_and_both_layouts_import(tmp_path):
    from gui_app.recorders.desktop.recorder import DesktopRecorder

    out = tmp_path / "out"
    with DesktopRecorder(think=(0.1, 0.4)) as rec:
        clean = rec.record("editor_append_line", 11, 0, out, mistake=None, rng=random.Random(11))
        slip = rec.record("editor_append_line", 12, 1, out, mistake="forgot_save", rng=random.Random(12))
    assert clean.success is True and clean.mistake_type is None and clean.first_error_step is None
    assert slip.success is False and slip.mistake_type == "forgot_save"
    for r in (clean, slip):
        t = native.load(r.path)
        md = t.metadata
        assert not t.warnings and t.outcome.source == "env"
        assert t.outcome.success == md["checker"]["success"] == r.success  # the checker's verdict is the label
        assert md["intended_success"] == r.success
        assert 5 <= t.n_steps <= 40 and t.steps[-1].action == "DONE"
        assert md["style"]["cursor_theme"] and md["screen"] == [1280, 720]
        assert t.video.width == 1280 and t.video.height == 720 and t.video.fps == 5.0
        assert t.duration >= t.steps[-1].t_start
        osw = out / md["osworld_result"]
        o = formats.load(osw)
        assert formats.detect(osw).name == "osworld" and o.instruction == t.instruction
        assert o.outcome.success == r.success and o.n_steps == t.n_steps
        assert float((osw / "result.txt").read_text()) == (1.0 if r.success else 0.0)
    # The forgotten save is the missing step: the agent said DONE where it should have saved.
    slip_t = native.load(slip.path)
    assert slip_t.metadata["first_error_step"] == slip_t.n_steps - 1
    assert slip_t.steps[-1].action == "DONE"
    shutil.rmtree(out)


@pytest.mark.slow
def test_long_calc_runs_fill_a_table_and_insert_a_chart(tmp_path):
    from gui_app.recorders.desktop.recorder import DesktopRecorder

    out = tmp_path / "out"
    with DesktopRecorder(think=(0.1, 0.4)) as rec:
        table = rec.record("calc_fill_table", 21, 0, out, mistake=None, rng=random.Random(21))
        chart = rec.record("calc_insert_chart", 22, 1, out, mistake=None, rng=random.Random(22))
    assert table.success is True and table.mistake_type is None
    assert 20 <= table.n_steps <= 40  # a long run with still stretches, under the Actor's MAX_STEPS
    assert chart.success is True and chart.mistake_type is None and 5 <= chart.n_steps <= 40
    md = native.load(chart.path).metadata
    charts = md["checker"]["observed"]["charts"]
    assert charts and charts[0]["plots"][0]["series"][0]["val"] == md["params"]["values"][0]
    shutil.rmtree(out)


def test_chart_checker_reads_type_and_ranges_from_the_xlsx_zip(tmp_path):
    import openpyxl
    from openpyxl.chart import BarChart, Reference

    wb = openpyxl.Workbook()
    ws = wb.active
    for row in (["Region", "Units"], ["North", 3], ["South", 5], ["East", 2]):
        ws.append(row)
    bar = BarChart()
    bar.type = "bar"
    bar.add_data(Reference(ws, min_col=2, min_row=1, max_row=4), titles_from_data=True)
    bar.set_categories(Reference(ws, min_col=1, min_row=2, max_row=4))
    ws.add_chart(bar, "D2")
    wb.save(tmp_path / "c.xlsx")
    charts = chk.xlsx_charts(tmp_path / "c.xlsx")
    assert len(charts) == 1
    plot = charts[0]["plots"][0]
    assert plot["type"] == "bar" and plot["bar_dir"] == "bar"
    assert plot["series"] == [{"tx": "B1", "cat": "A2:A4", "val": "B2:B4"}]


@pytest.mark.parametrize("extra, message", [
    (["--tasks", "calc_fly"], "unknown desktop task(s): calc_fly"),
    (["--size", "big"], "--size must be WIDTHxHEIGHT"),
    (["--think", "2,1"], "--think must be MIN,MAX"),
    (["--fps", "0"], "--episodes, --workers and --fps must be >= 1"),
    (["--fail-rate", "1.5"], "--fail-rate must be in [0, 1]"),
])
def test_collect_desktop_rejects_bad_arguments_in_one_line(tmp_path, capsys, extra, message):
    from gui_app.cli import main

    rc = main(["collect", "desktop", "--episodes", "1", "--out", str(tmp_path / "o"), *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1 and message in err[0]
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").rglob("trajectory.json"))
