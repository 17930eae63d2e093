"""Inspect AI ``.eval`` logs: a zip of JSON, one trajectory per sample (``FILE#N`` is the N-th, 0-based).

The archive, as ``inspect_ai/log/_recorders/eval.py`` writes it: ``header.json`` (``version``, ``status``, ``eval``
{task, model, created, dataset...}, ``plan``, ``results``, ``stats``; absent while the eval is still running, when
``_journal/start.json`` holds the spec), ``samples/<id>_epoch_<n>.json`` (``id``, ``epoch``, ``input``, ``target``,
``messages``, ``output``, ``scores``, ``metadata``, ``events``, ``model_usage``, ``attachments``...),
``summaries.json``, ``reductions.json`` and ``_journal/``. Samples are numbered by id, then epoch.

Mapping (``inspect_ai/model/_chat_message.py``): every tool call of an assistant message is one step (an assistant
message without tool calls is one ``message`` step); its screenshot is the first image in the ``tool`` message
answering that call (``tool_call_id``): Inspect's ``computer`` tool returns ``[ContentText, ContentImage]``, the
screen after the action. The first user message is the instruction. Images are data URIs, or
``attachment://<hash>`` references into the sample's ``attachments`` (Inspect moves large content there); they are
written once, named by content hash, to the cache (:mod:`gui_app.core.cache`) so the viewer can open them. A load
that only lists runs (``align=False``, as a scan does) writes no images and leaves screenshots unset.

The outcome is the first scorer's value: ``C``/``I`` (correct/incorrect), ``P`` (partial, 0.5), a number or a
boolean; a success is a value of 1. Model-graded scorers (``model_graded_*``) are ``source='model'``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import re
import zipfile
import zlib
from functools import partial
from pathlib import Path
from typing import Any

from gui_app.core import cache
from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory.formats import _common as c
from gui_app.core.media.images import data_problem
from gui_app.core.safety import MAX_TEXT_BYTES
from gui_app.core.trajectory.model import Outcome, Step, Trajectory

HEADER = "header.json"
START = "_journal/start.json"
ATTACHMENT = "attachment://"
_SAMPLE = re.compile(r"^samples/(.+)_epoch_(\d+)\.json$")
_DATA_URI = re.compile(r"^data:image/(png|jpe?g|webp|gif);base64,", re.I)
# Inspect's value_to_float: letter grades first, then numbers and booleans.
_GRADES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0, "YES": 1.0, "NO": 0.0, "TRUE": 1.0, "FALSE": 0.0}


def score_value(value: Any) -> float | None:
    """A scorer's value as a number (Inspect's ``value_to_float`` reading), or None when it has none."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        try:
            out = float(value)
        except OverflowError:  # an integer past a float's range is no score
            return None
        return out if math.isfinite(out) else None
    if isinstance(value, str):
        v = value.strip().upper()
        if v in _GRADES:
            return _GRADES[v]
        try:
            out = float(v)
        except ValueError:
            return None
        return out if math.isfinite(out) else None
    return None


def _is_zip(path: Path) -> bool:
    return c.head(path, 4) == b"PK\x03\x04"


class InspectEvalImporter:
    name = "inspect"

    def sniff(self, path: Path) -> float:
        if not path.is_file() or not _is_zip(path):
            return 0.0
        try:
            with zipfile.ZipFile(path) as z:  # reads the central directory only
                names = set(z.namelist())
        except (zipfile.BadZipFile, OSError):
            return 0.0
        if HEADER in names or START in names:
            return 0.95 if any(n.startswith("samples/") for n in names) or path.suffix == ".eval" else 0.8
        return 0.0

    def load_all(self, path: Path, align: bool = True) -> list[Trajectory]:
        """Every sample. ``align=False`` (a listing) extracts no screenshots."""
        path = path.resolve()
        with self._open(path) as z:
            spec = self._spec(path, z)
            names = self._sample_names(path, z)
            records = [c.guard(partial(self._sample, path, z, n, spec, align)) for n in names]
        return c.records_to_all(path, records)

    def load_one(self, path: Path, index: int, align: bool = True) -> Trajectory:
        """Only the ``index``-th sample (``FILE#N``), without parsing the others."""
        path = path.resolve()
        with self._open(path) as z:
            spec = self._spec(path, z)
            names = self._sample_names(path, z)
            if not 0 <= index < len(names):
                raise TrajectoryFormatError(path, None, f"has {len(names)} samples, no #{index}")
            return self._sample(path, z, names[index], spec, align)

    # -- archive ---------------------------------------------------------------------------------------------

    @staticmethod
    def _open(path: Path) -> zipfile.ZipFile:
        if not c.is_regular(path):  # a FIFO named .eval is refused, never waited on
            raise TrajectoryFormatError(path, None, "not a regular file")
        try:
            return zipfile.ZipFile(path)
        except zipfile.BadZipFile as exc:
            raise TrajectoryFormatError(path, None, f"not a readable .eval archive: {exc}") from exc
        except OSError as exc:
            raise TrajectoryFormatError(path, None, f"cannot read: {exc.strerror or exc}") from exc

    @staticmethod
    def _member(path: Path, z: zipfile.ZipFile, name: str) -> Any:
        try:
            size = z.getinfo(name).file_size
            if size > MAX_TEXT_BYTES:  # what it says it inflates to: a zip bomb must not be inflated to find out
                raise TrajectoryFormatError(path, name, f"inflates to {size:,} bytes, more than a log member holds")
            data = z.read(name)
        except (KeyError, zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError,
                zlib.error) as exc:
            raise TrajectoryFormatError(path, name, f"cannot read from the archive: {exc}") from exc
        try:
            return c.parse_json(data, where=f"{path}: {name}")
        except c.BadJSON as exc:
            raise TrajectoryFormatError(path, name, exc.reason, line=exc.line) from exc
        except UnicodeDecodeError as exc:
            raise TrajectoryFormatError(path, name, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc

    def _spec(self, path: Path, z: zipfile.ZipFile) -> dict[str, Any]:
        """``header.json`` (a finished eval), else ``_journal/start.json`` (one still running or killed)."""
        names = set(z.namelist())
        name = HEADER if HEADER in names else START if START in names else None
        if name is None:
            raise TrajectoryFormatError(path, HEADER, "missing (and no _journal/start.json): not an Inspect log")
        doc = self._member(path, z, name)
        if not isinstance(doc, dict):
            raise TrajectoryFormatError(path, name, "expected a JSON object")
        doc.setdefault("status", "started" if name == START else None)
        return doc

    @staticmethod
    def _sample_names(path: Path, z: zipfile.ZipFile) -> list[str]:  # noqa: ARG004
        """Sample members ordered by sample id (naturally: 2 before 10), then epoch: a stable order for ``#N``
        (the archive and ``summaries.json`` hold them in the order they finished, which differs between runs)."""
        members = {}
        for n in z.namelist():
            m = _SAMPLE.match(n)
            if m:
                members[(m.group(1), int(m.group(2)))] = n
        return [members[k] for k in sorted(members, key=lambda k: (c.natural_key(k[0]), k[1]))]

    # -- one sample ------------------------------------------------------------------------------------------

    def _sample(self, path: Path, z: zipfile.ZipFile, name: str, spec: dict[str, Any], extract: bool) -> Trajectory:
        doc = self._member(path, z, name)
        if not isinstance(doc, dict):
            raise TrajectoryFormatError(path, name, "expected a JSON object")
        where = lambda f: f"{name}:{f}"  # noqa: E731 -- fields are named inside their archive member
        sid = doc.get("id")
        epoch = c.typed(doc, "epoch", int, path, where("epoch"), default=1)
        messages = c.typed(doc, "messages", list, path, where("messages"), default=[])
        attachments = c.typed(doc, "attachments", dict, path, where("attachments"), default={})
        found = spec.get("eval")
        ev: dict[str, Any] = found if isinstance(found, dict) else {}
        warnings: list[str] = []
        traj = Trajectory(id=f"{sid}_epoch_{epoch}", source_format=self.name, source_path=str(path),
                          warnings=warnings, agent=ev.get("model") if isinstance(ev.get("model"), str) else None)
        traj.metadata.update({"sample_id": sid, "epoch": epoch, "member": name, "status": spec.get("status")})
        for key in ("task", "created", "run_id", "task_id"):
            if isinstance(ev.get(key), str):
                traj.metadata["task" if key == "task" else key] = ev[key]
        for key in ("target", "metadata", "total_time", "working_time", "error", "model_usage"):
            if doc.get(key) not in (None, {}, ""):
                traj.metadata[key] = doc[key]
        if doc.get("error"):
            err = doc["error"].get("message") if isinstance(doc["error"], dict) else doc["error"]
            warnings.append(f"{path}: field '{where('error')}': the sample ended with an error: "
                            f"{str(err).splitlines()[0] if err else ''}")
        images = _Images(path, attachments, extract)
        inp = doc.get("input")
        traj.instruction = c.text_of(self._resolve(inp, attachments)) if isinstance(inp, str) else ""
        self._messages(path, name, messages, attachments, images, traj)
        self._outcome(path, name, doc, traj)
        warnings.extend(images.warnings)
        return traj

    @staticmethod
    def _resolve(value: Any, attachments: dict[str, Any]) -> Any:
        if isinstance(value, str) and value.startswith(ATTACHMENT):
            return attachments.get(value[len(ATTACHMENT):], value)
        return value

    def _text(self, content: Any, attachments: dict[str, Any]) -> str:
        """Text of a message's content (a string, or parts: text and reasoning; images are not text)."""
        content = self._resolve(content, attachments)
        if isinstance(content, str):
            return content
        if not isinstance(content, list):
            return ""
        out = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                out.append(str(self._resolve(part.get("text", ""), attachments)))
        return "\n".join(t for t in out if t).strip()

    def _reasoning(self, content: Any) -> str:
        if not isinstance(content, list):
            return ""
        return "\n".join(str(p.get("reasoning", "")) for p in content
                         if isinstance(p, dict) and p.get("type") == "reasoning" and not p.get("redacted")).strip()

    @staticmethod
    def _image_refs(content: Any) -> list[str]:
        if not isinstance(content, list):
            return []
        return [p["image"] for p in content if isinstance(p, dict) and p.get("type") == "image"
                and isinstance(p.get("image"), str)]

    def _messages(self, path: Path, name: str, messages: list[Any], attachments: dict[str, Any],
                  images: _Images, traj: Trajectory) -> None:
        results: dict[str, dict[str, Any]] = {}  # tool_call_id -> the tool message answering it
        for i, m in enumerate(messages):
            if isinstance(m, dict) and m.get("role") == "tool" and isinstance(m.get("tool_call_id"), str):
                results.setdefault(m["tool_call_id"], m)
        system, users = [], []
        for i, m in enumerate(messages):
            f = f"{name}:messages[{i}]"
            if not isinstance(m, dict):
                raise TrajectoryFormatError(path, f, "expected an object")
            role = c.typed(m, "role", str, path, f"{f}.role", required=True)
            content = m.get("content")
            if role == "system":
                system.append(self._text(content, attachments))
            elif role == "user":
                text = self._text(content, attachments)
                if not traj.instruction and text:
                    traj.instruction = text
                elif text:
                    users.append(text)
                refs = self._image_refs(content)
                if refs and "initial_screenshot" not in traj.metadata:
                    traj.metadata["initial_screenshot"] = images.file(refs[0], f"{f}.content")
            elif role == "assistant":
                traj.steps.extend(self._assistant(path, f, m, attachments, images, results, len(traj.steps)))
        if system:
            traj.metadata["system_prompt"] = "\n\n".join(system)
        if users:
            traj.metadata["user_messages"] = users

    def _assistant(self, path: Path, f: str, m: dict[str, Any], attachments: dict[str, Any], images: _Images,
                   results: dict[str, dict[str, Any]], start: int) -> list[Step]:
        text = self._text(m.get("content"), attachments)
        reasoning = self._reasoning(m.get("content"))
        thought = "\n\n".join(t for t in (reasoning, text) if t) or None
        calls = c.typed(m, "tool_calls", list, path, f"{f}.tool_calls", default=[])
        base: dict[str, Any] = {"screenshot_timing": "after_action"}
        if isinstance(m.get("model"), str):
            base["model"] = m["model"]
        if not calls:
            return [c.message_step(start, text, thought=reasoning or None, extra=dict(base))]
        out = []
        for k, call in enumerate(calls):
            fn, call_id, args = c.tool_call(call, path, f"{f}.tool_calls[{k}]", "function", "id")
            extra = dict(base, tool_call_id=call_id, function_name=fn, arguments=args)
            if call.get("parse_error"):
                extra["parse_error"] = call["parse_error"]
            res = results.get(call_id or "")
            shot = None
            if res is not None:
                obs = self._text(res.get("content"), attachments)
                if obs:
                    extra["observation"] = obs
                err = res.get("error")
                if isinstance(err, dict) and err.get("message"):
                    extra["error"] = err["message"]
                refs = self._image_refs(res.get("content"))
                if refs:
                    shot = images.file(refs[0], f"{f}.tool_calls[{k}] result")
            out.append(c.call_step(start + k, fn, args, thought=thought, screenshot=shot, extra=extra))
        return out

    @staticmethod
    def _outcome(path: Path, name: str, doc: dict[str, Any], traj: Trajectory) -> None:
        scores = c.typed(doc, "scores", dict, path, f"{name}:scores", default={})
        if not scores:
            return
        traj.metadata["scores"] = scores
        scorer, score = next(iter(scores.items()))
        value = score.get("value") if isinstance(score, dict) else None
        num = score_value(value)
        if num is None:
            if value is not None:
                traj.warnings.append(f"{path}: field '{name}:scores.{scorer}.value': {value!r} is not a grade or a "
                                     f"number; outcome unknown")
            return
        source = "model" if "model_graded" in scorer else "env"
        traj.outcome = Outcome(success=num >= 1.0, score=num, source=source)
        traj.metadata["scorer"] = scorer


class _Images:
    """Screenshots of one sample: data URIs (inline or attachments) written once to the cache, by content hash."""

    def __init__(self, path: Path, attachments: dict[str, Any], extract: bool):
        self.path, self.attachments, self.extract = path, attachments, extract
        self.warnings: list[str] = []
        self._dir: Path | None = None

    def file(self, ref: str, where: str) -> str | None:
        if not self.extract:
            return None
        value = ref
        if ref.startswith(ATTACHMENT):
            stored = self.attachments.get(ref[len(ATTACHMENT):])
            if not isinstance(stored, str):
                self.warnings.append(f"{self.path}: field '{where}': attachment {ref} is not in the sample")
                return None
            value = stored
        m = _DATA_URI.match(value)
        if not m:
            if re.match(r"^[a-z][a-z0-9+.-]*://", value, re.I) or value.startswith("<"):
                self.warnings.append(f"{self.path}: field '{where}': image not stored in the log: {value[:80]}")
                return None
            # A file named by the log: read only inside the log's folder or the library, as every importer's media.
            return c.resolve_media(self.path.parent, value, self.warnings, f"{self.path}: field '{where}'")
        try:
            data = base64.b64decode(value[m.end():], validate=False)
        except (binascii.Error, ValueError):
            self.warnings.append(f"{self.path}: field '{where}': image data is not base64")
            return None
        problem = data_problem(data)  # measured from its header: it is never written out, nor decoded
        if problem is not None:
            self.warnings.append(f"{self.path}: field '{where}': {problem}; not used")
            return None
        if self._dir is None:
            self._dir = cache.cache_dir(self.path, "inspect") / cache.source_key(self.path)[:16]
        ext = {"jpg": "jpg", "jpeg": "jpg"}.get(m.group(1).lower(), m.group(1).lower())
        file = self._dir / f"{hashlib.sha1(data).hexdigest()[:20]}.{ext}"
        if not file.is_file() and not cache.write_bytes(file, data):
            self.warnings.append(f"{self.path}: field '{where}': screenshot could not be written to {file}")
            return None
        return str(file)


IMPORTER = InspectEvalImporter()
