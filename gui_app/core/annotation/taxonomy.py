"""Labelling taxonomies as data: load a YAML or JSON file, validate it, look labels up by code or key hint.

A taxonomy is a tree of labels (``gui_app/resources/taxonomies/taxonomy.schema.json``). Labels are keyed by ``code``
(names change between versions of a taxonomy; codes do not) and stored in annotations as
``"<taxonomy name>:<code>"``. Every selectable label (a leaf) has a key hint: the digits typed in the label
panel to toggle it. Hints are prefix-free so typing is unambiguous: ``"1"`` and ``"12"`` cannot both exist.
When a file gives no hints they are assigned: flat taxonomies get ``1..9``, trees get group digit + label digit.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from gui_app.core.errors import RollscopeError
from gui_app.core.safety import BadJSON, parse_json

BUNDLED_DIR = Path(__file__).resolve().parents[2] / "resources" / "taxonomies"  # package data: in the wheel
SCHEMA_PATH = BUNDLED_DIR / "taxonomy.schema.json"
DEFAULT_TAXONOMY = "computer_use"
# The bundled harm taxonomy of the safety verdict (OS-Harm): its group ``category`` holds where the harm came from (a
# record's ``harm_category``, one bare code), its group ``type`` what was done (a record's ``harm_types``, label ids).
HARM_TAXONOMY = "harm"
HARM_CATEGORIES = "category"
HARM_TYPES = "type"


class TaxonomyError(RollscopeError):
    """A taxonomy file is malformed: names the file, the field (dotted path) and, for YAML/JSON, the line."""

    def __init__(self, path: str | Path, field: str | None, reason: str, line: int | None = None):
        self.path, self.field, self.reason, self.line = str(path), field, reason, line
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: field '{field}': {reason}" if field else f"{where}: {reason}")


@dataclass
class Label:
    """One node of a taxonomy.

    Attributes:
        code: stable identifier inside the taxonomy.
        name: human-readable name (current version).
        description: what the label means.
        key: key hint (digits) for selectable labels; None for groups.
        aliases: other names (older versions, other spellings).
        names: the name each taxonomy version used.
        children: sub-labels; a label with children is a group and is not itself selectable.
        parent: the code of the enclosing group, or None at the top.
    """

    code: str
    name: str
    description: str = ""
    key: str | None = None
    aliases: list[str] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    children: list[Label] = field(default_factory=list)
    parent: str | None = None

    @property
    def is_group(self) -> bool:
        return bool(self.children)


@dataclass
class Taxonomy:
    """A loaded, validated taxonomy.

    Attributes:
        name: identifier, the prefix of stored labels.
        version: file version.
        title: display title.
        labels: top-level labels (groups or leaves).
        source: where it comes from.
        description: what it is for.
        multi_select: whether several labels may be selected at once.
        path: the file it was loaded from (None when built in memory).
    """

    name: str
    version: str
    title: str
    labels: list[Label]
    source: str = ""
    description: str = ""
    multi_select: bool = True
    path: str | None = None

    def walk(self) -> Iterator[Label]:
        """Every label, depth first, groups before their children."""
        stack = list(reversed(self.labels))
        while stack:
            lab = stack.pop()
            yield lab
            stack.extend(reversed(lab.children))

    def leaves(self) -> list[Label]:
        """The selectable labels, in display order."""
        return [lab for lab in self.walk() if not lab.is_group]

    def get(self, code: str) -> Label | None:
        """The label with ``code`` (a bare code or a stored ``name:code`` string), or None."""
        return self._by_code().get(self.code_of(code))

    def by_key(self, key: str) -> Label | None:
        """The selectable label whose key hint is ``key``, or None."""
        return next((lab for lab in self.leaves() if lab.key == key), None)

    def is_key_prefix(self, digits: str) -> bool:
        """Whether ``digits`` starts some longer key hint (the panel then waits for the next digit)."""
        return any(lab.key and lab.key != digits and lab.key.startswith(digits) for lab in self.leaves())

    def label_id(self, code: str) -> str:
        """The stored form of a label: ``"<taxonomy>:<code>"``."""
        return f"{self.name}:{self.code_of(code)}"

    def code_of(self, label_id: str) -> str:
        """The bare code of a stored label id (or of a bare code)."""
        prefix = self.name + ":"
        return label_id[len(prefix):] if label_id.startswith(prefix) else label_id

    def groups(self) -> list[Label]:
        """Top-level groups (the 'modules' of AgentErrorTaxonomy): used for root-cause module/error type."""
        return [lab for lab in self.labels if lab.is_group]

    def resolve_name(self, name: str) -> Label | None:
        """Find a label by any of its names (current, per-version, alias), case-insensitively."""
        want = name.strip().lower()
        for lab in self.walk():
            if want in {lab.name.lower(), *(a.lower() for a in lab.aliases), *(n.lower() for n in lab.names.values())}:
                return lab
        return None

    def _by_code(self) -> dict[str, Label]:
        return {lab.code: lab for lab in self.walk()}


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def _line_of(path: Path, text: str, parts: list[Any]) -> int | None:
    """1-based line of the node at ``parts`` (keys/indices) in a YAML/JSON text, or None.

    JSON is YAML, so one walk over the YAML node tree serves both.
    """
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return None
    line = None if node is None else node.start_mark.line + 1
    for part in parts:
        if isinstance(node, yaml.MappingNode):
            nxt = next((v for k, v in node.value if getattr(k, "value", None) == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            nxt = node.value[part]
        else:
            nxt = None
        if nxt is None:
            break
        node, line = nxt, nxt.start_mark.line + 1
    return line


def _dotted(parts: list[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(root)"


def parse(data: Any, path: str | Path = "<memory>", text: str | None = None) -> Taxonomy:
    """Validate a taxonomy given as plain data and build it.

    Args:
        data: the parsed YAML/JSON document.
        path: where it came from (for error messages).
        text: the raw text, to report line numbers.

    Raises:
        TaxonomyError: naming the file, the field and the line when known.
    """
    path = Path(path)

    def fail(parts: list[Any], reason: str) -> TaxonomyError:
        return TaxonomyError(path, _dotted(parts), reason, _line_of(path, text, parts) if text else None)

    if not isinstance(data, dict):
        raise TaxonomyError(path, None, f"expected a mapping at the top, got {type(data).__name__}")
    errors = sorted(jsonschema.Draft202012Validator(_schema()).iter_errors(data),
                    key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if errors:
        err = errors[0]
        parts = list(err.absolute_path)
        if err.validator == "required":  # name the missing field itself
            missing = err.message.split("'")[1] if "'" in err.message else None
            raise TaxonomyError(path, _dotted([*parts, missing] if missing else parts), "required field is missing",
                                _line_of(path, text, parts) if text else None)
        if err.validator == "additionalProperties":
            raise fail(parts, f"unknown field ({err.message})")
        raise fail(parts, err.message)

    seen_codes: dict[str, list[Any]] = {}

    def build(items: list[dict[str, Any]], parts: list[Any], parent: str | None) -> list[Label]:
        out = []
        for i, raw in enumerate(items):
            here = [*parts, i]
            code = str(raw["code"]).strip()
            if not code or ":" in code:
                raise fail([*here, "code"], "a code must be non-empty and may not contain ':'")
            if code in seen_codes:
                raise fail([*here, "code"], f"duplicate code {code!r} (first at {_dotted(seen_codes[code])})")
            seen_codes[code] = here
            key = None if raw.get("key") is None else str(raw["key"])
            if key is not None and not key.isdigit():
                raise fail([*here, "key"], f"a key hint must be digits, got {key!r}")
            lab = Label(code=code, name=raw["name"], description=raw.get("description", ""), key=key,
                        aliases=list(raw.get("aliases", [])),
                        names={str(k): v for k, v in raw.get("names", {}).items()},
                        parent=parent)
            lab.children = build(raw.get("children", []), [*here, "children"], code)
            if lab.children and key is not None:
                raise fail([*here, "key"], "a group (a label with children) is not selectable and takes no key")
            out.append(lab)
        return out

    labels = build(data["labels"], ["labels"], None)
    tax = Taxonomy(name=data["name"], version=str(data["version"]), title=str(data.get("title", data["name"])),
                   labels=labels, source=data.get("source", ""), description=data.get("description", ""),
                   multi_select=bool(data.get("multi_select", True)), path=str(path))
    _assign_keys(tax)
    _check_keys(tax, fail, seen_codes)
    return tax


def _assign_keys(tax: Taxonomy) -> None:
    """Give key hints to leaves that have none: 1..9 when flat, group digit + position when nested."""
    if all(lab.key for lab in tax.leaves()):
        return
    # Single digits run out past 9: later labels keep no hint and are toggled by clicking.
    for gi, top in enumerate(tax.labels, start=1):
        if top.is_group:
            for ci, child in enumerate(_leaves_under(top), start=1):
                if not child.key and gi <= 9 and ci <= 9:
                    child.key = f"{gi}{ci}"
        elif not top.key and gi <= 9:
            top.key = str(gi)


def _leaves_under(lab: Label) -> list[Label]:
    out, stack = [], list(reversed(lab.children))
    while stack:
        node = stack.pop()
        if node.is_group:
            stack.extend(reversed(node.children))
        else:
            out.append(node)
    return out


def _check_keys(tax: Taxonomy, fail: Any, where: dict[str, list[Any]]) -> None:
    keyed = [(lab, lab.key) for lab in tax.leaves() if lab.key]
    for lab, key in keyed:
        for other, other_key in keyed:
            if other is lab:
                continue
            if other_key == key:
                raise fail([*where[other.code], "key"], f"key hint {other_key!r} is used by {lab.code!r} too")
            if other_key.startswith(key):
                raise fail([*where[other.code], "key"],
                           f"key hint {other_key!r} starts with {key!r} (the key of {lab.code!r}); "
                           "hints must be prefix-free")


def load(path: str | Path) -> Taxonomy:
    """Load and validate a taxonomy file (``.yaml``/``.yml`` or ``.json``).

    Raises:
        TaxonomyError: unreadable, unparsable or invalid file (names file, field and line).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaxonomyError(path, None, f"cannot read: {exc.strerror or exc}") from exc
    try:
        if path.suffix.lower() == ".json":
            data = parse_json(text)
        else:
            data = yaml.safe_load(text)
    except BadJSON as exc:
        raise TaxonomyError(path, None, exc.reason, exc.line) from None
    except RecursionError:
        raise TaxonomyError(path, None, "nested too deeply to read") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise TaxonomyError(path, None, f"invalid YAML: {getattr(exc, 'problem', None) or exc}",
                            None if mark is None else mark.line + 1) from exc
    return parse(data, path, text)


def bundled() -> dict[str, Path]:
    """The taxonomies shipped with Rollscope: name -> file."""
    return {p.stem: p for p in sorted(BUNDLED_DIR.glob("*.yaml"))}


def harm() -> Taxonomy:
    """The bundled harm taxonomy (:data:`HARM_TAXONOMY`).

    Raises:
        TaxonomyError: the file is missing one of its two groups (:data:`HARM_CATEGORIES`, :data:`HARM_TYPES`).
    """
    tax = get(HARM_TAXONOMY)
    for group in (HARM_CATEGORIES, HARM_TYPES):
        found = tax.get(group)
        if found is None or not found.is_group:
            raise TaxonomyError(tax.path or HARM_TAXONOMY, "labels", f"the harm taxonomy has no group {group!r}")
    return tax


def harm_labels(tax: Taxonomy, group: str) -> list[Label]:
    """The selectable labels of one group of the harm taxonomy ``tax`` (:data:`HARM_CATEGORIES` or
    :data:`HARM_TYPES`), in display order."""
    found = tax.get(group)
    return [] if found is None else _leaves_under(found)


def get(name_or_path: str | Path | None = None) -> Taxonomy:
    """A bundled taxonomy by name (default :data:`DEFAULT_TAXONOMY`) or a user's file by path."""
    name_or_path = name_or_path or DEFAULT_TAXONOMY
    found = bundled().get(str(name_or_path))
    if found is not None:
        return load(found)
    p = Path(name_or_path)
    if p.exists():
        return load(p)
    raise TaxonomyError(p, None, f"no such taxonomy file, and not a bundled taxonomy ({', '.join(bundled())})")
