"""A small OpenAI-compatible server on loopback that answers by a fixed rule: the endpoint the judge's tests talk to.

It is a real server (a socket, HTTP/1.1, JSON in and out), not a stand-in for our code: ``POST /v1/chat/completions``
reads the request as vLLM or Ollama would, and answers by the model name it is asked for:

- ``judge-pass``: a success, confidence 0.9;
- ``judge-fail``: a failure at the last step it was shown a screen of, confidence 0.8;
- ``judge-fenced``: the same failure inside a Markdown code fence, after a sentence;
- ``garbage``: a sentence that is not a verdict;
- ``flaky``: 503 for the first two requests of each run, then ``judge-pass``'s answer;
- ``limited``: 429 with ``Retry-After: 0`` for the first request of each run, then ``judge-pass``'s answer;
- ``down``: 503 always;
- ``echo``: 400 whose body echoes the request's headers (as a careless proxy might);
- ``slow``: ``judge-pass``'s answer, held until ``slow_batch`` requests are in flight together (at most 5 s): a
  client that sends one at a time waits the 5 s and is seen holding one.

It records every request (headers, body) and the most requests it held at once.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


class EndpointServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.received = threading.Event()  # set at the first request: a test waits on it, not on a clock
        self.lock = threading.Lock()
        self.inflight = 0
        self.max_inflight = 0
        self.slow_batch = 3
        self.slow_release = threading.Event()  # set once slow_batch requests are held at once
        self.seen: Counter[str] = Counter()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 -- http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                with server.lock:
                    server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    server.received.set()
                    server.inflight += 1
                    server.max_inflight = max(server.max_inflight, server.inflight)
                    if server.inflight >= server.slow_batch:
                        server.slow_release.set()
                try:
                    status, payload, extra = server.answer(self.path, dict(self.headers), body)
                finally:
                    with server.lock:
                        server.inflight -= 1
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in extra.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def stop(self) -> None:
        self.slow_release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)

    def calls(self, model: str) -> int:
        return sum(r["body"].get("model") == model for r in self.requests)

    def answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        if path != "/v1/chat/completions":
            return 404, {"error": {"message": f"no route {path}"}}, {}
        model = body.get("model", "")
        user = body["messages"][-1]["content"]
        text = " ".join(part["text"] for part in user if part["type"] == "text")
        shown = [int(n) for n in re.findall(r"Screen after step (\d+):", text)]
        run = re.search(r"# Task\n(.*)", text)
        key = f"{model}:{run.group(1) if run else ''}"
        with self.lock:
            self.seen[key] += 1
            nth = self.seen[key]
        passed = {"success": True, "confidence": 0.9, "first_error_step": None, "reason": "the task is done"}
        failed = {"success": False, "confidence": 0.8, "first_error_step": shown[-1] if shown else 1,
                  "reason": "the last step went wrong"}
        if model == "judge-pass":
            content = json.dumps(passed)
        elif model == "judge-fail":
            content = json.dumps(failed)
        elif model == "judge-fenced":
            content = "Here is my verdict.\n```json\n" + json.dumps(failed) + "\n```"
        elif model == "garbage":
            content = "I think the agent probably did fine."
        elif model == "flaky":
            if nth <= 2:
                return 503, {"error": {"message": "overloaded"}}, {}
            content = json.dumps(passed)
        elif model == "limited":
            if nth == 1:
                return 429, {"error": {"message": "slow down"}}, {"Retry-After": "0"}
            content = json.dumps(passed)
        elif model == "down":
            return 503, {"error": {"message": "down"}}, {}
        elif model == "echo":
            return 400, {"error": {"message": f"bad request with headers {headers}"}}, {}
        elif model == "slow":
            self.slow_release.wait(5)
            content = json.dumps(passed)
        else:
            return 404, {"error": {"message": f"model {model} not found"}}, {}
        n_images = sum(part["type"] == "image_url" for part in user)
        usage = {"prompt_tokens": 100 + 50 * n_images, "completion_tokens": 20, "total_tokens": 120 + 50 * n_images}
        return 200, {"id": "x", "object": "chat.completion", "model": model, "usage": usage,
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": content}}]}, {}


@pytest.fixture
def server() -> Iterator[EndpointServer]:
    """A loopback OpenAI-compatible endpoint for one test (stopped after it)."""
    srv = EndpointServer()
    yield srv
    srv.stop()
