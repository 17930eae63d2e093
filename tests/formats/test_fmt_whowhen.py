"""Who&When records: JSON object, JSON array and JSONL; the dataset's labels; bad records."""

from __future__ import annotations

import json

import builders as b
import pytest

from gui_app.core.trajectory import formats
from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory.formats import whowhen


def test_reads_every_field(tmp_path):
    path = tmp_path / "113.json"
    rec = b.whowhen_record()
    path.write_text(json.dumps(rec, indent=2))
    traj = formats.load(path)
    assert formats.detect(path).name == "whowhen"
    assert (traj.id, traj.source_format, traj.instruction) == ("q-0113", "whowhen", rec["question"])
    assert (traj.outcome.success, traj.outcome.score, traj.outcome.source) == (False, None, "env")
    assert traj.metadata["labels"] == {"mistake_agent": "Assistant", "mistake_step": 2,
                                       "mistake_reason": "Counted live albums as studio albums.", "source": "whowhen"}
    assert traj.metadata["first_error_step"] == 2
    assert traj.metadata["ground_truth"] == "4" and traj.metadata["level"] == "2"
    assert traj.metadata["system_prompt"] == rec["system_prompt"]
    assert traj.n_steps == 4 and traj.video is None
    assert [s.extra["agent"] for s in traj.steps] == ["Orchestrator", "WebSurfer", "Assistant", "Orchestrator"]
    assert [s.thought for s in traj.steps] == [h["content"] for h in rec["history"]]
    assert traj.steps[1].action == "I found the discography page."
    assert all(s.action_type == "message" and s.screenshot is None for s in traj.steps)
    assert traj.agent == "Orchestrator, WebSurfer, Assistant"
    assert traj.warnings == []


def test_list_and_jsonl_hold_many_records(tmp_path):
    recs = [b.whowhen_record("a", 1), b.whowhen_record("b", "3")]
    del recs[1]["is_correct"]
    arr = tmp_path / "all.json"
    arr.write_text(json.dumps(recs))
    jl = tmp_path / "all.jsonl"
    jl.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    for path in (arr, jl):
        trajs = formats.load_all(path)
        assert [t.id for t in trajs] == ["a", "b"]
        assert trajs[0].metadata["labels"]["mistake_step"] == 1
        assert trajs[1].outcome.success is None  # no is_correct: unknown
        assert trajs[0].warnings[0].endswith("'WebSurfer' did)")  # label names an agent that did not write it


def test_records_with_role_only_and_no_id(tmp_path):
    rec = b.whowhen_record()
    del rec["question_ID"]
    for h in rec["history"]:
        del h["name"]
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps(rec) + "\n" + json.dumps(rec) + "\n")
    trajs = formats.load_all(path)
    assert [t.id for t in trajs] == ["x#1", "x#2"]
    assert trajs[0].steps[0].extra["agent"] == "user"


def test_bad_records(tmp_path):
    path = tmp_path / "r.jsonl"
    good, bad = b.whowhen_record("a"), b.whowhen_record("b", mistake_step="second")
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    trajs = formats.load_all(path)
    assert [t.id for t in trajs] == ["a"]
    assert any(f"{path}:2: field 'mistake_step'" in w for w in trajs[0].warnings)
    one = tmp_path / "one.json"
    rec = b.whowhen_record()
    rec["history"][1] = "just text"
    one.write_text(json.dumps(rec))
    with pytest.raises(TrajectoryFormatError) as exc:
        formats.load(one)
    assert exc.value.field == "history[1]" and exc.value.path == str(one)
    trunc = tmp_path / "t.json"
    trunc.write_text(json.dumps(b.whowhen_record(), indent=2)[:300])
    with pytest.raises(TrajectoryFormatError) as exc:
        whowhen.IMPORTER.load_all(trunc)
    assert "invalid JSON" in str(exc.value) and exc.value.line is not None


def test_out_of_range_step_is_a_warning(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(b.whowhen_record(mistake_step="9")))
    traj = formats.load(path)
    assert "first_error_step" not in traj.metadata
    assert any("9 is outside the 4 history messages" in w for w in traj.warnings)


def test_inspect_contract(tmp_path, inspect_json):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(b.whowhen_record()))
    info = inspect_json(path)
    assert (info["format"], info["n_steps"], info["video"]) == ("whowhen", 4, None)
    assert info["steps"][3] == {"index": 3, "t_start": None, "t_end": None, "action": "FINAL ANSWER: 6",
                                "screenshot": None, "align_method": None, "align_confidence": None}


def test_detected_by_content_not_name(tmp_path):
    path = tmp_path / "record.txt"
    path.write_text(json.dumps(b.whowhen_record(), indent=2))
    assert formats.detect(path).name == "whowhen"
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"history": [{"role": "user", "content": "hi"}], "model": "x"}))
    assert whowhen.IMPORTER.sniff(chat) == 0.0


# -- the published dataset (tests/fixtures/real/whowhen: three records copied unchanged) ------------------------


def test_real_hand_crafted_record_with_long_history_first_is_detected_and_scanned(tmp_path):
    """Hand-crafted records put a history of 10-300 KB first; the keys that identify the format come after it."""
    src = b.REAL / "whowhen" / "Hand-Crafted" / "6.json"
    head = src.read_bytes()[:8192]
    assert head.lstrip().startswith(b'{\n    "history"') and b'"mistake_agent"' not in head
    assert formats.detect(src).name == "whowhen"
    units = {p.name: imp.name for p, imp in formats.find_units(b.REAL / "whowhen")}
    assert units == {"6.json": "whowhen", "29.json": "whowhen", "30.json": "whowhen"}


def test_real_magentic_one_roles_match_their_agent():
    traj = formats.load(b.REAL / "whowhen" / "Hand-Crafted" / "6.json")
    mistake = traj.metadata["labels"]["mistake_step"]
    assert traj.metadata["labels"]["mistake_agent"] == "Orchestrator"
    assert traj.steps[mistake].extra == {"agent": "Orchestrator", "role": "Orchestrator (thought)"}
    roles = {s.extra.get("role") for s in traj.steps}
    assert "Orchestrator (-> WebSurfer)" in roles
    assert {s.extra["agent"] for s in traj.steps if s.extra.get("role", "").startswith("Orchestrator (")} == \
        {"Orchestrator"}
    assert not any("mistake_agent" in w for w in traj.warnings), traj.warnings
    assert traj.outcome.success is False  # hand-crafted records spell it is_corrected


def test_real_mistake_type_and_labels_are_kept():
    hand = formats.load(b.REAL / "whowhen" / "Hand-Crafted" / "29.json")
    assert hand.metadata["labels"]["mistake_type"] == "wrong_reasoning"
    algo = formats.load(b.REAL / "whowhen" / "Algorithm-Generated" / "30.json")
    assert algo.metadata["labels"]["labels"] == "Factual_Error"
    assert algo.metadata["labels"]["mistake_agent"] == "Culinary_Expert"
    assert algo.steps[3].extra["agent"] == "Culinary_Expert"
    assert hand.warnings == [] and algo.warnings == []


def test_agent_of_and_same_agent():
    assert whowhen.agent_of("Orchestrator (-> WebSurfer)") == "Orchestrator"
    assert whowhen.agent_of("Orchestrator (thought)") == "Orchestrator"
    assert whowhen.agent_of("(thought)") == "(thought)"  # nothing before the parenthesis: kept whole
    assert whowhen.same_agent("WebSurfer", "Websurfer")
    assert not whowhen.same_agent("WebSurfer", "FileSurfer") and not whowhen.same_agent(None, "x")
