"""Model → Judge settings…: which judge the app scores with, and its options, as fields.

:class:`JudgeSettingsDialog` lists the judges installed (:mod:`gui_app.judges.registry`: Rollscope's own and any
package's ``rollscope.judges`` entry point) and, for each, a form built from the options it declares: a choice list
for an option with few values, a line for the others (its default as the placeholder: left empty, the default holds
and a later default reaches it). The built-in model's weights are not a field: they are the active model (Model →
Use model…), one setting for both.

**The API key is never a field.** A judge that sends one reads it from the environment variable its ``api-key-env``
option names (``OPENAI_API_KEY`` by default), else the system keyring; the dialog says which variable and whether it
is set here, never its value. An option a judge might declare for a secret itself (``api-key``, ``token``,
``password``, ...) is not shown as a field either: the dialog says to set it in the environment.

OK checks the options as ``rollscope score --judge`` does (:func:`gui_app.judges.registry.resolve_options`): an
option it does not accept, or a required one missing, is said under the form and the dialog stays open. What it
returns (:meth:`JudgeSettingsDialog.choice`) is what the settings keep: the judge, and the options that differ from
its defaults.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from PySide6.QtWidgets import (QComboBox, QDialog, QDialogButtonBox, QFormLayout, QLabel, QLineEdit, QStackedWidget,
                               QVBoxLayout, QWidget)

from gui_app.judges.registry import DEFAULT_JUDGE, JudgeError, JudgeOption, JudgeSpec, resolve_options

# An option named for a secret: never a field (a judge reads its secrets from the environment or the keyring).
_SECRET = re.compile(r"(^|[-_])(api[-_]?key|key|secret|password|passwd|token)$", re.IGNORECASE)
# The option naming the environment variable that holds a judge's API key (openai-compatible's).
KEY_ENV_OPTION = "api-key-env"
# The built-in model's weights: the active model, set with Model → Use model… (not a second setting).
BUILTIN_MODEL_OPTION = "model"


def is_secret(option: JudgeOption) -> bool:
    """Whether ``option`` would hold a secret itself (``api-key``, ``token``, ...), not the name of a variable."""
    return bool(_SECRET.search(option.name))


def installed() -> tuple[list[JudgeSpec], list[str]]:
    """The judges installed, the default first, and one line for each that cannot be imported."""
    from gui_app.judges.registry import names, spec

    found, broken = [], []
    for name in names():
        try:
            found.append(spec(name))
        except JudgeError as exc:
            broken.append(str(exc))
    return found, broken


class JudgeSettingsDialog(QDialog):
    """The judge the app scores with and its options (see the module docstring).

    Args:
        specs: the judges to offer (:func:`installed`).
        chosen: the judge chosen now ('' or unknown: the built-in model).
        saved: per judge, the options saved for it.
        active_model: the built-in model's weights folder (None: the shipped weights), shown, not edited.
        environ: where API keys are looked for (default: this process's environment, as the judge reads it when
            it loads), to say whether one is set.
    """

    def __init__(self, specs: list[JudgeSpec], chosen: str, saved: Mapping[str, Mapping[str, str]],
                 active_model: str | None = None, broken: list[str] | None = None,
                 environ: Mapping[str, str] | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Judge settings")
        self.specs = {s.name: s for s in specs}
        self.environ = environ  # None: this process's environment, read when the note is written
        self.judge = QComboBox(self)
        self.pages = QStackedWidget(self)
        # judge -> option -> its field (QLineEdit or QComboBox)
        self.fields: dict[str, dict[str, QLineEdit | QComboBox]] = {}
        self.key_note = QLabel(self)
        self.key_note.setWordWrap(True)
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        self.error = QLabel(self)
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #c62828")
        for s in specs:
            self.judge.addItem(s.name, s.name)
            self.pages.addWidget(self._page(s, saved.get(s.name, {}), active_model))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self)
        buttons.accepted.connect(self._check_and_accept)
        buttons.rejected.connect(self.reject)
        self.buttons = buttons
        top = QFormLayout()
        top.addRow("Score with", self.judge)
        box = QVBoxLayout(self)
        box.addLayout(top)
        box.addWidget(self.summary)
        box.addWidget(self.pages)
        box.addWidget(self.key_note)
        if broken:
            box.addWidget(QLabel("Not offered (cannot be imported): " + "; ".join(broken), self))
        box.addWidget(self.error)
        box.addWidget(buttons)
        self.judge.currentIndexChanged.connect(self._shown)
        names = [s.name for s in specs]
        self.judge.setCurrentIndex(names.index(chosen) if chosen in names else
                                   names.index(DEFAULT_JUDGE) if DEFAULT_JUDGE in names else 0)
        self._shown()

    def _page(self, judge: JudgeSpec, saved: Mapping[str, str], active_model: str | None) -> QWidget:
        page = QWidget(self)
        form = QFormLayout(page)
        fields: dict[str, QLineEdit | QComboBox] = {}
        for opt in judge.options:
            label = opt.name + (" *" if opt.required else "")
            if judge.name == DEFAULT_JUDGE and opt.name == BUILTIN_MODEL_OPTION:
                note = QLabel(f"the active model: {active_model or 'the shipped weights'} (Model → Use model…)", page)
                note.setWordWrap(True)
                form.addRow(label, note)
                continue
            if is_secret(opt):
                form.addRow(label, QLabel("set it in the environment: it is never typed here or saved", page))
                continue
            value = saved.get(opt.name)
            widget: QLineEdit | QComboBox
            if opt.choices:
                widget = QComboBox(page)
                for choice in opt.choices:
                    widget.addItem(choice + (" (default)" if choice == opt.default else ""), choice)
                widget.setCurrentIndex(max(0, widget.findData(value if value in opt.choices else opt.default)))
            else:
                widget = QLineEdit(page)
                widget.setPlaceholderText(opt.default or ("required" if opt.required else ""))
                widget.setText(value or "")
                if opt.name == KEY_ENV_OPTION:
                    widget.textChanged.connect(lambda _t: self._shown())
            widget.setObjectName(f"{judge.name}:{opt.name}")
            widget.setToolTip(opt.help)
            form.addRow(label, widget)
            fields[opt.name] = widget
        if not judge.options:
            form.addRow(QLabel("This judge takes no options.", page))
        self.fields[judge.name] = fields
        return page

    @property
    def chosen(self) -> str:
        return str(self.judge.currentData())

    def _shown(self) -> None:
        self.pages.setCurrentIndex(self.judge.currentIndex())
        judge = self.specs[self.chosen]
        self.summary.setText(judge.summary + (f" (needs pip install 'rollscope[{judge.extra}]')" if judge.extra
                                              else ""))
        self.key_note.setText(self.key_text(judge))
        self.error.clear()

    def key_text(self, judge: JudgeSpec) -> str:
        """Where the judge's API key comes from (never its value), or that it needs none."""
        if KEY_ENV_OPTION not in judge.option_names():
            return "This judge sends no API key."
        var = self.values(judge.name).get(KEY_ENV_OPTION) or next(
            o.default for o in judge.options if o.name == KEY_ENV_OPTION) or ""
        state = "set" if (os.environ if self.environ is None else self.environ).get(var) else "not set"
        return (f"API key: read from the environment variable ${var} ({state} for this app), else the system "
                "keyring (service rollscope, user: the endpoint's host). It is never a field here and never saved; "
                "a local server needs none.")

    def values(self, name: str) -> dict[str, str]:
        """The options typed for the judge ``name`` (an empty line: its default)."""
        out = {}
        for opt, widget in self.fields.get(name, {}).items():
            value = widget.currentData() if isinstance(widget, QComboBox) else widget.text().strip()
            if value:
                out[opt] = str(value)
        return out

    def choice(self) -> tuple[str, dict[str, str]]:
        """The judge chosen and the options to keep for it: those that differ from its defaults."""
        judge = self.specs[self.chosen]
        defaults = {o.name: o.default for o in judge.options}
        return judge.name, {k: v for k, v in self.values(judge.name).items() if v != defaults.get(k)}

    def _check_and_accept(self) -> None:
        name, options = self.choice()
        try:
            resolve_options(self.specs[name], options)
        except JudgeError as exc:
            self.error.setText(str(exc))
            return
        self.accept()
