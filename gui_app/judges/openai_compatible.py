"""Any vision-language model behind an OpenAI-compatible chat endpoint as a judge (vLLM, Ollama, a cloud API).

``rollscope score --judge openai-compatible --endpoint URL --model NAME`` sends each run's keyframes
(:func:`gui_app.judges.frames.step_keyframes`: one per step end, at most ``frames``, downscaled to ``max-side``)
as JPEG images with Rollscope's judge prompt (:mod:`gui_app.judges.judge_prompt`, versioned) to
``URL/chat/completions``, and reads the answer into the one :class:`~gui_app.core.scoring.score.Score`.

- **One run fails alone.** An answer that cannot be read, or a request that still fails after its retries, is an
  error for that run (naming it), never a guess; the batch goes on.
- **Concurrent, patient, cancellable.** A batch's requests run ``concurrency`` at a time; a connection error, a
  timeout, 429 or a 5xx is retried ``retries`` times with exponential backoff (the server's ``Retry-After`` when it
  gives one); :meth:`OpenAICompatibleJudge.cancel` stops the waits and the requests not yet sent.
- **Measured.** Each score records the request's seconds (``timings``) and the tokens the endpoint reports
  (``usage``; ``tokens_total`` / ``tokens_kept`` hold the prompt's tokens, which the catalog keeps).
- **Cached.** A readable answer is kept per run, judge, model, prompt version and request (the images and text
  sent), in the library's ``.rollscope/cache/judges`` (else the user's cache folder), so scoring the same runs
  again sends nothing; a changed run or setting is a new request.
- **The key stays out.** The API key is read from the environment variable named by ``api-key-env`` (default
  ``OPENAI_API_KEY``), else from the system keyring (service ``rollscope``, user: the endpoint's host) when the
  ``keyring`` package is installed; never from the command line. It goes only into the request's header: not into
  the judge's name, a score, the cache, an error or a log.

The HTTP client is the standard library's (nothing to install), imported only when this judge loads.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import cv2

from gui_app.core.errors import RollscopeError
from gui_app.core.scoring.score import Score
from gui_app.core.trajectory.model import Trajectory
from gui_app.judges.frames import step_keyframes
from gui_app.judges.judge_prompt import PROMPT_VERSION, AnswerError, build_messages, parse_answer
from gui_app.judges.registry import JudgeError, JudgeOption, JudgeSpec, option_float, option_int

NAME = "openai-compatible"
THRESHOLD = 0.5  # the verdict is the judge's own; p_success is its confidence on the same side of one half
RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
MAX_BACKOFF = 30.0
CACHE_KIND = "judges"


def redacted(url: str) -> str:
    """``url`` without credentials or query (``https://host:port/path``): what may be shown or stored."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}"


def completions_url(endpoint: str) -> str:
    """The chat completions URL of an endpoint given as its base (``http://host:8000/v1``) or in full."""
    base = endpoint.rstrip("/")
    return base if base.endswith("/chat/completions") else base + "/chat/completions"


def find_key(env_name: str, host: str) -> str | None:
    """The API key: ``$env_name``, else the keyring's password for (``rollscope``, ``host``) when ``keyring`` is
    installed; None when neither has one (a local server needs none)."""
    key = os.environ.get(env_name)
    if key:
        return key
    try:
        import keyring  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        return keyring.get_password("rollscope", host) or None
    except Exception:  # noqa: BLE001 -- any keyring backend failure means "no key there", not a crash
        return None


def jpeg_data_url(rgb: Any, quality: int = 90) -> str:
    """An RGB image as a ``data:image/jpeg;base64,...`` URL."""
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise RollscopeError("a keyframe could not be encoded as JPEG")
    return "data:image/jpeg;base64," + base64.b64encode(buf.tobytes()).decode("ascii")


@dataclass
class Prepared:
    """One run made ready: its request, and the answer when the cache has it."""

    key: str
    n_steps: int
    body: dict[str, Any]
    cache_file: Path | None
    decode_seconds: float
    cached: dict[str, Any] | None = None
    answer: dict[str, Any] = field(default_factory=dict)


class OpenAICompatibleJudge:
    """A vision-language model behind an OpenAI-compatible endpoint (see the module docstring).

    Attributes:
        name: the judge and what changes its verdicts: ``openai-compatible:MODEL@HOST:prompt-vN:kFRAMES``.
    """

    def __init__(self, endpoint: str, model: str, frames: int = 16, max_side: int = 1024, concurrency: int = 4,
                 retries: int = 3, timeout: float = 120.0, max_tokens: int = 400, api_key_env: str = "OPENAI_API_KEY",
                 cache: bool = True, backoff: float = 1.0):
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise JudgeError(f"endpoint {redacted(endpoint)!r} is not an http(s) URL")
        self.url = completions_url(endpoint)
        self.shown_url = redacted(self.url)
        self.model, self.frames, self.max_side = model, frames, max_side
        self.concurrency, self.retries, self.timeout = concurrency, retries, timeout
        self.max_tokens, self.cache, self.backoff = max_tokens, cache, backoff
        host = parts.hostname + (f":{parts.port}" if parts.port is not None else "")
        self.host = host
        self.name = f"{NAME}:{model}@{host}:prompt-v{PROMPT_VERSION}:k{frames}"
        self.__key = find_key(api_key_env, host)  # name-mangled: never in vars() dumps by accident
        self._cancel = threading.Event()

    def __repr__(self) -> str:
        return f"OpenAICompatibleJudge({self.name!r})"

    # -- the Scorer protocol -----------------------------------------------------------------------------------
    def prepare(self, traj: Trajectory, prune: bool = True) -> Prepared:
        """The request for ``traj`` (``prune`` does not apply: it is the built-in model's), and the cached answer
        when there is one.

        Raises:
            VideoError: no readable screenshots or recording.
        """
        t0 = time.perf_counter()
        kf = step_keyframes(traj, self.frames, self.max_side)
        images = [(step, jpeg_data_url(f)) for step, f in zip(kf.steps, kf.frames)]
        body = {"model": self.model, "messages": build_messages(traj, images), "temperature": 0,
                "max_tokens": self.max_tokens}
        decode = time.perf_counter() - t0
        run = traj.key or traj.source_path
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()
        ident = json.dumps([run, NAME, self.model, self.host, PROMPT_VERSION, digest])  # run, judge, model, prompt
        key = hashlib.sha256(ident.encode("utf-8")).hexdigest()
        cache_file = None
        cached = None
        if self.cache:
            from gui_app.core.cache import cache_dir, read_json

            cache_file = cache_dir(traj.source_path or ".", CACHE_KIND) / f"{key}.json"
            found = read_json(cache_file)
            cached = found if isinstance(found, dict) and isinstance(found.get("answer"), str) else None
        return Prepared(run, traj.n_steps, body, cache_file, decode, cached)

    def score_prepared(self, prepared: Sequence[Prepared]) -> list[Score | RollscopeError]:
        """Ask the endpoint about every prepared run not answered in the cache, ``concurrency`` at a time."""
        todo = [p for p in prepared if p.cached is None]
        if todo:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(todo))) as pool:
                try:
                    answers = list(pool.map(self._ask, todo))
                except KeyboardInterrupt:
                    self.cancel()
                    raise
            for p, answer in zip(todo, answers):
                p.answer = answer
        return [self._score(p) for p in prepared]

    # -- cancelling ----------------------------------------------------------------------------------------------
    def cancel(self) -> None:
        """Stop: the waits between retries end and requests not yet sent are not sent (their runs fail as
        cancelled). For good: a cancelled judge is loaded again to score again."""
        self._cancel.set()

    # -- one request ---------------------------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.__key:
            headers["Authorization"] = f"Bearer {self.__key}"
        return headers

    def _scrub(self, text: str) -> str:
        """``text`` with the key blanked out (a server may echo a header back in an error)."""
        return text.replace(self.__key, "***") if self.__key else text

    def _ask(self, p: Prepared) -> dict[str, Any]:
        """The endpoint's answer to ``p``: ``{"answer", "usage", "seconds"}``, or ``{"error"}``."""
        import urllib.error
        import urllib.request

        data = json.dumps(p.body).encode("utf-8")
        last = "not sent"
        t0 = time.perf_counter()
        for attempt in range(self.retries + 1):
            if self._cancel.is_set():
                return {"error": "cancelled"}
            delay: float | None = None
            try:
                req = urllib.request.Request(self.url, data=data, headers=self._headers(), method="POST")
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310 -- http(s) checked
                    reply = json.loads(resp.read().decode("utf-8"))
                return self._read_reply(reply, time.perf_counter() - t0)
            except urllib.error.HTTPError as exc:
                detail = self._scrub(exc.read(300).decode("utf-8", "replace")) if exc.fp is not None else ""
                last = f"HTTP {exc.code} {exc.reason}" + (f": {' '.join(detail.split())}" if detail else "")
                if exc.code not in RETRY_STATUS:
                    return {"error": f"{self.shown_url} answered {last}"}
                delay = _retry_after(exc.headers.get("Retry-After") if exc.headers else None)
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                last = self._scrub(f"{type(reason).__name__}: {reason}")
            except ValueError as exc:  # a reply that is not JSON
                return {"error": f"{self.shown_url} sent a reply that is not JSON ({exc})"}
            if attempt < self.retries:
                wait = delay if delay is not None else min(MAX_BACKOFF, self.backoff * 2**attempt)
                if self._cancel.wait(wait * (1.0 + 0.25 * random.random())):
                    return {"error": "cancelled"}
        return {"error": f"{self.shown_url}: {last} (after {self.retries + 1} tries)"}

    def _read_reply(self, reply: Any, seconds: float) -> dict[str, Any]:
        try:
            content = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            return {"error": f"{self.shown_url} sent a reply without choices[0].message.content"}
        if isinstance(content, list):  # content parts
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        if not isinstance(content, str):
            return {"error": f"{self.shown_url} sent a message content that is not text"}
        usage = reply.get("usage") if isinstance(reply, dict) else None
        counts = {k: int(usage[k]) for k in ("prompt_tokens", "completion_tokens")
                  if isinstance(usage, dict) and isinstance(usage.get(k), int)}
        return {"answer": content, "usage": counts, "seconds": seconds}

    # -- the score -----------------------------------------------------------------------------------------------
    def _score(self, p: Prepared) -> Score | RollscopeError:
        got = p.cached if p.cached is not None else p.answer
        # The errors do not name the run: whoever reads them has its name beside them (score_many's outcome).
        if "error" in got or "answer" not in got:
            return JudgeError(f"not judged: {got.get('error', 'no answer')}")
        try:
            verdict = parse_answer(got["answer"], p.n_steps)
        except AnswerError as exc:
            snippet = " ".join(str(got["answer"]).split())[:200]
            return JudgeError(f"{self.model} gave no verdict that can be read ({exc}); it answered: {snippet!r}")
        if p.cached is None and p.cache_file is not None:
            from gui_app.core.cache import write_json

            write_json(p.cache_file, {"run": p.key, "judge": NAME, "model": self.model,
                                      "prompt_version": PROMPT_VERSION, **got})
        usage = {k: int(v) for k, v in dict(got.get("usage") or {}).items()}
        if p.cached is not None:
            usage["cached"] = 1
        request = float(got.get("seconds") or 0.0) if p.cached is None else 0.0
        timings = {"decode": p.decode_seconds, "request": request}
        prompt_tokens = usage.get("prompt_tokens")
        return Score(p_success=verdict.p_success, threshold=THRESHOLD, success=verdict.success,
                     first_error_step=verdict.first_error_step, model=self.name, seconds=sum(timings.values()),
                     timings=timings, usage=usage, rationale=verdict.reason, tokens_kept=prompt_tokens,
                     tokens_total=prompt_tokens, evidence=["video", "actions"])


def _retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header given in seconds (a date is ignored: backoff decides)."""
    try:
        return max(0.0, min(MAX_BACKOFF, float(value))) if value else None
    except ValueError:
        return None


def _load(options: dict[str, str]) -> OpenAICompatibleJudge:
    return OpenAICompatibleJudge(
        options["endpoint"], options["model"], frames=option_int(options, "frames"),
        max_side=option_int(options, "max-side", 64), concurrency=option_int(options, "concurrency"),
        retries=option_int(options, "retries", 0), timeout=option_float(options, "timeout"),
        max_tokens=option_int(options, "max-tokens", 16), api_key_env=options["api-key-env"],
        cache=options["cache"] == "on", backoff=option_float(options, "backoff"))


SPEC = JudgeSpec(
    name=NAME,
    summary="a vision-language model behind an OpenAI-compatible endpoint (vLLM, Ollama, a cloud API): keyframes "
            f"and Rollscope's judge prompt v{PROMPT_VERSION}",
    options=(
        JudgeOption("endpoint", "the server's base URL, e.g. http://localhost:8000/v1", required=True),
        JudgeOption("model", "the model name the server knows", required=True),
        JudgeOption("frames", "keyframes sent at most (one per step end)", default="16"),
        JudgeOption("max-side", "longest side of a keyframe in pixels", default="1024"),
        JudgeOption("concurrency", "requests at once", default="4"),
        JudgeOption("retries", "retries of a failed request (connection, timeout, 429, 5xx)", default="3"),
        JudgeOption("backoff", "seconds before the first retry (doubling after each)", default="1"),
        JudgeOption("timeout", "seconds to wait for one answer", default="120"),
        JudgeOption("max-tokens", "longest answer in tokens", default="400"),
        JudgeOption("api-key-env", "environment variable holding the API key (else the keyring; never an option)",
                    default="OPENAI_API_KEY"),
        JudgeOption("cache", "keep answers so that a rescore sends nothing", default="on", choices=("on", "off")),
    ),
    load=_load,
)
