"""Desktop task types: set-up, the scripted agent's way of doing each, its mistakes, and the checker.

A task draws its parameters from the episode's randomness (cells and values, words, file names, numbers), writes
its input files into the episode's HOME, opens the applications (before the recording starts, as OSWorld's
task configs do), plays the agent through real input (:class:`~.agent.Actor`) and finally checks the real end
state (:mod:`.checkers`). With a mistake to make, the agent makes it the way weak agents do (a neighbouring cell,
a typo, the wrong file or menu item, a forgotten save, a premature stop, a wrong action then a recovery) and
marks the step where it first departed from a correct run.

Where the agent clicks comes from each application's layout at 1280x720 with the GTK themes of
:mod:`.style` (they share widget metrics), relative to the window or dialog as the window manager reports it.
"""

from __future__ import annotations

import random
import string
from pathlib import Path
from typing import Any

from gui_app.recorders.desktop import checkers as chk
from gui_app.recorders.desktop.agent import Actor
from gui_app.recorders.desktop.apps import TITLES, Desk
from gui_app.recorders.desktop.checkers import Verdict
from gui_app.recorders.desktop.display import DesktopError, Window

Box = tuple[float, float, float, float]

#: Mistakes whose run still succeeds when the agent recovers as planned.
RECOVERED = ("wrong_then_recover",)

WORDS = ("apple", "river", "stone", "cloud", "maple", "orbit", "piano", "lemon", "tiger", "amber", "delta", "ember",
         "frost", "grove", "harbor", "ivory", "jungle", "kettle", "lantern", "meadow", "nectar", "olive", "pepper",
         "quartz", "saddle", "timber", "velvet", "walnut", "yonder", "zephyr")
NAMES = ("Alice", "Bruno", "Chen", "Dana", "Emil", "Farah", "Goran", "Hana", "Ivan", "Jonas", "Kira", "Lena",
         "Mateo", "Nina", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tara")
REGIONS = ("North", "South", "East", "West", "Central", "Coast", "Valley", "Harbor")
SENTENCES = ("Please review the figures before Friday.", "The meeting moves to room four.",
             "Send the signed copy to the office.", "All invoices are due at the end of the month.",
             "The new schedule starts next week.", "Remember to back up the shared folder.")


def typo(text: str, rng: random.Random) -> str:
    """A plausible slip: swapped neighbours, a dropped, doubled or replaced character (never a no-op).

    Unlike the MiniWoB agents' ``typo``, a digit is replaced by another digit: a slip on the number row leaves a
    number in a spreadsheet cell (a wrong value), not text that a checker would reject for its type alone.
    """
    for _ in range(20):
        i = rng.randrange(len(text))
        kind = rng.choice(("swap", "drop", "double", "replace"))
        if kind == "swap" and i < len(text) - 1 and text[i] != text[i + 1]:
            out = text[:i] + text[i + 1] + text[i] + text[i + 2:]
        elif kind == "drop" and len(text) > 2:
            out = text[:i] + text[i + 1:]
        elif kind == "double" and text[i].isalnum():
            out = text[:i + 1] + text[i] + text[i + 1:]
        elif kind == "replace" and text[i].isalpha():
            out = text[:i] + rng.choice(string.ascii_lowercase.replace(text[i].lower(), "")) + text[i + 1:]
        elif kind == "replace" and text[i].isdigit():
            out = text[:i] + rng.choice("0123456789".replace(text[i], "")) + text[i + 1:]
        else:
            continue
        if out != text:
            return out
    return text + text[-1]


def rel(win: Window, x: float, y: float, w: float, h: float) -> Box:
    """A box given relative to a window's client area, in screen pixels."""
    return (win.x + x, win.y + y, w, h)


class Task:
    """Base of the desktop tasks.

    Args:
        rng: the episode's randomness (parameters are drawn from it in ``__init__``).
        mistake: the mistake to make (one of ``MISTAKES``) or None for a clean run.
    """

    name = ""
    domain = ""
    apps: tuple[str, ...] = ()
    MISTAKES: tuple[str, ...] = ()
    uses_lo = False

    def __init__(self, rng: random.Random, mistake: str | None):
        self.rng = rng
        self.mistake = mistake if mistake in self.MISTAKES else None
        self.mistake_applied: str | None = None
        self.instruction = ""
        self.params: dict[str, Any] = {}
        self.win: dict[str, Window] = {}
        self.lo_warn_format = rng.random() < 0.7

    @property
    def intended_success(self) -> bool:
        """What the plan says the outcome should be (compared with the checker in reports, never used as label)."""
        return self.mistake is None or self.mistake in RECOVERED

    def deviate(self, a: Actor, kind: str) -> None:
        if self.mistake_applied is None:
            self.mistake_applied = kind
        a.mark_deviation()

    def setup(self, desk: Desk) -> None:
        raise NotImplementedError

    def open(self, desk: Desk) -> None:
        raise NotImplementedError

    def play(self, a: Actor, desk: Desk) -> None:
        raise NotImplementedError

    def check(self, desk: Desk) -> Verdict:
        raise NotImplementedError

    def close(self) -> None:
        """Stop what the set-up started besides the desk's programs (a threat scenario's web server)."""

    def evaluator(self) -> dict[str, Any]:
        """The OSWorld-style ``evaluator`` entry of the task config (what the checker compares)."""
        return {"func": f"rollscope.{self.name}", "expected": {"type": "rule", "rules": self.params}}

    # -- shared pieces ---------------------------------------------------------------------------------------
    def docs(self, desk: Desk) -> Path:
        d = desk.home / "Documents"
        d.mkdir(exist_ok=True)
        return d

    def type_in_parts(self, a: Actor, text: str, what: str) -> bool:
        """Type ``text`` in two bursts (agents type a phrase per action), with this task's typing mistakes:
        stop after the first burst, slip in the second, or slip, erase and retype. False when the agent stopped.
        """
        words = text.split(" ")
        cut = self.rng.randint(1, len(words) - 1)
        first, rest = " ".join(words[:cut]), " " + " ".join(words[cut:])
        a.type(first, target=f"{what} (first words)")
        if self.mistake == "premature_stop":
            self.deviate(a, "premature_stop")
            a.done()
            return False
        if self.mistake == "typo":
            self.deviate(a, "typo")
            rest = typo(rest, self.rng)
        if self.mistake == "wrong_then_recover":
            self.deviate(a, "wrong_then_recover")
            wrong = typo(rest, self.rng)
            a.type(wrong, target=f"{what} (rest)")
            a.press("backspace", times=len(wrong), target="correct the text")
        a.type(rest, target=f"{what} (rest)")
        return True

    def finish(self, a: Actor, save: Any) -> None:
        """Save (unless the mistake is to forget it) and declare DONE."""
        if self.mistake == "forgot_save":
            self.deviate(a, "forgot_save")
        else:
            save()
        a.done()


# ---------------------------------------------------------------------------------------------------------------
# LibreOffice (Calc and Writer)
# ---------------------------------------------------------------------------------------------------------------
LO_MENU = {"File": (4, 1, 30, 22)}
KEEP_FORMAT = r"Confirm File Format|Keep current format"


def col_index(ref: str) -> tuple[int, int]:
    letters = "".join(ch for ch in ref if ch.isalpha()).upper()
    c = 0
    for ch in letters:
        c = c * 26 + (ord(ch) - 64)
    return c - 1, int("".join(ch for ch in ref if ch.isdigit()))


def cell_box(win: Window, ref: str) -> Box:
    """Screen box of a Calc cell at 100% zoom in an .xlsx written by openpyxl (Calc shows its default 8.43-character
    columns 62 px wide and its 15-point rows 20 px high; the grid starts below the column headers)."""
    c, r = col_index(ref)
    return (win.x + 41 + 62 * c + 7, win.y + 163 + 20 * (r - 1) + 4, 48, 12)


def cell_name(c: int, r: int) -> str:
    return f"{chr(65 + c)}{r}"


class LOTask(Task):
    uses_lo = True
    kind = "calc"
    file = "sheet.xlsx"

    def open(self, desk: Desk) -> None:
        self.open_doc(desk, self.path(desk))

    def path(self, desk: Desk) -> Path:
        return self.docs(desk) / self.file

    def open_doc(self, desk: Desk, path: Path) -> None:
        argv = ["soffice", f"--{self.kind}", "--norestore", "--nologo", str(path)]
        self.win["main"] = desk.launch(argv, rf"{path.stem}.*{TITLES[self.kind]}", timeout=120)

    def save(self, a: Actor, desk: Desk) -> None:
        """Ctrl+S, then keep the Microsoft format when LibreOffice asks (its default button)."""
        if self.rng.random() < 0.15:
            # A look into the File menu, closed again, before the shortcut: agents hesitate like this.
            a.click(rel(self.win["main"], *LO_MENU["File"]), target="File menu")
            a.press("esc", target="close the menu")
        a.hotkey("ctrl", "s", target="save")
        if self.lo_warn_format:
            desk.display.wait_window(KEEP_FORMAT, timeout=20)
            a.press("enter", target="Use Excel/Word format!")
            desk.display.wait_no_window(KEEP_FORMAT)


class CalcTask(LOTask):
    domain = "libreoffice_calc"
    apps = ("libreoffice-calc",)
    kind = "calc"
    file = "sheet.xlsx"

    def write_xlsx(self, desk: Desk, rows: list[list[Any]], title: str = "Sheet1") -> Path:
        import openpyxl

        wb = openpyxl.Workbook()
        ws = wb.active
        ws.title = title
        for r, row in enumerate(rows, start=1):
            for c, v in enumerate(row, start=1):
                if v is not None:
                    ws.cell(r, c, v)
        path = self.docs(desk) / self.file
        wb.save(path)
        desk.own(path)
        return path

    def goto(self, a: Actor, ref: str) -> None:
        """Select a cell: click it, or (sometimes) type its name into the Name Box as people also do."""
        if self.rng.random() < 0.2:
            a.click(rel(self.win["main"], 10, 112, 110, 18), target="Name Box")
            a.type(ref + "\n", target=f"go to {ref}")
        else:
            a.click(cell_box(self.win["main"], ref), target=f"cell {ref}")


class CalcEnterValues(CalcTask):
    name = "calc_enter_values"
    MISTAKES = ("wrong_cell", "typo", "forgot_save", "premature_stop", "wrong_then_recover")

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.file = f"{rng.choice(('budget', 'inventory', 'scores', 'orders'))}.xlsx"
        n = rng.randint(2, 4)
        col = rng.choice("BCD")
        start = rng.randint(2, 5)
        names = rng.sample(NAMES, n)
        self.cells = {f"{col}{start + i}": rng.randint(10, 999) for i in range(n)}
        self.labels = dict(zip(self.cells, names, strict=True))
        self.params = {"file": self.file, "cells": self.cells}
        listing = ", ".join(f"{v} in {c}" for c, v in self.cells.items())
        self.instruction = f"In {self.file}, enter {listing}, then save the file in its current format."

    def setup(self, desk: Desk) -> None:
        rows = [["Name", "Value"]] + [[None, None] for _ in range(10)]
        for ref, name in self.labels.items():
            _, r = col_index(ref)
            rows[r - 1][0] = name
        self.write_xlsx(desk, rows)

    def play(self, a: Actor, desk: Desk) -> None:
        items = list(self.cells.items())
        bad = self.rng.randrange(len(items))
        for i, (ref, value) in enumerate(items):
            text = str(value)
            if i == bad and self.mistake == "premature_stop":
                self.deviate(a, "premature_stop")
                a.done()
                return
            if i == bad and self.mistake == "wrong_cell":
                c, r = col_index(ref)
                ref = cell_name(c + self.rng.choice((-1, 1)), r)
                self.deviate(a, "wrong_cell")
            if i == bad and self.mistake == "typo":
                self.deviate(a, "typo")
                text = typo(text, self.rng)
            if i == bad and self.mistake == "wrong_then_recover":
                self.deviate(a, "wrong_then_recover")
                a.click(cell_box(self.win["main"], ref), target=f"cell {ref}")
                a.type(typo(text, self.rng) + "\n", target=f"value for {ref}")
                a.click(cell_box(self.win["main"], ref), target=f"cell {ref}")
                a.type(text + "\n", target=f"value for {ref}")
                continue
            self.goto(a, ref)
            a.type(text + "\n", target=f"value for {ref}")
        self.finish(a, lambda: self.save(a, desk))

    def check(self, desk: Desk) -> Verdict:
        got = chk.xlsx_cells(self.path(desk), list(self.cells))
        ok = all(chk.same_number(got[c], v) for c, v in self.cells.items())
        return Verdict(ok, "all values present" if ok else "a value is missing or wrong", {"cells": got})


class CalcFormula(CalcTask):
    name = "calc_formula"
    MISTAKES = ("wrong_range", "wrong_cell", "forgot_save", "wrong_option")
    FUNCS = {"SUM": sum, "AVERAGE": lambda xs: sum(xs) / len(xs), "MAX": max, "MIN": min}

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.file = f"{rng.choice(('sales', 'expenses', 'hours'))}.xlsx"
        self.n = rng.randint(4, 7)
        self.values = [rng.randint(1, 200) for _ in range(self.n)]
        self.func = rng.choice(sorted(self.FUNCS))
        self.target = f"B{self.n + 2}"
        self.expected = self.FUNCS[self.func](self.values)
        self.params = {"file": self.file, "cell": self.target, "function": self.func, "range": f"B2:B{self.n + 1}",
                       "expected": self.expected}
        word = {"SUM": "total", "AVERAGE": "average", "MAX": "largest value", "MIN": "smallest value"}[self.func]
        self.instruction = (f"In {self.file}, put the {word} of the Units column (B2:B{self.n + 1}) in "
                            f"{self.target} with a formula, and save the file.")

    def setup(self, desk: Desk) -> None:
        regions = self.rng.sample(REGIONS, self.n)
        self.write_xlsx(desk, [["Region", "Units"]] + [[r, v] for r, v in zip(regions, self.values, strict=True)]
                        + [["Result", None]])

    def play(self, a: Actor, desk: Desk) -> None:
        a.move(cell_box(self.win["main"], f"B{self.rng.randint(2, self.n + 1)}"), target="look at the data")
        target, last, func = self.target, self.n + 1, self.func
        if self.mistake == "wrong_cell":
            self.deviate(a, "wrong_cell")
            target = f"C{self.n + 2}"
        self.goto(a, target)
        if self.mistake == "wrong_range":
            self.deviate(a, "wrong_range")
            last = self.n
        if self.mistake == "wrong_option":
            self.deviate(a, "wrong_option")
            func = self.rng.choice([f for f in self.FUNCS if f != self.func
                                    and self.FUNCS[f](self.values) != self.expected] or ["MIN"])
        a.type(f"={func}(B2:B{last})\n", target="formula")
        self.finish(a, lambda: self.save(a, desk))

    def check(self, desk: Desk) -> Verdict:
        path = self.path(desk)
        formula = chk.xlsx_cells(path, [self.target], data_only=False)[self.target]
        value = chk.xlsx_cells(path, [self.target])[self.target]
        ok = isinstance(formula, str) and formula.startswith("=") and chk.same_number(value, self.expected, 1e-4)
        return Verdict(ok, "formula with the expected value" if ok else "no formula or a wrong value",
                       {"formula": formula, "value": value})


class CalcSort(CalcTask):
    name = "calc_sort_column"
    MISTAKES = ("wrong_option", "wrong_range", "forgot_save")

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.file = f"{rng.choice(('team', 'roster', 'contacts'))}.xlsx"
        self.n = rng.randint(5, 8)
        self.names = rng.sample(NAMES, self.n)
        while self.names == sorted(self.names):
            rng.shuffle(self.names)
        self.descending = rng.random() < 0.3
        self.params = {"file": self.file, "range": f"A2:A{self.n + 1}",
                       "order": "descending" if self.descending else "ascending"}
        order = "Z to A" if self.descending else "A to Z"
        self.instruction = f"Sort the names in column A of {self.file} (below the header) {order}, then save."

    def setup(self, desk: Desk) -> None:
        self.write_xlsx(desk, [["Name"]] + [[n] for n in self.names])

    def play(self, a: Actor, desk: Desk) -> None:
        win = self.win["main"]
        last = self.n + 1
        a.click(cell_box(win, "A2"), target="cell A2")
        if self.mistake == "wrong_range":
            self.deviate(a, "wrong_range")
            last = self.n
        a.shift_click(cell_box(win, f"A{last}"), target=f"extend selection to A{last}")
        descending = self.descending
        if self.mistake == "wrong_option":
            self.deviate(a, "wrong_option")
            descending = not descending
        # The toolbar's Sort Ascending / Sort Descending buttons.
        a.click(rel(win, 783, 35, 18, 18) if descending else rel(win, 750, 35, 18, 18),
                target="Sort Descending" if descending else "Sort Ascending")
        self.finish(a, lambda: self.save(a, desk))

    def check(self, desk: Desk) -> Verdict:
        cells = [f"A{i}" for i in range(2, self.n + 2)]
        got = chk.xlsx_cells(self.path(desk), cells)
        vals = [got[c] for c in cells]
        want = sorted(self.names, reverse=self.descending)
        ok = vals == want
        return Verdict(ok, "sorted" if ok else "not in the requested order", {"column": vals})


class CalcBoldHeader(CalcTask):
    name = "calc_bold_header"
    MISTAKES = ("wrong_range", "wrong_element", "forgot_save")

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.file = f"{rng.choice(('report', 'summary', 'tracker'))}.xlsx"
        self.ncols = rng.randint(3, 5)
        self.headers = rng.sample(("Date", "Item", "Qty", "Price", "Owner", "Status", "Notes"), self.ncols)
        self.params = {"file": self.file, "cells": [cell_name(c, 1) for c in range(self.ncols)]}
        self.instruction = f"Make the header row of {self.file} (A1:{cell_name(self.ncols - 1, 1)}) bold and save it."

    def setup(self, desk: Desk) -> None:
        rows = [self.headers] + [[self.rng.randint(1, 99) for _ in self.headers] for _ in range(4)]
        self.write_xlsx(desk, rows)

    def play(self, a: Actor, desk: Desk) -> None:
        win = self.win["main"]
        row, last = 1, self.ncols - 1
        if self.mistake == "wrong_element":
            self.deviate(a, "wrong_element")
            row = 2
        a.click(cell_box(win, cell_name(0, row)), target=f"cell A{row}")
        if self.mistake == "wrong_range":
            self.deviate(a, "wrong_range")
            last -= 1
        a.shift_click(cell_box(win, cell_name(last, row)), target="extend selection")
        if self.rng.random() < 0.5:
            a.hotkey("ctrl", "b", target="bold")
        else:
            a.click(rel(win, 336, 74, 15, 16), target="Bold button")
        self.finish(a, lambda: self.save(a, desk))

    def check(self, desk: Desk) -> Verdict:
        cells = self.params["cells"]
        got = chk.xlsx_bold(self.path(desk), cells)
        ok = all(got.values())
        return Verdict(ok, "header bold" if ok else "a header cell is not bold", {"bold": got})


class CalcRowFormula(CalcTask):
    name = "calc_row_formula"
    MISTAKES = ("wrong_range", "wrong_cell", "wrong_option", "forgot_save")
    FUNCS = {"AVERAGE": lambda xs: sum(xs) / len(xs), "MAX": max, "MIN": min, "COUNTIF": None}
    HEADERS = {"AVERAGE": "Average", "MAX": "Best", "MIN": "Lowest", "COUNTIF": "Months>=50"}

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.file = f"{rng.choice(('monthly', 'quarterly', 'attendance', 'targets'))}.xlsx"
        self.months = ("Jan", "Feb", "Mar", "Apr", "May", "Jun")[: rng.randint(4, 6)]
        self.people = rng.sample(NAMES, rng.randint(4, 7))
        self.table = {p: [rng.randint(5, 120) for _ in self.months] for p in self.people}
        self.row_i = rng.randrange(len(self.people))
        self.person = self.people[self.row_i]
        self.row = self.row_i + 2
        self.func = rng.choice(sorted(self.FUNCS))
        self.last_col = cell_name(len(self.months), self.row)[0]
        self.target = cell_name(len(self.months) + 1, self.row)
        self.range = f"B{self.row}:{self.last_col}{self.row}"
        self.expected = self.value_of(self.func, self.table[self.person])
        self.params = {"file": self.file, "cell": self.target, "function": self.func, "range": self.range,
                       "expected": self.expected}
        what = {"AVERAGE": "average", "MAX": "largest value", "MIN": "smallest value",
                "COUNTIF": "number of months with at least 50"}[self.func]
        self.instruction = (f"In {self.file}, fill {self.person}'s \"{self.HEADERS[self.func]}\" cell "
                            f"({self.target}) with a formula giving the {what} of {self.person}'s months "
                            f"({self.range}), then save the file.")

    def value_of(self, func: str, xs: list[int]) -> float:
        return sum(x >= 50 for x in xs) if func == "COUNTIF" else self.FUNCS[func](xs)

    def formula(self, func: str, rng_text: str) -> str:
        # ";" separates arguments in every LibreOffice locale; a formula's quotes are not autocorrected.
        return f"=COUNTIF({rng_text};\">=50\")" if func == "COUNTIF" else f"={func}({rng_text})"

    def setup(self, desk: Desk) -> None:
        rows = [["Name", *self.months, self.HEADERS[self.func]]]
        rows += [[p, *self.table[p], None] for p in self.people]
        self.write_xlsx(desk, rows)

    def play(self, a: Actor, desk: Desk) -> None:
        win = self.win["main"]
        a.move(cell_box(win, f"A{self.row}"), target=f"find {self.person}'s row")
        a.move(cell_box(win, cell_name(len(self.months) + 1, 1)), target="read the header")
        target, first, last, func = self.target, "B", self.last_col, self.func
        if self.mistake == "wrong_cell":
            self.deviate(a, "wrong_cell")
            r = self.row + 1 if self.row_i + 1 < len(self.people) else self.row - 1
            target = cell_name(len(self.months) + 1, r)
        self.goto(a, target)
        if self.mistake == "wrong_range":
            self.deviate(a, "wrong_range")
            # Months left out at the end or the start (the first such slip that changes the result).
            xs, n = self.table[self.person], len(self.months)
            cuts = [(0, n - 1), (1, n), (0, n - 2), (2, n), (0, 1)]
            i, j = next(((i, j) for i, j in cuts if self.value_of(func, xs[i:j]) != self.expected), cuts[0])
            first, last = chr(ord("B") + i), chr(ord("B") + j - 1)
        if self.mistake == "wrong_option":
            self.deviate(a, "wrong_option")
            func = self.rng.choice([f for f in self.FUNCS
                                    if self.value_of(f, self.table[self.person]) != self.expected] or ["COUNTIF"])
        a.type(self.formula(func, f"{first}{self.row}:{last}{self.row}") + "\n", target="formula")
        self.finish(a, lambda: self.save(a, desk))

    def check(self, desk: Desk) -> Verdict:
        path = self.path(desk)
        formula = chk.xlsx_cells(path, [self.target], data_only=False)[self.target]
        value = chk.xlsx_cells(path, [self.target])[self.target]
        ok = (isinstance(formula, str) and formula.startswith("=") and self.func in formula.upper()
              and chk.same_number(value, self.expected, 1e-4))
        return Verdict(ok, "formula with the expected value" if ok else "no formula, another function or a wrong "
                       "value", {"formula": formula, "value": value})


class CalcFillTable(CalcTask):
    """A long run: a small table from the instruction entered row by row, with still stretches between."""

    name = "calc_fill_table"
    MISTAKES = ("typo", "wrong_cell", "missed_item", "forgot_save", "premature_stop", "wrong_then_recover")
    #: (label header, number header, number range) per kind of table; labels are drawn in ``__init__``.
    KINDS = {"people": ("Name", "Score", (10, 99)), "items": ("Item", "Price", (2, 250)),
             "years": ("Year", "Units", (100, 999))}
    #: Most steps the run plans for (the Actor stops at MAX_STEPS = 40; profile b adds a few habits on top).
    BUDGET = 33

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.file = f"{rng.choice(('ledger', 'results', 'stock', 'tally'))}.xlsx"
        self.table = rng.choice(sorted(self.KINDS))
        self.head_label, self.head_value, (lo, hi) = self.KINDS[self.table]
        n = rng.randint(6, 9)
        if self.table == "people":
            labels: list[Any] = rng.sample(NAMES, n)
        elif self.table == "items":
            labels = [w.capitalize() for w in rng.sample(WORDS, n)]
        else:
            first = rng.randint(2010, 2016)
            labels = list(range(first, first + n))
        self.rows = [(lab, rng.randint(lo, hi)) for lab in labels]
        self.total = rng.random() < 0.5
        self.total_cell = f"B{n + 2}"
        self.params = {"file": self.file, "rows": [list(r) for r in self.rows], "first_row": 2,
                       "total": {"cell": self.total_cell, "function": "SUM", "range": f"B2:B{n + 1}",
                                 "expected": sum(v for _, v in self.rows)} if self.total else None}
        table = "; ".join(f"{lab} {v}" for lab, v in self.rows)
        extra = (f", then put the total of the {self.head_value} column in {self.total_cell} with a SUM formula"
                 if self.total else "")
        self.instruction = (f"In {self.file}, enter this table under the headers {self.head_label} (column A) and "
                            f"{self.head_value} (column B), starting in row 2: {table}{extra}. Save the file in "
                            f"its current format.")

    def setup(self, desk: Desk) -> None:
        self.write_xlsx(desk, [[self.head_label, self.head_value]])

    def expected_cells(self) -> dict[str, Any]:
        cells: dict[str, Any] = {}
        for i, (lab, v) in enumerate(self.rows):
            cells[f"A{i + 2}"], cells[f"B{i + 2}"] = lab, v
        return cells

    def left(self, i: int) -> int:
        """Most steps still needed from row ``i`` on: two per row (goto, typing), the total, a save, DONE."""
        return 2 * (len(self.rows) - i) + (3 if self.total else 0) + 4 + 1

    def idle(self, a: Actor, harmless: bool = False) -> None:
        """A still stretch: the agent re-reads the instruction, looks over what it entered, or waits (an explicit
        WAIT, which would carry a pending deviation mark: ``harmless`` leaves it out)."""
        a.pause(1.5, 4.0)
        roll = self.rng.random() * (0.75 if harmless else 1.0)
        if roll < 0.4:
            a.look_around("re-read the instruction")
        elif roll < 0.75:
            a.move(cell_box(self.win["main"], f"B{self.rng.randint(2, len(self.rows) + 1)}"),
                   target="check the entered rows")
        else:
            a.wait(self.rng.uniform(1.0, 3.0))

    def play(self, a: Actor, desk: Desk) -> None:
        win, n = self.win["main"], len(self.rows)
        a.move(cell_box(win, "A1"), target="read the headers")
        bad = self.rng.randrange(n // 2, n) if self.mistake == "premature_stop" else self.rng.randrange(1, n)
        idle_before = set(self.rng.sample(range(1, n), k=min(n - 1, self.rng.randint(2, 4))))
        cursor: int | None = None  # the row the cell cursor is in, as far as the agent knows
        for i, (label, value) in enumerate(self.rows):
            r = i + 2
            if i == bad and self.mistake == "premature_stop":
                self.deviate(a, "premature_stop")
                self.done_after_looks(a)
                return
            if i in idle_before and a.n_steps + 1 + self.left(i) <= self.BUDGET:
                self.idle(a)
            if i == bad and self.mistake == "missed_item":
                self.deviate(a, "missed_item")  # the next row's click is the first step of a run without it
                continue
            row, text = r, str(value)
            if i == bad and self.mistake == "wrong_cell":
                self.deviate(a, "wrong_cell")  # lost its place: this row and the rest land one row lower
                row = r + 1
            if i == bad and self.mistake == "typo":
                self.deviate(a, "typo")
                text = typo(text, self.rng)
            if i == bad and self.mistake == "wrong_then_recover":
                self.deviate(a, "wrong_then_recover")
                text = typo(text, self.rng)
            if self.mistake == "wrong_cell" and i > bad:
                row = r + 1
            if cursor != row or (self.rng.random() < 0.2 and a.n_steps + 2 + self.left(i) <= self.BUDGET):
                self.goto(a, f"A{row}")
            if self.rng.random() < 0.5:
                a.type(f"{label}\t{text}\n", target=f"row {row}")
            else:
                a.type(f"{label}\t", target=f"A{row}")
                a.type(f"{text}\n", target=f"B{row}")
            cursor = row + 1  # Enter after Tab goes back to column A, one row down
            if i == bad and self.mistake == "wrong_then_recover":
                a.move(cell_box(win, f"B{row}"), target="check the value")
                a.click(cell_box(win, f"B{row}"), target=f"cell B{row}")
                a.type(f"{value}\n", target=f"correct B{row}")
                cursor = None  # Enter moved down column B
        if self.total:
            self.goto(a, self.total_cell)
            a.type(f"=SUM(B2:B{n + 1})\n", target="total formula")
        settle = self.rng.randint(18, 22)
        while a.n_steps < settle:  # a last look (or a few) over the table before saving
            self.idle(a)
        self.finish(a, lambda: self.save(a, desk))

    def done_after_looks(self, a: Actor) -> None:
        while a.n_steps < 19:  # it looks its table over, satisfied, before it stops (DONE carries the mark)
            self.idle(a, harmless=True)
        a.done()

    def check(self, desk: Desk) -> Verdict:
        path = self.path(desk)
        want = self.expected_cells()
        got = chk.xlsx_cells(path, list(want))
        bad = [c for c, v in want.items()
               if not (chk.same_number(got[c], v) if isinstance(v, int) else str(got[c] or "").strip() == v)]
        observed: dict[str, Any] = {"cells": got, "wrong": bad}
        ok = not bad
        if self.total:
            formula = chk.xlsx_cells(path, [self.total_cell], data_only=False)[self.total_cell]
            value = chk.xlsx_cells(path, [self.total_cell])[self.total_cell]
            observed["total"] = {"formula": formula, "value": value}
            ok = ok and (isinstance(formula, str) and formula.startswith("=") and "SUM" in formula.upper()
                         and chk.same_number(value, self.params["total"]["expected"]))
        return Verdict(ok, "table entered" if ok else "a cell of the table or the total is missing or wrong",
                       observed)


class CalcInsertChart(CalcTask):
    """Insert a chart of a given type over a data range with the Chart Wizard, then save as .xlsx."""

    name = "calc_insert_chart"
    MISTAKES = ("wrong_option", "wrong_range", "forgot_save", "premature_stop")
    #: The wizard's chart types: row in its type list; (DrawingML plot type, c:barDir) in the saved file.
    TYPES = {"column": (0, ("bar", "col")), "bar": (1, ("bar", "bar")), "pie": (2, ("pie", None)),
             "line": (4, ("line", None))}
    WIZARD = "^Chart Type$"

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.file = f"{rng.choice(('sales', 'visits', 'output', 'survey'))}.xlsx"
        self.chart = rng.choice(sorted(self.TYPES))
        self.n = rng.randint(4, 7)
        self.ncols = 1 if self.chart == "pie" else rng.choice((1, 1, 2))
        self.heads = rng.sample(("Units", "Sales", "Visits", "Orders", "Returns"), self.ncols)
        self.labels = rng.sample(REGIONS, self.n)
        self.data = [[rng.randint(5, 120) for _ in range(self.ncols)] for _ in range(self.n)]
        self.last = cell_name(self.ncols, self.n + 1)
        self.range = f"A1:{self.last}"
        self.values = [f"{cell_name(c, 2)}:{cell_name(c, self.n + 1)}" for c in range(1, self.ncols + 1)]
        self.params = {"file": self.file, "chart": self.chart, "range": self.range,
                       "categories": f"A2:A{self.n + 1}", "values": self.values}
        self.instruction = (f"In {self.file}, insert a {self.chart} chart of the data in {self.range} (labels in "
                            f"column A, headers in row 1), then save the file in its current format.")

    def setup(self, desk: Desk) -> None:
        self.write_xlsx(desk, [["Region", *self.heads]] + [[lab, *row] for lab, row in zip(self.labels, self.data,
                                                                                            strict=True)])

    def open_wizard(self, a: Actor, desk: Desk) -> Window:
        win = self.win["main"]
        if self.rng.random() < 0.6:
            a.click(rel(win, 134, 3, 40, 16), target="Insert menu")
            menu = desk.display.wait_window(r"^LibreOffice \d", timeout=10)
            a.click((menu.x + 20, menu.y + 29, 90, 16), target="Chart...")
        else:
            a.click(rel(win, 888, 35, 18, 18), target="Insert Chart button")
        return desk.display.wait_window(self.WIZARD, timeout=30)

    def play(self, a: Actor, desk: Desk) -> None:
        win = self.win["main"]
        if self.rng.random() < 0.5:
            a.move(cell_box(win, f"B{self.rng.randint(2, self.n + 1)}"), target="look at the data")
        a.click(cell_box(win, "A1"), target="cell A1")
        last = self.last
        if self.mistake == "wrong_range":
            self.deviate(a, "wrong_range")  # the last data row left out
            last = cell_name(self.ncols, self.n)
        a.shift_click(cell_box(win, last), target=f"extend selection to {last}")
        wiz = self.open_wizard(a, desk)
        chart = self.chart
        if self.mistake == "wrong_option":
            self.deviate(a, "wrong_option")
            chart = self.rng.choice([c for c in self.TYPES if c != self.chart])
        row = self.TYPES[chart][0]
        if row != 0 or self.rng.random() < 0.5:  # Column is preselected; agents often click it anyway
            a.click((wiz.x + 230, wiz.y + 52 + 23 * row, 70, 14), target=f"chart type {chart.capitalize()}")
        if self.mistake == "premature_stop":
            self.deviate(a, "premature_stop")
            a.done()
            return
        a.click((wiz.x + 850, wiz.y + 395, 70, 22), target="Finish")
        desk.display.wait_no_window(self.WIZARD)
        desk.display.wait_still(timeout=10.0, quiet_ms=1000)  # the chart is drawn, chart editing has begun
        if self.rng.random() < 0.5:
            a.press("esc", target="leave the chart")
        # A click on a cell away from the chart ends chart editing (in chart mode the grid sits 39 px higher);
        # the sheet's toolbars come back before anything else is typed (a Ctrl+S sent meanwhile is lost).
        a.click(rel(win, 48, 546, 40, 12), target="cell A22", settle=6.0)
        desk.display.wait_still(timeout=10.0, quiet_ms=1000)
        self.finish(a, lambda: self.save(a, desk))

    def check(self, desk: Desk) -> Verdict:
        charts = chk.xlsx_charts(self.path(desk))
        plot_type, bar_dir = self.TYPES[self.chart][1]
        cats = self.params["categories"]
        ok = False
        for c in charts:
            for p in c["plots"]:
                vals = [s["val"] for s in p["series"]]
                if (p["type"] == plot_type and (bar_dir is None or p["bar_dir"] == bar_dir)
                        and sorted(vals) == sorted(self.values) and all(s["cat"] == cats for s in p["series"])):
                    ok = True
        reason = ("chart of the requested type over the range" if ok else
                  "no chart" if not charts else "chart of another type or over another range")
        return Verdict(ok, reason, {"charts": charts})


class WriterTask(LOTask):
    domain = "libreoffice_writer"
    apps = ("libreoffice-writer",)
    kind = "writer"
    file = "memo.docx"

    def write_docx(self, desk: Desk, paragraphs: list[str]) -> Path:
        import docx

        doc = docx.Document()
        for p in paragraphs:
            doc.add_paragraph(p)
        path = self.docs(desk) / self.file
        doc.save(str(path))
        desk.own(path)
        return path

    def find_dialog(self, a: Actor, desk: Desk) -> Window:
        a.hotkey("ctrl", "h", target="Find & Replace")
        return desk.display.wait_window("^Find and Replace$", timeout=20)

    def text_paragraphs(self) -> list[str]:
        ws = self.rng.sample(WORDS, 12)
        return [f"The {ws[0]} report covers the {ws[1]} project and the {ws[2]} budget.",
                f"Our {ws[3]} team met the {ws[4]} group to plan the {ws[5]} launch.",
                f"Next steps: finish the {ws[6]} draft and check the {ws[7]} figures."]


class WriterBoldWord(WriterTask):
    name = "writer_bold_word"
    MISTAKES = ("wrong_text", "typo", "forgot_save")

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.file = f"{rng.choice(('memo', 'notes', 'letter'))}.docx"
        self.paras = self.text_paragraphs()
        words = [w.strip(".:,") for p in self.paras for w in p.split()]
        self.candidates = [w for w in words if w in WORDS]
        self.word = rng.choice(self.candidates)
        self.params = {"file": self.file, "bold": self.word}
        self.instruction = f"In {self.file}, make the word \"{self.word}\" bold and save the document."

    def setup(self, desk: Desk) -> None:
        self.write_docx(desk, self.paras)

    def play(self, a: Actor, desk: Desk) -> None:
        dlg = self.find_dialog(a, desk)
        word = self.word
        if self.mistake == "wrong_text":
            self.deviate(a, "wrong_text")
            word = self.rng.choice([w for w in self.candidates if w != self.word])
        elif self.mistake == "typo":
            self.deviate(a, "typo")
            word = typo(word, self.rng)
        a.type(word, target="Find field")
        a.click(rel(dlg, 285, 161, 119, 30), target="Find Next")
        a.click(rel(dlg, 597, 428, 83, 31), target="Close")
        desk.display.wait_no_window("^Find and Replace$")
        if self.rng.random() < 0.5:
            a.click(rel(self.win["main"], 599, 74, 15, 16), target="Bold button")
        else:
            a.hotkey("ctrl", "b", target="bold")
        self.finish(a, lambda: self.save(a, desk))

    def check(self, desk: Desk) -> Verdict:
        bold = [w.strip(".:,") for w in chk.docx_bold_words(self.path(desk))]
        ok = bold == [self.word]
        return Verdict(ok, "only the word is bold" if ok else "the word is not (only) bold", {"bold_words": bold})


class WriterReplace(WriterTask):
    name = "writer_replace_word"
    MISTAKES = ("typo", "wrong_element", "forgot_save")

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.file = f"{rng.choice(('draft', 'minutes', 'plan'))}.docx"
        self.paras = self.text_paragraphs()
        words = [w.strip(".:,") for p in self.paras for w in p.split() if w.strip(".:,") in WORDS]
        self.old = rng.choice(words)
        self.new = rng.choice([w for w in WORDS if w not in words])
        self.params = {"file": self.file, "replace": self.old, "with": self.new}
        self.instruction = f"Replace every \"{self.old}\" with \"{self.new}\" in {self.file} and save it."

    def setup(self, desk: Desk) -> None:
        self.write_docx(desk, self.paras)

    def play(self, a: Actor, desk: Desk) -> None:
        dlg = self.find_dialog(a, desk)
        a.type(self.old, target="Find field")
        a.click(rel(dlg, 100, 107, 530, 28), target="Replace field")
        new = self.new
        if self.mistake == "typo":
            self.deviate(a, "typo")
            new = typo(new, self.rng)
        a.type(new, target="replacement")
        if self.mistake == "wrong_element":
            # Replace (one at a time) instead of Replace All: the first press only selects the match.
            self.deviate(a, "wrong_element")
            a.click(rel(dlg, 418, 161, 119, 30), target="Replace")
        else:
            a.click(rel(dlg, 551, 161, 119, 30), target="Replace All")
        a.click(rel(dlg, 597, 428, 83, 31), target="Close")
        desk.display.wait_no_window("^Find and Replace$")
        self.finish(a, lambda: self.save(a, desk))

    def check(self, desk: Desk) -> Verdict:
        text = " ".join(chk.docx_paragraphs(self.path(desk)))
        words = [w.strip(".:,") for w in text.split()]
        ok = self.old not in words and words.count(self.new) == " ".join(self.paras).count(self.old)
        return Verdict(ok, "replaced everywhere" if ok else "old word left or new word missing",
                       {"text": text[:400]})


class WriterAppend(WriterTask):
    name = "writer_append_sentence"
    MISTAKES = ("typo", "premature_stop", "forgot_save", "wrong_then_recover")

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.file = f"{rng.choice(('notice', 'update', 'brief'))}.docx"
        self.paras = self.text_paragraphs()[: rng.randint(1, 3)]
        self.sentence = rng.choice(SENTENCES)
        self.params = {"file": self.file, "last_paragraph": self.sentence}
        self.instruction = f"Add the sentence \"{self.sentence}\" as a new last paragraph of {self.file} and save."

    def setup(self, desk: Desk) -> None:
        self.write_docx(desk, self.paras)

    def play(self, a: Actor, desk: Desk) -> None:
        a.hotkey("ctrl", "end", target="end of document")
        a.press("enter", target="new paragraph")
        if self.type_in_parts(a, self.sentence, "sentence"):
            self.finish(a, lambda: self.save(a, desk))

    def check(self, desk: Desk) -> Verdict:
        paras = [p for p in chk.docx_paragraphs(self.path(desk)) if p.strip()]
        ok = bool(paras) and paras[-1].strip() == self.sentence and len(paras) == len(self.paras) + 1
        return Verdict(ok, "sentence appended" if ok else "last paragraph differs", {"last": paras[-1:]})


class WriterSaveAsOdt(WriterTask):
    name = "writer_save_as_odt"
    MISTAKES = ("typo", "premature_stop")

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.file = f"{rng.choice(('contract', 'proposal', 'agenda'))}.docx"
        self.paras = self.text_paragraphs()
        self.target = f"{rng.choice(WORDS)}_{rng.choice(('final', 'v2', 'copy', 'shared'))}.odt"
        self.params = {"file": self.file, "save_as": self.target}
        self.instruction = f"Save {self.file} as an OpenDocument text file named {self.target} in the same folder."

    def setup(self, desk: Desk) -> None:
        self.write_docx(desk, self.paras)

    def play(self, a: Actor, desk: Desk) -> None:
        a.hotkey("ctrl", "shift", "s", target="Save As")
        dlg = desk.display.wait_window("^Save$", timeout=20)
        a.hotkey("ctrl", "a", target="select the name")
        name = self.target
        if self.mistake == "typo":
            self.deviate(a, "typo")
            stem, ext = name.rsplit(".", 1)
            name = f"{typo(stem, self.rng)}.{ext}"
        a.type(name, target="file name")
        if self.mistake == "premature_stop":
            self.deviate(a, "premature_stop")
            a.click(rel(dlg, dlg.w - 180, dlg.h - 40, 70, 26), target="Cancel")
            a.done()
            return
        a.press("enter", target="Save")
        desk.display.wait_no_window("^Save$")
        a.done()

    def check(self, desk: Desk) -> Verdict:
        path = self.docs(desk) / self.target
        if not path.is_file():
            return Verdict(False, f"{self.target} not found",
                           {"files": sorted(p.name for p in self.docs(desk).iterdir())})
        text = chk.odt_text(path)
        ok = self.paras[0] in text
        return Verdict(ok, "saved as ODT with the text" if ok else "ODT lacks the text", {"text": text[:200]})


# ---------------------------------------------------------------------------------------------------------------
# Mousepad (text editor)
# ---------------------------------------------------------------------------------------------------------------
MP_LINE_H = 18
MP_CHAR_W = 8.9


class EditorTask(Task):
    domain = "mousepad"
    apps = ("mousepad",)
    file = "notes.txt"

    def setup(self, desk: Desk) -> None:
        path = self.docs(desk) / self.file
        path.write_text("\n".join(self.original) + "\n")
        desk.own(path)

    def open(self, desk: Desk) -> None:
        path = self.docs(desk) / self.file
        self.win["main"] = desk.launch(["mousepad", str(path)], rf"{self.file} - Mousepad$", timeout=30)

    def line_box(self, i: int, col: int = 0, width_chars: int = 1) -> Box:
        w = self.win["main"]
        return (w.x + 4 + MP_CHAR_W * col, w.y + 29 + MP_LINE_H * i, MP_CHAR_W * width_chars, 14)

    def save(self, a: Actor) -> None:
        if self.rng.random() < 0.3:
            a.click(rel(self.win["main"], 4, 1, 30, 22), target="File menu")
            a.click(rel(self.win["main"], 26, 156, 90, 16), target="Save")
        else:
            a.hotkey("ctrl", "s", target="save")

    def content(self, desk: Desk) -> list[str]:
        return (self.docs(desk) / self.file).read_text(errors="replace").rstrip("\n").split("\n")


def _text_lines(rng: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        ws = rng.sample(WORDS, rng.randint(3, 6))
        out.append(" ".join(ws))
    return out


class EditorReplace(EditorTask):
    name = "editor_find_replace"
    MISTAKES = ("typo", "wrong_element", "forgot_save")

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.file = f"{rng.choice(('todo', 'shopping', 'ideas', 'log'))}.txt"
        self.original = _text_lines(rng, rng.randint(4, 8))
        words = sorted({w for line in self.original for w in line.split()})
        self.old = rng.choice(words)
        # At least two occurrences: "all" must mean more than one, or replacing just one would also pass.
        others = [i for i, line in enumerate(self.original) if self.old not in line.split()]
        if sum(line.split().count(self.old) for line in self.original) < 2 and others:
            i = rng.choice(others)
            self.original[i] = f"{self.original[i]} {self.old}"
        self.new = rng.choice([w for w in WORDS if w not in words]).upper()
        self.params = {"file": self.file, "replace": self.old, "with": self.new}
        self.instruction = f"In {self.file}, replace all occurrences of \"{self.old}\" with \"{self.new}\" and save."

    def play(self, a: Actor, desk: Desk) -> None:
        if self.rng.random() < 0.3:
            a.click(rel(self.win["main"], 82, 1, 44, 22), target="Search menu")
            a.click(rel(self.win["main"], 106, 104, 120, 16), target="Find and Replace...")
        else:
            a.hotkey("ctrl", "r", target="Find and Replace")
        dlg = desk.display.wait_window("^Find and Replace$", timeout=20)
        a.type(self.old, target="Search for")
        a.click(rel(dlg, 127, 48, 250, 29), target="Replace with")
        new = self.new
        if self.mistake == "typo":
            self.deviate(a, "typo")
            new = typo(new, self.rng)
        a.type(new, target="replacement")
        if self.mistake == "wrong_element":
            self.deviate(a, "wrong_element")  # Replace without "Replace all in": one occurrence at most
        else:
            a.click(rel(dlg, 13, 209, 14, 15), target="Replace all in")
        a.click(rel(dlg, 258, 241, 82, 30), target="Replace")
        a.click(rel(dlg, 346, 241, 84, 30), target="Close")
        desk.display.wait_no_window("^Find and Replace$")
        self.finish(a, lambda: self.save(a))

    def check(self, desk: Desk) -> Verdict:
        got = self.content(desk)
        want = [" ".join(self.new if w == self.old else w for w in line.split()) for line in self.original]
        ok = got == want
        return Verdict(ok, "text as expected" if ok else "text differs", {"lines": got[:10]})


class EditorAppend(EditorTask):
    name = "editor_append_line"
    MISTAKES = ("typo", "forgot_save", "premature_stop", "wrong_then_recover")

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.file = f"{rng.choice(('journal', 'contacts', 'readme', 'tasks'))}.txt"
        self.original = _text_lines(rng, rng.randint(2, 6))
        self.line = f"{rng.choice(NAMES)} {rng.choice(('called', 'paid', 'visited', 'replied'))} on " \
                    f"{rng.choice(('Monday', 'Tuesday', 'Friday'))} at {rng.randint(8, 18)}:{rng.choice(('00', '30'))}"
        self.params = {"file": self.file, "append": self.line}
        self.instruction = f"Add the line \"{self.line}\" at the end of {self.file} and save it."

    def play(self, a: Actor, desk: Desk) -> None:
        n = len(self.original)
        if self.rng.random() < 0.5:
            a.click(self.line_box(n, 0, 2), target="empty last line")
        else:
            a.hotkey("ctrl", "end", target="end of file")
        if self.type_in_parts(a, self.line, "line"):
            self.finish(a, lambda: self.save(a))

    def check(self, desk: Desk) -> Verdict:
        got = self.content(desk)
        ok = got == [*self.original, self.line]
        return Verdict(ok, "line appended" if ok else "file differs", {"last": got[-2:]})


class EditorDeleteLine(EditorTask):
    name = "editor_delete_line"
    MISTAKES = ("wrong_element", "forgot_save", "wrong_then_recover")

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.file = f"{rng.choice(('list', 'names', 'queue'))}.txt"
        self.original = [f"{i + 1}. {name}" for i, name in enumerate(rng.sample(NAMES, rng.randint(4, 8)))]
        self.idx = rng.randrange(len(self.original))
        self.params = {"file": self.file, "delete": self.original[self.idx]}
        self.instruction = f"Delete the line \"{self.original[self.idx]}\" from {self.file} and save the file."

    def _delete(self, a: Actor, i: int) -> None:
        a.click(self.line_box(i, 0, 1), target=f"start of line {i + 1}")
        a.press("home", target="line start")
        a.hotkey("shift", "down", target="select the line")
        a.press("delete", target="delete the line")

    def play(self, a: Actor, desk: Desk) -> None:
        i = self.idx
        if self.mistake == "wrong_element":
            self.deviate(a, "wrong_element")
            i = i + 1 if i + 1 < len(self.original) else i - 1
        if self.mistake == "wrong_then_recover":
            self.deviate(a, "wrong_then_recover")
            j = i + 1 if i + 1 < len(self.original) else i - 1
            self._delete(a, j)
            a.hotkey("ctrl", "z", target="undo")
        self._delete(a, i)
        self.finish(a, lambda: self.save(a))

    def check(self, desk: Desk) -> Verdict:
        got = self.content(desk)
        want = [line for k, line in enumerate(self.original) if k != self.idx]
        ok = got == want
        return Verdict(ok, "line deleted" if ok else "file differs", {"lines": got})


# ---------------------------------------------------------------------------------------------------------------
# PCManFM (file manager)
# ---------------------------------------------------------------------------------------------------------------
PCMANFM_CONF = "[ui]\nview_mode=list\nshow_hidden=0\nside_pane_mode=places\nshow_statusbar=1\n"
EXTS = (".txt", ".pdf", ".csv", ".png", ".odt")


class FilesTask(Task):
    domain = "pcmanfm"
    apps = ("pcmanfm",)
    folder = "Documents"

    def make_files(self, desk: Desk, files: list[str], dirs: list[str] = ()) -> None:
        d = desk.home / self.folder
        d.mkdir(exist_ok=True)
        for name in dirs:
            (d / name).mkdir()
        for name in files:
            (d / name).write_text(f"{name}\n{self.rng.random()}\n")
        conf = desk.home / ".config" / "pcmanfm" / "default"
        conf.mkdir(parents=True, exist_ok=True)
        (conf / "pcmanfm.conf").write_text(PCMANFM_CONF)
        desk.own(desk.home / ".config")
        desk.own(d)

    def open(self, desk: Desk) -> None:
        self.win["main"] = desk.launch(["pcmanfm", str(desk.home / self.folder)], rf"^{self.folder}$")

    def listing(self, desk: Desk) -> list[str]:
        """Names in the order the list view shows them: folders first, then by name (case-insensitive)."""
        d = desk.home / self.folder
        return [p.name for p in sorted(d.iterdir(), key=lambda p: (not p.is_dir(), p.name.casefold()))
                if not p.name.startswith(".")]

    def row_box(self, desk: Desk, name: str) -> Box:
        i = self.listing(desk).index(name)
        w = self.win["main"]
        return (w.x + 192, w.y + 95 + 26 * i, min(7.5 * len(name), 160), 16)


def _fname(rng: random.Random) -> str:
    return f"{rng.choice(WORDS)}_{rng.choice(('2023', '2024', 'q1', 'q3', 'old', 'new'))}{rng.choice(EXTS)}"


class FilesRename(FilesTask):
    name = "files_rename"
    MISTAKES = ("wrong_file", "typo", "premature_stop")

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.files = sorted({_fname(rng) for _ in range(rng.randint(3, 7))})
        while len(self.files) < 3:
            self.files = sorted(set(self.files) | {_fname(rng)})
        self.src = rng.choice(self.files)
        stem, ext = self.src.rsplit(".", 1)
        self.dst = f"{rng.choice(WORDS)}_{rng.choice(('final', 'draft', 'archive'))}.{ext}"
        self.params = {"folder": self.folder, "from": self.src, "to": self.dst}
        self.instruction = f"In the {self.folder} folder, rename {self.src} to {self.dst}."

    def setup(self, desk: Desk) -> None:
        self.make_files(desk, self.files)

    def play(self, a: Actor, desk: Desk) -> None:
        src = self.src
        if self.mistake == "wrong_file":
            self.deviate(a, "wrong_file")
            src = self.rng.choice([f for f in self.files if f != self.src])
        a.click(self.row_box(desk, src), target=src)
        if self.rng.random() < 0.3:
            a.click(self.row_box(desk, src), button=3, target="context menu")
            menu = desk.display.wait_window("^pcmanfm$", timeout=10)
            # "Rename..." is the second item from the bottom whatever "Open With" lists above it.
            a.click(rel(menu, 30, menu.h - 49, 90, 16), target="Rename...")
        else:
            a.press("f2", target="Rename")
        desk.display.wait_window("Rename File", timeout=15)
        a.hotkey("ctrl", "a", target="select the name")
        dst = self.dst
        if self.mistake == "typo":
            self.deviate(a, "typo")
            stem, ext = dst.rsplit(".", 1)
            dst = f"{typo(stem, self.rng)}.{ext}"
        a.type(dst, target="new name")
        if self.mistake == "premature_stop":
            self.deviate(a, "premature_stop")
            a.done()
            return
        a.press("enter", target="OK")
        desk.display.wait_no_window("Rename File")
        a.done()

    def check(self, desk: Desk) -> Verdict:
        names = sorted(p.name for p in (desk.home / self.folder).iterdir())
        want = sorted([f for f in self.files if f != self.src] + [self.dst])
        ok = names == want
        return Verdict(ok, "renamed" if ok else "folder content differs", {"files": names})


class FilesMove(FilesTask):
    name = "files_move_to_folder"
    MISTAKES = ("wrong_file", "missed_item", "premature_stop")

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.ext = rng.choice(EXTS)
        self.dest = rng.choice(("Archive", "Reports", "Backup", "Shared"))
        picks = {f"{w}{self.ext}" for w in rng.sample(WORDS, rng.randint(2, 3))}
        others = {f"{w}{rng.choice([e for e in EXTS if e != self.ext])}" for w in rng.sample(WORDS, 3)}
        self.move = sorted(picks)
        self.files = sorted(picks | (others - picks))
        self.params = {"folder": self.folder, "move": self.move, "into": self.dest}
        self.instruction = f"Move every {self.ext} file in {self.folder} into the {self.dest} folder."

    def setup(self, desk: Desk) -> None:
        self.make_files(desk, self.files, [self.dest])

    def play(self, a: Actor, desk: Desk) -> None:
        picks = list(self.move)
        if self.mistake == "missed_item":
            picks = picks[:-1]
        a.click(self.row_box(desk, picks[0]), target=picks[0])
        for k, name in enumerate(picks[1:] + (["<extra>"] if self.mistake in ("wrong_file", "missed_item") else [])):
            if name == "<extra>":
                if self.mistake == "missed_item":
                    self.deviate(a, "missed_item")
                    break
                self.deviate(a, "wrong_file")
                name = self.rng.choice([f for f in self.files if f not in self.move])
            x, y = a._jitter(self.row_box(desk, name))

            def do(x: int = x, y: int = y) -> None:
                a.d.xdotool("mousemove", "--sync", str(x), str(y))
                a.d.xdotool("keydown", "ctrl", "click", "1", "keyup", "ctrl")

            a._step(f"pyautogui.keyDown('ctrl'); pyautogui.click(x={x}, y={y}); pyautogui.keyUp('ctrl')", "click",
                    do, x, y, target=f"add {name}")
        a.hotkey("ctrl", "x", target="cut")
        if self.mistake == "premature_stop":
            self.deviate(a, "premature_stop")
            a.done()
            return
        a.click(self.row_box(desk, self.dest), clicks=2, target=f"open {self.dest}")
        desk.display.wait_window(rf"^{self.dest}$", timeout=15)
        a.hotkey("ctrl", "v", target="paste")
        a.done()

    def check(self, desk: Desk) -> Verdict:
        d = desk.home / self.folder
        inside = sorted(p.name for p in (d / self.dest).iterdir())
        top = sorted(p.name for p in d.iterdir() if p.is_file())
        ok = inside == self.move and top == sorted(set(self.files) - set(self.move))
        return Verdict(ok, "moved" if ok else "wrong files moved", {"inside": inside, "left": top})


class FilesNewFolder(FilesTask):
    name = "files_new_folder"
    MISTAKES = ("typo", "premature_stop")

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.files = sorted({_fname(rng) for _ in range(rng.randint(1, 5))})
        self.new = f"{rng.choice(('Project', 'Photos', 'Invoices', 'Drafts'))} {rng.randint(2019, 2026)}"
        self.params = {"folder": self.folder, "create": self.new}
        self.instruction = f"Create a folder named \"{self.new}\" inside {self.folder}."

    def setup(self, desk: Desk) -> None:
        self.make_files(desk, self.files)

    def play(self, a: Actor, desk: Desk) -> None:
        a.move(rel(self.win["main"], 400, 200, 500, 300), target="look at the folder")
        a.hotkey("ctrl", "shift", "n", target="New Folder")
        desk.display.wait_window("Creating New Folder|New Folder", timeout=15)
        a.hotkey("ctrl", "a", target="select the default name")
        name = self.new
        if self.mistake == "typo":
            self.deviate(a, "typo")
            name = typo(name, self.rng)
        a.type(name, target="folder name")
        if self.mistake == "premature_stop":
            self.deviate(a, "premature_stop")
            a.press("esc", target="cancel")
            a.done()
            return
        a.press("enter", target="OK")
        a.done()

    def check(self, desk: Desk) -> Verdict:
        dirs = sorted(p.name for p in (desk.home / self.folder).iterdir() if p.is_dir())
        ok = dirs == [self.new]
        return Verdict(ok, "folder created" if ok else "folder missing or misnamed", {"folders": dirs})


class FilesDelete(FilesTask):
    name = "files_delete"
    MISTAKES = ("wrong_file", "premature_stop")

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.files = sorted({_fname(rng) for _ in range(rng.randint(3, 7))})
        while len(self.files) < 3:
            self.files = sorted(set(self.files) | {_fname(rng)})
        self.victim = rng.choice(self.files)
        self.params = {"folder": self.folder, "delete": self.victim}
        self.instruction = f"Delete {self.victim} from the {self.folder} folder (moving it to the trash is fine)."

    def setup(self, desk: Desk) -> None:
        self.make_files(desk, self.files)

    def play(self, a: Actor, desk: Desk) -> None:
        victim = self.victim
        if self.mistake == "wrong_file":
            self.deviate(a, "wrong_file")
            victim = self.rng.choice([f for f in self.files if f != self.victim])
        a.move(self.row_box(desk, victim), target=f"find {victim}")
        a.click(self.row_box(desk, victim), target=victim)
        a.press("delete", target="Delete")
        if self.mistake == "premature_stop":
            self.deviate(a, "premature_stop")
            a.done()
            return
        if self._confirm(desk):
            a.press("enter", target="confirm")
        a.done()

    @staticmethod
    def _confirm(desk: Desk) -> bool:
        """Whether PCManFM asks to confirm (it does by default; a build or setting may not)."""
        try:
            desk.display.wait_window("^Confirm|^Question|[Tt]rash", timeout=3)
        except DesktopError:
            return False
        return True

    def check(self, desk: Desk) -> Verdict:
        names = sorted(p.name for p in (desk.home / self.folder).iterdir())
        want = sorted(f for f in self.files if f != self.victim)
        ok = names == want
        return Verdict(ok, "deleted" if ok else "folder content differs", {"files": names})


# ---------------------------------------------------------------------------------------------------------------
# galculator (alone, and with the editor)
# ---------------------------------------------------------------------------------------------------------------
# galculator's basic-mode keypad fills its maximised window below the display: 5 equal columns from x=6 and 5 equal
# rows from y=143 (client pixels; measured at 1280x720, where a cell is 255x112 px).
GCALC_LEFT, GCALC_TOP = 6, 143
GCALC_KEYS = {"(": (0, 0), ")": (0, 1), "7": (1, 0), "8": (1, 1), "9": (1, 2), "/": (1, 3), "4": (2, 0),
              "5": (2, 1), "6": (2, 2), "*": (2, 3), "1": (3, 0), "2": (3, 1), "3": (3, 2), "-": (3, 3),
              "=": (3, 4), "0": (4, 0), ".": (4, 1), "+": (4, 3)}
OPS = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y}


def fmt_number(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.10g}"


class CalculatorTask(Task):
    domain = "multi_apps"
    apps = ("galculator",)

    def draw_numbers(self) -> None:
        self.op = self.rng.choice(sorted(OPS))
        self.x = self.rng.randint(12, 999)
        self.y = self.rng.randint(2, 99 if self.op == "*" else 999)
        self.result = OPS[self.op](self.x, self.y)

    def key_box(self, key: str) -> Box:
        r, c = GCALC_KEYS[key]
        w = self.win["calc"]
        cw, ch = (w.w - GCALC_LEFT) / 5, (w.h - GCALC_TOP) / 5
        h = 2 * ch if key == "=" else ch  # "=" spans the last two rows
        return (w.x + GCALC_LEFT + c * cw + 30, w.y + GCALC_TOP + r * ch + 20, cw - 60, h - 48)

    def open_calc(self, desk: Desk) -> None:
        self.win["calc"] = desk.launch(["galculator"], TITLES["galculator"])

    def compute(self, a: Actor, x: int, op: str, y: int) -> None:
        """Click the digits and operators on galculator's keypad (typing digits now and then)."""
        for part in (str(x), op, str(y), "="):
            if part.isdigit() and self.rng.random() < 0.25:
                a.type(part, target=f"type {part}")
                continue
            for ch in part:
                a.click(self.key_box(ch), target=f"key {ch}", settle=1.5)


class CalculatorClipboard(CalculatorTask):
    name = "galculator_copy_result"
    apps = ("galculator",)
    MISTAKES = ("wrong_element", "wrong_option", "premature_stop")

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.draw_numbers()
        word = {"+": "plus", "-": "minus", "*": "times"}[self.op]
        self.params = {"expression": f"{self.x} {self.op} {self.y}", "clipboard": fmt_number(self.result)}
        self.instruction = f"Use the calculator to compute {self.x} {word} {self.y} and copy the result."

    def setup(self, desk: Desk) -> None:
        pass

    def open(self, desk: Desk) -> None:
        self.open_calc(desk)

    def play(self, a: Actor, desk: Desk) -> None:
        x, op = self.x, self.op
        if self.mistake == "wrong_element":
            self.deviate(a, "wrong_element")
            s = str(x)
            i = self.rng.randrange(len(s))
            x = int(s[:i] + str((int(s[i]) + 1) % 10) + s[i + 1:]) or 1
        if self.mistake == "wrong_option":
            self.deviate(a, "wrong_option")
            op = self.rng.choice([o for o in OPS if OPS[o](self.x, self.y) != self.result])
        self.compute(a, x, op, self.y)
        if self.mistake == "premature_stop":
            self.deviate(a, "premature_stop")
            a.done()
            return
        a.hotkey("ctrl", "c", target="copy")
        a.done()

    def check(self, desk: Desk) -> Verdict:
        clip = desk.display.clipboard().strip()
        ok = chk.same_number(clip.replace(",", ""), self.result)
        return Verdict(ok, "clipboard holds the result" if ok else "clipboard differs", {"clipboard": clip[:50]})


class CalculatorToEditor(CalculatorTask, EditorTask):
    name = "galculator_to_editor"
    apps = ("galculator", "mousepad")
    MISTAKES = ("wrong_element", "forgot_save", "premature_stop")

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.draw_numbers()
        self.file = f"{rng.choice(('totals', 'results', 'ledger'))}.txt"
        self.original = [f"{n}: {rng.randint(10, 500)}" for n in rng.sample(NAMES, rng.randint(2, 4))]
        self.label = f"{rng.choice(('Total', 'Result', 'Sum'))}: "
        self.params = {"file": self.file, "expression": f"{self.x} {self.op} {self.y}",
                       "last_line": self.label + fmt_number(self.result)}
        self.instruction = (f"Compute {self.x} {self.op} {self.y} with the calculator and add a last line "
                            f"\"{self.label}<result>\" to {self.file}, then save it.")

    def setup(self, desk: Desk) -> None:
        EditorTask.setup(self, desk)

    def open(self, desk: Desk) -> None:
        EditorTask.open(self, desk)
        self.open_calc(desk)

    def play(self, a: Actor, desk: Desk) -> None:
        x = self.x
        if self.mistake == "wrong_element":
            self.deviate(a, "wrong_element")
            x += self.rng.choice((1, 10))
        self.compute(a, x, self.op, self.y)
        a.hotkey("ctrl", "c", target="copy the result")
        a.hotkey("alt", "tab", target="switch to the editor")
        a.hotkey("ctrl", "end", target="end of file")
        a.type(self.label, target="label")
        a.hotkey("ctrl", "v", target="paste the result")
        if self.mistake == "premature_stop":
            self.deviate(a, "premature_stop")
            a.done()
            return
        self.finish(a, lambda: self.save(a))

    def check(self, desk: Desk) -> Verdict:
        got = self.content(desk)
        ok = got[:-1] == self.original and got[-1].strip() == self.label + fmt_number(self.result)
        return Verdict(ok, "line added" if ok else "last line differs", {"last": got[-1:]})


# ---------------------------------------------------------------------------------------------------------------
# Chromium on local HTML files
# ---------------------------------------------------------------------------------------------------------------
FORM_HTML = """<!doctype html><html><head><meta charset="utf-8"><title>Rollscope form</title>
<style>body{{margin:0;font:16px 'DejaVu Sans',sans-serif;background:#f4f6f8}}
.card{{position:absolute;left:340px;top:40px;width:600px;background:#fff;border:1px solid #cdd3da;padding:0}}
h1{{font-size:22px;margin:0;padding:20px 24px;border-bottom:1px solid #e3e7eb}}
label{{position:absolute;left:24px;font-size:15px;color:#333}} input[type=text]{{position:absolute;left:200px;
width:360px;height:30px;font-size:15px;box-sizing:border-box}}
.opt{{position:absolute;left:200px;font-size:15px}} button{{position:absolute;left:200px;width:140px;height:38px;
font-size:16px}}</style></head><body><div class="card" style="height:{height}px">
<h1>{title}</h1><form action="submitted.html" method="get">{fields}
<button type="submit" style="top:{button_top}px">Submit</button></form></div></body></html>"""
DONE_HTML = """<!doctype html><html><head><meta charset="utf-8"><title>Rollscope form</title></head>
<body style="font:16px sans-serif;margin:40px">Thank you. Your request was received.</body></html>"""


class BrowserTask(Task):
    domain = "chrome"
    apps = ("chromium",)

    def open(self, desk: Desk) -> None:
        self.udd = desk.home / ".config" / "chromium-rs"
        argv = ["chromium", f"--user-data-dir={self.udd}", "--no-first-run", "--no-default-browser-check",
                "--disable-gpu", "--no-sandbox", "--test-type", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--password-store=basic", "--remote-debugging-port=0", "--remote-allow-origins=*",
                f"--app=file://{self.page}"]
        self.win["main"] = desk.launch(argv, r"Rollscope form|Chromium", timeout=90)

    def page_box(self, x: float, y: float, w: float, h: float) -> Box:
        """A box given in CSS pixels of the page (the --app window has no toolbar: the page is the client)."""
        return rel(self.win["main"], x, y, w, h)

    def url(self) -> str:
        urls = chk.devtools_urls(self.udd)
        return urls[0] if urls else ""


class BrowserForm(BrowserTask):
    name = "chrome_fill_form"
    MISTAKES = ("typo", "swapped_fields", "missed_item", "premature_stop")
    FIELD_TOP = 90
    FIELD_STEP = 56

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        first = rng.choice(NAMES)
        last = rng.choice(("Berg", "Costa", "Diaz", "Eriksen", "Fischer", "Garcia", "Haas", "Ito", "Jansen"))
        self.values = {"name": f"{first} {last}",
                       "email": f"{first.lower()}.{last.lower()}@{rng.choice(('example.org', 'mail.test'))}",
                       "city": rng.choice(("Lisbon", "Oslo", "Kyoto", "Quito", "Perth", "Lyon"))}
        self.plan = rng.choice(("basic", "team", "pro"))
        self.subscribe = rng.random() < 0.5
        self.params = {**self.values, "plan": self.plan, "newsletter": self.subscribe}
        news = " and subscribe to the newsletter" if self.subscribe else ""
        self.instruction = (f"Fill in the sign-up form with name {self.values['name']}, email "
                            f"{self.values['email']}, city {self.values['city']}, choose the {self.plan} plan"
                            f"{news}, then submit it.")

    def _layout(self) -> tuple[dict[str, int], dict[str, int], int, int]:
        tops = {k: self.FIELD_TOP + i * self.FIELD_STEP for i, k in enumerate(self.values)}
        y = self.FIELD_TOP + len(self.values) * self.FIELD_STEP
        plan_tops = {p: y + i * 30 for i, p in enumerate(("basic", "team", "pro"))}
        news_top = y + 3 * 30 + 16
        return tops, plan_tops, news_top, news_top + 50

    def setup(self, desk: Desk) -> None:
        tops, plan_tops, news_top, button_top = self._layout()
        fields = "".join(f'<label style="top:{t + 5}px">{k.capitalize()}</label>'
                         f'<input type="text" name="{k}" style="top:{t}px">' for k, t in tops.items())
        fields += f'<label style="top:{plan_tops["basic"]}px">Plan</label>' + "".join(
            f'<span class="opt" style="top:{t}px"><input type="radio" name="plan" value="{p}"> {p}</span>'
            for p, t in plan_tops.items())
        fields += (f'<span class="opt" style="top:{news_top}px"><input type="checkbox" name="newsletter"> '
                   "Send me the newsletter</span>")
        site = desk.home / "site"
        site.mkdir()
        (site / "signup.html").write_text(FORM_HTML.format(title="Create your account", fields=fields,
                                                           button_top=button_top, height=button_top + 70))
        (site / "submitted.html").write_text(DONE_HTML)
        desk.own(site)
        self.page = site / "signup.html"

    def play(self, a: Actor, desk: Desk) -> None:
        tops, plan_tops, news_top, button_top = self._layout()
        card_x, card_y = 340, 40
        order = list(self.values)
        values = dict(self.values)
        if self.mistake == "swapped_fields":
            values["name"], values["city"] = values["city"], values["name"]
        for k in order:
            if self.mistake == "swapped_fields" and k == "name":
                self.deviate(a, "swapped_fields")
            a.click(self.page_box(card_x + 205, card_y + tops[k] + 6, 340, 18), target=f"{k} field")
            text = values[k]
            if self.mistake == "typo" and k == "email":
                self.deviate(a, "typo")
                text = typo(text.split("@")[0], self.rng) + "@" + text.split("@")[1]
            a.type(text, target=k)
        a.click(self.page_box(card_x + 202, card_y + plan_tops[self.plan] + 3, 12, 12), target=f"plan {self.plan}")
        if self.subscribe:
            if self.mistake == "missed_item":
                self.deviate(a, "missed_item")
            else:
                a.click(self.page_box(card_x + 202, card_y + news_top + 3, 12, 12), target="newsletter")
        elif self.mistake == "missed_item":
            self.deviate(a, "missed_item")
            a.click(self.page_box(card_x + 202, card_y + news_top + 3, 12, 12), target="newsletter")
        if self.mistake == "premature_stop":
            self.deviate(a, "premature_stop")
            a.done()
            return
        a.click(self.page_box(card_x + 205, card_y + button_top + 6, 130, 26), target="Submit")
        a.done()

    def check(self, desk: Desk) -> Verdict:
        url = self.url()
        if "submitted.html" not in url:
            return Verdict(False, "form not submitted", {"url": url[-200:]})
        q = chk.query_of(url)
        ok = (all(q.get(k) == v for k, v in self.values.items()) and q.get("plan") == self.plan
              and ("newsletter" in q) == self.subscribe)
        return Verdict(ok, "submitted as asked" if ok else "submitted with other values", {"query": q})


class BrowserPick(BrowserTask):
    name = "chrome_pick_item"
    MISTAKES = ("wrong_element", "premature_stop")
    ROW_TOP = 120
    ROW_H = 44
    CONFIRM_TOP = 140

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.items = [(f"{rng.choice(WORDS).capitalize()} {rng.choice(('lamp', 'chair', 'desk', 'shelf', 'rug'))}",
                       rng.randint(15, 400)) for _ in range(rng.randint(4, 7))]
        self.items = list({n: (n, p) for n, p in self.items}.values())
        while len(self.items) < 3:
            self.items.append((f"Item {len(self.items)}", rng.randint(15, 400)))
        self.pick = rng.randrange(len(self.items))
        self.params = {"order": self.items[self.pick][0]}
        self.instruction = f"On the shop page, order the \"{self.items[self.pick][0]}\"."

    def setup(self, desk: Desk) -> None:
        rows = "".join(
            f'<div style="position:absolute;left:0;top:{self.ROW_TOP + i * self.ROW_H}px;width:600px;height:'
            f'{self.ROW_H - 4}px;border-bottom:1px solid #e3e7eb"><span style="position:absolute;left:24px;top:10px">'
            f'{n}</span><span style="position:absolute;left:330px;top:10px">${p}</span>'
            f'<a href="confirm.html?item={i}" style="position:absolute;left:470px;top:6px;width:100px;height:26px;'
            f'background:#2d6cdf;color:#fff;text-align:center;line-height:26px;text-decoration:none">Order</a></div>'
            for i, (n, p) in enumerate(self.items))
        html = FORM_HTML.format(title="Shop", fields=rows, button_top=-999,
                                height=self.ROW_TOP + len(self.items) * self.ROW_H + 30)
        html = html.replace('<button type="submit" style="top:-999px">Submit</button>', "")
        # The confirmation page reads the item from its own URL and submits it on (the same for every item).
        confirm = FORM_HTML.format(
            title="Confirm your order", button_top=self.CONFIRM_TOP, height=self.CONFIRM_TOP + 70,
            fields='<input type="hidden" name="order" id="order"><label style="top:90px">'
                   "Please confirm the item in your basket.</label>"
                   "<script>document.getElementById('order').value="
                   "new URLSearchParams(location.search).get('item')</script>")
        site = desk.home / "site"
        site.mkdir()
        (site / "shop.html").write_text(html)
        (site / "confirm.html").write_text(confirm.replace(">Submit<", ">Confirm order<"))
        (site / "submitted.html").write_text(DONE_HTML)
        self.page = site / "shop.html"

    def play(self, a: Actor, desk: Desk) -> None:
        i = self.pick
        row = self.page_box(340 + 24, 40 + self.ROW_TOP + i * self.ROW_H + 10, 120, 18)
        j = self.rng.randrange(len(self.items))
        a.move(self.page_box(340 + 24, 40 + self.ROW_TOP + j * self.ROW_H + 10, 120, 18), target="read a row")
        a.move(row, target="read the row")
        if self.mistake == "wrong_element":
            self.deviate(a, "wrong_element")
            i = i + 1 if i + 1 < len(self.items) else i - 1
        a.click(self.page_box(340 + 472, 40 + self.ROW_TOP + i * self.ROW_H + 8, 96, 22), target="Order")
        if self.mistake == "premature_stop":
            self.deviate(a, "premature_stop")
            a.done()
            return
        a.click(self.page_box(340 + 205, 40 + self.CONFIRM_TOP + 6, 130, 26), target="Confirm order")
        a.done()

    def check(self, desk: Desk) -> Verdict:
        url = self.url()
        q = chk.query_of(url)
        ok = "submitted.html" in url and q.get("order") == str(self.pick)
        return Verdict(ok, "ordered the item" if ok else "no or another order", {"url": url[-120:]})


SETTINGS = ("Send usage statistics", "Show desktop notifications", "Auto-play videos", "Dark mode",
            "Offer to save passwords", "Block pop-up windows", "Sync bookmarks", "Allow location access",
            "Two-step sign-in", "Check spelling", "Compact layout", "Weekly email digest")
SAVED_HTML = """<!doctype html><html><head><meta charset="utf-8"><title>Rollscope form</title></head>
<body style="font:16px sans-serif;margin:40px">Settings saved.</body></html>"""


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text.lower())


class BrowserSettings(BrowserTask):
    """A settings page with many toggles: exactly one named toggle is to be switched, then the page saved."""

    name = "chrome_settings_toggle"
    MISTAKES = ("wrong_element", "premature_stop", "wrong_then_recover")
    ROW_TOP = 84
    ROW_H = 40
    BOX_LEFT = 470

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.settings = rng.sample(SETTINGS, rng.randint(7, 10))
        self.initial = {s: rng.random() < 0.5 for s in self.settings}
        self.pick = rng.randrange(len(self.settings))
        name = self.settings[self.pick]
        self.turn_on = not self.initial[name]
        self.want = {s: (not v if s == name else v) for s, v in self.initial.items()}
        self.params = {"setting": name, "turn": "on" if self.turn_on else "off",
                       "others": "unchanged", "enabled_after": sorted(s for s, v in self.want.items() if v)}
        self.instruction = (f"On the settings page, turn {'on' if self.turn_on else 'off'} \"{name}\", leave "
                            "everything else as it is, and save the settings.")

    def button_top(self) -> int:
        return self.ROW_TOP + len(self.settings) * self.ROW_H + 14

    def setup(self, desk: Desk) -> None:
        fields = "".join(
            f'<label style="top:{self.ROW_TOP + i * self.ROW_H}px">{s}</label>'
            f'<span class="opt" style="top:{self.ROW_TOP + i * self.ROW_H}px;left:{self.BOX_LEFT}px">'
            f'<input type="checkbox" name="{_slug(s)}"{" checked" if self.initial[s] else ""}></span>'
            for i, s in enumerate(self.settings))
        html = FORM_HTML.format(title="Settings", fields=fields, button_top=self.button_top(),
                                height=self.button_top() + 70)
        html = html.replace('action="submitted.html"', 'action="saved.html"').replace(">Submit<", ">Save<")
        site = desk.home / "site"
        site.mkdir()
        (site / "settings.html").write_text(html)
        (site / "saved.html").write_text(SAVED_HTML)
        desk.own(site)
        self.page = site / "settings.html"

    def box(self, i: int) -> Box:
        return self.page_box(340 + self.BOX_LEFT + 2, 40 + self.ROW_TOP + i * self.ROW_H + 3, 12, 12)

    def play(self, a: Actor, desk: Desk) -> None:
        i = self.pick
        other = i + 1 if i + 1 < len(self.settings) else i - 1
        a.move(self.page_box(340 + 24, 40 + 20, 200, 24), target="read the page title")
        a.move(self.page_box(340 + 24, 40 + self.ROW_TOP + i * self.ROW_H, 180, 16),
               target=f"find \"{self.settings[i]}\"")
        if self.mistake == "wrong_element":
            self.deviate(a, "wrong_element")
            i = other
        if self.mistake == "wrong_then_recover":
            self.deviate(a, "wrong_then_recover")
            a.click(self.box(other), target=f"toggle \"{self.settings[other]}\"")
            a.click(self.box(other), target=f"toggle \"{self.settings[other]}\" back")
        a.click(self.box(i), target=f"toggle \"{self.settings[i]}\"")
        if self.mistake == "premature_stop":
            self.deviate(a, "premature_stop")
            a.done()
            return
        a.click(self.page_box(340 + 205, 40 + self.button_top() + 6, 130, 26), target="Save")
        a.move(self.page_box(60, 30, 300, 30), target="read the confirmation")
        a.done()

    def check(self, desk: Desk) -> Verdict:
        url = self.url()
        if "saved.html" not in url:
            return Verdict(False, "settings not saved", {"url": url[-200:]})
        q = chk.query_of(url)
        on = sorted(s for s in self.settings if _slug(s) in q)
        ok = on == self.params["enabled_after"]
        return Verdict(ok, "saved with only that setting changed" if ok else "saved with other settings",
                       {"enabled": on})


CODE_HTML = """<!doctype html><html><head><meta charset="utf-8"><title>Rollscope form</title>
<style>body{{margin:0;font:16px 'DejaVu Sans',sans-serif;background:#f4f6f8}}
.card{{position:absolute;left:340px;top:40px;width:600px;height:{height}px;background:#fff;border:1px solid #cdd3da}}
h1{{font-size:22px;margin:0;padding:20px 24px;border-bottom:1px solid #e3e7eb}}
.k{{position:absolute;left:24px;color:#555}} .v{{position:absolute;left:260px;font:20px 'DejaVu Sans Mono',monospace;
user-select:all}}</style></head><body><div class="card"><h1>{title}</h1>{rows}</div></body></html>"""


class BrowserToEditor(BrowserTask, EditorTask):
    """Copy a code shown on a local web page (Chromium) into a text file (Mousepad) and save it."""

    name = "chrome_code_to_editor"
    domain = "multi_apps"
    apps = ("chromium", "mousepad")
    MISTAKES = ("wrong_element", "typo", "forgot_save", "premature_stop")
    ROW_TOP = 90
    ROW_H = 48

    def __init__(self, rng: random.Random, mistake: str | None):
        super().__init__(rng, mistake)
        self.file = f"{rng.choice(('orders', 'tickets', 'notes', 'receipts'))}.txt"
        alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
        kinds = rng.sample(("Order number", "Tracking code", "Customer ID", "Invoice number", "Voucher code"), 3)
        self.codes = {k: "".join(rng.choice(alphabet) for _ in range(rng.randint(7, 10))) for k in kinds}
        self.kind = kinds[rng.randrange(3)]
        self.code = self.codes[self.kind]
        self.original = [f"{rng.choice(('Shop', 'Support', 'Billing'))} {rng.choice(NAMES)}: "
                         f"{rng.choice(('pending', 'done', 'open'))}" for _ in range(rng.randint(1, 4))]
        self.label = f"{self.kind}: "
        self.params = {"file": self.file, "copy": self.kind, "last_line": self.label + self.code}
        self.instruction = (f"Copy the {self.kind.lower()} shown on the order page into {self.file} as a new last "
                            f"line \"{self.label}<code>\", then save the file.")

    def setup(self, desk: Desk) -> None:
        EditorTask.setup(self, desk)
        rows = "".join(f'<span class="k" style="top:{self.ROW_TOP + i * self.ROW_H + 3}px">{k}</span>'
                       f'<span class="v" style="top:{self.ROW_TOP + i * self.ROW_H}px">{v}</span>'
                       for i, (k, v) in enumerate(self.codes.items()))
        site = desk.home / "site"
        site.mkdir()
        (site / "order.html").write_text(CODE_HTML.format(title="Your order", rows=rows,
                                                          height=self.ROW_TOP + 3 * self.ROW_H + 20))
        desk.own(site)
        self.page = site / "order.html"

    def open(self, desk: Desk) -> None:
        EditorTask.open(self, desk)
        self.win["editor"] = self.win["main"]
        BrowserTask.open(self, desk)  # opened last: the browser has the focus, Alt+Tab goes to the editor

    def play(self, a: Actor, desk: Desk) -> None:
        kinds = list(self.codes)
        i = kinds.index(self.kind)
        a.move(self.page_box(340 + 24, 40 + self.ROW_TOP + i * self.ROW_H + 3, 140, 18),
               target=f"find the {self.kind.lower()}")
        if self.mistake == "wrong_element":
            self.deviate(a, "wrong_element")
            i = i + 1 if i + 1 < len(kinds) else i - 1
        code = self.codes[kinds[i]]
        by_hand = self.mistake == "typo" or self.rng.random() < 0.25
        if not by_hand:
            a.click(self.page_box(340 + 262, 40 + self.ROW_TOP + i * self.ROW_H + 4, 12.0 * len(code) - 4, 18),
                    clicks=2, target="select the code")
            a.hotkey("ctrl", "c", target="copy")
        a.hotkey("alt", "tab", target="switch to the editor")
        a.hotkey("ctrl", "end", target="end of file")
        if self.mistake == "premature_stop":
            self.deviate(a, "premature_stop")
            a.done()
            return
        a.type(self.label, target="label")
        if by_hand:
            if self.mistake == "typo":
                self.deviate(a, "typo")
                code = typo(code, self.rng)
            a.type(code, target="type the code")
        else:
            a.hotkey("ctrl", "v", target="paste the code")
        self.finish(a, lambda: a.hotkey("ctrl", "s", target="save"))

    def check(self, desk: Desk) -> Verdict:
        got = self.content(desk)
        ok = got[:-1] == self.original and got[-1].strip() == self.label + self.code
        return Verdict(ok, "code added" if ok else "last line differs", {"last": got[-1:]})


TASKS: dict[str, type[Task]] = {t.name: t for t in (
    CalcEnterValues, CalcFormula, CalcSort, CalcBoldHeader, CalcRowFormula, CalcFillTable, CalcInsertChart,
    WriterBoldWord, WriterReplace, WriterAppend, WriterSaveAsOdt,
    EditorReplace, EditorAppend, EditorDeleteLine,
    FilesRename, FilesMove, FilesNewFolder, FilesDelete,
    CalculatorClipboard, CalculatorToEditor,
    BrowserForm, BrowserPick, BrowserSettings, BrowserToEditor)}

#: Every mistake kind any task makes (for reports).
MISTAKE_TYPES = tuple(sorted({m for t in TASKS.values() for m in t.MISTAKES}))
