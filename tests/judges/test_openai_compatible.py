"""The OpenAI-compatible judge against a real HTTP server on loopback (tests/judges/endpoint_server.py): the request it
sends, the Score it reads, one run failing alone, retries, concurrency, cancel, the cache, and the key kept out."""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import pytest

from gui_app import cli
from gui_app.core.library.catalog import Catalog
from gui_app.core.trajectory import formats
from gui_app.judges.judge_prompt import PROMPT_VERSION
from gui_app.judges.registry import JudgeError, load_judge
from tests.judges.endpoint_server import EndpointServer

SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples" / "miniwob"
RUNS = ("login-user-success", "click-tab-success", "email-inbox-wrong-email")
SECRET = "sk-test-0123456789abcdef-SECRET"


@pytest.fixture
def library(tmp_path) -> Path:
    root = tmp_path / "lib"
    for name in RUNS:
        shutil.copytree(SAMPLES / name, root / name)
    return root


def _score(library: Path, server: EndpointServer, model: str, *extra: str) -> int:
    return cli.main(["score", str(library), "--judge", "openai-compatible", "--endpoint", server.url, "--model", model,
                     "--judge-option", "backoff=0.01", *extra])


def test_a_run_is_judged_from_its_keyframes_and_the_versioned_prompt(library, server, capsys):
    run = library / "login-user-success"
    assert _score(run, server, "judge-fail", "--json") == 0
    out = json.loads(capsys.readouterr().out)
    traj = formats.load(str(run))
    # The answer, read: a failure at the last step shown (the server's rule), its confidence as p_success.
    assert out["success"] is False and out["first_error_step"] == traj.n_steps - 1
    assert out["p_success"] == pytest.approx(0.2) and out["threshold"] == 0.5
    assert out["model"] == f"openai-compatible:judge-fail@127.0.0.1:{server.url.split(':')[2].split('/')[0]}:" \
                           f"prompt-v{PROMPT_VERSION}:k16"
    assert out["usage"] == {"prompt_tokens": 100 + 50 * traj.n_steps, "completion_tokens": 20}
    assert out["rationale"] == "the last step went wrong" and out["timings"]["request"] > 0
    # What was sent: one JPEG per step, each captioned, the task, the steps, and the question.
    (req,) = server.requests
    assert req["path"] == "/v1/chat/completions" and req["body"]["model"] == "judge-fail"
    assert req["body"]["temperature"] == 0 and "Authorization" not in req["headers"]
    system, user = req["body"]["messages"]
    assert system["role"] == "system" and "JSON" in system["content"]
    images = [p["image_url"]["url"] for p in user["content"] if p["type"] == "image_url"]
    assert len(images) == traj.n_steps and all(u.startswith("data:image/jpeg;base64,") for u in images)
    text = "\n".join(p["text"] for p in user["content"] if p["type"] == "text")
    assert traj.instruction in text and "Step 1: click(x=191, y=166)" in text
    assert f"(1 to {traj.n_steps})" in text and '"first_error_step"' in text


def test_at_most_frames_keyframes_go_each_downscaled(library, server):
    import base64

    import cv2
    import numpy as np

    judge = load_judge("openai-compatible", {"endpoint": server.url, "model": "judge-pass", "frames": "3",
                                             "max-side": "100"})
    traj = formats.load(str(library / "login-user-success"))
    (score,) = judge.score_prepared([judge.prepare(traj)])
    assert score.success is True and score.p_success == pytest.approx(0.9) and score.first_error_step is None
    images = [p["image_url"]["url"] for p in server.requests[0]["body"]["messages"][1]["content"]
              if p["type"] == "image_url"]
    assert len(images) == 3
    img = cv2.imdecode(np.frombuffer(base64.b64decode(images[0].split(",", 1)[1]), np.uint8), cv2.IMREAD_COLOR)
    assert max(img.shape[:2]) == 100


def test_scores_go_to_the_catalog_under_the_judges_name_and_a_rescore_costs_nothing(library, server, capsys):
    with Catalog.for_root(library) as cat:
        cat.scan(library)
        db = Path(cat.db_path)
    assert _score(library, server, "judge-pass", "--catalog", str(db)) == 0
    assert _score(library, server, "judge-fail", "--catalog", str(db)) == 0
    assert len(server.requests) == 2 * len(RUNS)
    capsys.readouterr()
    # Again: every answer comes from the cache, nothing is sent, the lines say so.
    assert _score(library, server, "judge-fail", "--catalog", str(db)) == 0
    assert len(server.requests) == 2 * len(RUNS)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(RUNS)
    assert all("(cached)" in line and "failure (first error at step" in line for line in lines)
    with Catalog(db) as cat:
        names = [m.model for m in cat.scoring_models()]
        assert len(names) == 2 and all(n.startswith("openai-compatible:judge-") for n in names)
        # The "models disagree" queue compares the two judges like any two models.
        fail, ok = names
        assert len(cat.model_disagreements(fail, ok)) == len(RUNS)
        score = cat.latest_score(str(library / RUNS[0]))
        assert score is not None and score.model == fail and score.success is False


def test_a_changed_prompt_setting_is_a_new_request(library, server):
    run = library / "login-user-success"
    assert _score(run, server, "judge-pass") == 0
    assert _score(run, server, "judge-pass", "--judge-option", "frames=4") == 0
    assert _score(run, server, "judge-pass", "--judge-option", "cache=off") == 0
    assert len(server.requests) == 3


@pytest.mark.parametrize("model", ["judge-fenced"])
def test_an_answer_in_a_code_fence_is_read(library, server, model, capsys):
    assert _score(library / "click-tab-success", server, model, "--json") == 0
    assert json.loads(capsys.readouterr().out)["success"] is False


def test_an_answer_that_is_not_a_verdict_is_an_error_line_naming_the_run_and_is_not_cached(library, server, capsys):
    db = library / "catalog.sqlite"
    run = library / "click-tab-success"
    assert _score(run, server, "garbage", "--catalog", str(db)) == 1
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith(f"rollscope: error: {run}: garbage gave no verdict that can be read (no JSON object in "
                           "the answer); it answered: ")
    assert "I think the agent probably did fine." in line
    with Catalog(db) as cat:
        assert cat.latest_score(str(run)) is None
    assert _score(run, server, "garbage") == 1
    assert server.calls("garbage") == 2  # not cached: asked again


def test_one_failing_run_does_not_stop_the_batch(library, server, capsys):
    judge = load_judge("openai-compatible", {"endpoint": server.url, "model": "judge-pass", "backoff": "0.01"})
    good = judge.prepare(formats.load(str(library / RUNS[0])))
    broken = load_judge("openai-compatible", {"endpoint": server.url, "model": "garbage"})
    bad = broken.prepare(formats.load(str(library / RUNS[1])))
    bad.body["model"] = "garbage"
    results = judge.score_prepared([good, bad])
    assert results[0].success is True
    assert isinstance(results[1], JudgeError) and "gave no verdict" in str(results[1])


def test_a_failed_request_is_retried_with_backoff(library, server, capsys):
    run = library / "click-tab-success"
    assert _score(run, server, "flaky", "--json") == 0
    assert json.loads(capsys.readouterr().out)["success"] is True
    assert server.calls("flaky") == 3  # two 503s, then the answer
    assert _score(run, server, "down", "--judge-option", "retries=2") == 1
    err = capsys.readouterr().err
    assert f"{run}: not judged: {server.url}/chat/completions: HTTP 503" in err and "(after 3 tries)" in err
    assert server.calls("down") == 3
    # A 429 with Retry-After: 0 is tried again at once, whatever the backoff.
    t0 = time.perf_counter()
    assert _score(run, server, "limited", "--judge-option", "backoff=30") == 0
    assert server.calls("limited") == 2 and time.perf_counter() - t0 < 10


def test_an_error_that_retrying_cannot_fix_is_not_retried(library, server, capsys):
    assert _score(library / "click-tab-success", server, "no-such-model") == 1
    assert "HTTP 404" in capsys.readouterr().err and server.calls("no-such-model") == 1


def test_requests_run_concurrently(library, server):
    judge = load_judge("openai-compatible", {"endpoint": server.url, "model": "slow", "concurrency": "3"})
    prepared = [judge.prepare(formats.load(str(library / name))) for name in RUNS]
    t0 = time.perf_counter()
    results = judge.score_prepared(prepared)
    assert all(r.success for r in results)
    assert server.max_inflight == 3 and time.perf_counter() - t0 < 0.85  # three held, answered together


def test_cancel_stops_the_waits_and_the_requests_not_sent(library, server):
    judge = load_judge("openai-compatible", {"endpoint": server.url, "model": "down", "retries": "5",
                                             "backoff": "30", "concurrency": "1"})
    prepared = [judge.prepare(formats.load(str(library / name))) for name in RUNS]
    got: list = []
    worker = threading.Thread(target=lambda: got.extend(judge.score_prepared(prepared)))
    worker.start()
    assert server.received.wait(10)  # the first request was answered (503: the judge now backs off)
    judge.cancel()
    worker.join(5)
    assert not worker.is_alive()
    assert len(server.requests) == 1 and len(got) == len(RUNS)
    assert all(isinstance(r, JudgeError) and str(r).endswith("not judged: cancelled") for r in got)


def test_the_key_is_read_from_the_environment_and_never_reaches_a_log(library, server, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    db = library / "catalog.sqlite"
    assert _score(library / RUNS[0], server, "judge-pass", "--catalog", str(db), "--json") == 0
    assert server.requests[-1]["headers"]["Authorization"] == f"Bearer {SECRET}"
    # A server that echoes the headers back in its error, and an answer that is not a verdict, in one batch.
    assert _score(library, server, "echo", "--catalog", str(db)) == 1
    assert _score(library, server, "garbage", "--catalog", str(db), "--judge-option", "api-key-env=OTHER_KEY") == 1
    assert "Authorization" not in server.requests[-1]["headers"]  # another variable, unset: no key sent
    out, err = capsys.readouterr()
    assert "Bearer ***" in err  # the echoed header, blanked
    from gui_app.core.settings import config_dir

    logs = list((config_dir() / "logs").glob("score-*.log"))
    assert len(logs) == 2
    cache_files = [p for p in Path(db).parent.rglob("*.json")]
    from gui_app.core.cache import user_cache_dir

    cache_files += list(user_cache_dir().rglob("*.json"))
    assert cache_files
    for text in [out, err, db.read_bytes().decode("latin-1"), *(p.read_text() for p in logs + cache_files)]:
        assert SECRET not in text
    # Never from the command line.
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["score", "x", "--api-key", SECRET])
    assert _score(library, server, "judge-pass", "--judge-option", f"api-key={SECRET}") == 1
    assert "takes no option api-key" in capsys.readouterr().err


def test_the_endpoint_is_named_without_its_credentials(server):
    url = server.url.replace("http://", "http://user:pw@") + "?key=abc"
    judge = load_judge("openai-compatible", {"endpoint": url, "model": "judge-pass"})
    assert "pw" not in judge.name and "abc" not in judge.name and "pw" not in judge.shown_url
    with pytest.raises(JudgeError, match="not an http"):
        load_judge("openai-compatible", {"endpoint": "ftp://host/v1", "model": "m"})
