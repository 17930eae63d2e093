"""Judges as plug-ins: the entry-point group, `rollscope judges`, `score --judge` with its options, the built-in
model as the default judge, and a judge from another package scoring into the catalog beside the others."""

from __future__ import annotations

import json
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from gui_app import cli
from gui_app.core.library.catalog import Catalog
from gui_app.core.scoring.score import Score
from gui_app.judges import registry
from gui_app.judges.registry import JudgeError, JudgeOption, JudgeSpec

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "resources" / "samples" / "miniwob" / "login-user-success"


class ConstantJudge:
    """A judge another package might ship: it calls every run a success with the probability it is given."""

    def __init__(self, p: float):
        self.p = p
        self.name = f"constant:p={p:g}"

    def prepare(self, traj, prune=True):
        return traj.n_steps

    def score_prepared(self, prepared):
        return [Score(p_success=self.p, threshold=0.5, success=self.p >= 0.5, model=self.name) for _ in prepared]


SPEC = JudgeSpec("constant", "a fixed verdict (a test plug-in)", (JudgeOption("p", "p_success", default="0.7"),),
                 load=lambda options: ConstantJudge(float(options["p"])))


@pytest.fixture
def plugin(monkeypatch):
    """``constant`` installed as another package would install it: an entry point of ``rollscope.judges``."""
    real = metadata.entry_points

    def entry_points(**kw):
        if kw.get("group") == registry.ENTRY_POINT_GROUP:
            return [metadata.EntryPoint("constant", f"{__name__}:SPEC", registry.ENTRY_POINT_GROUP),
                    metadata.EntryPoint("rollscope", f"{__name__}:SPEC", registry.ENTRY_POINT_GROUP)]
        return real(**kw)

    monkeypatch.setattr(registry.metadata, "entry_points", entry_points)


def test_the_built_in_judges_are_declared_as_entry_points_in_pyproject():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["rollscope.judges"]
    assert declared == registry.BUILTIN


def test_rollscope_judges_lists_each_judge_and_its_options(capsys):
    assert cli.main(["judges", "--json"]) == 0
    found = {j["name"]: j for j in json.loads(capsys.readouterr().out)}
    assert list(found)[0] == "rollscope" and found["rollscope"]["default"] is True
    assert set(found) >= {"rollscope", "openai-compatible", "exevrm"}
    opts = {o["name"]: o for o in found["openai-compatible"]["options"]}
    assert opts["endpoint"]["required"] and opts["model"]["required"] and opts["frames"]["default"] == "16"
    assert "api-key" not in opts  # a key is never an option
    assert found["exevrm"]["extra"] == "exevrm"
    assert {o["name"] for o in found["exevrm"]["options"]} >= {"weights", "device", "fps", "max-frames"}
    assert cli.main(["judges"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("rollscope (default): ") and "  weights (required): " in text


def test_listing_the_judges_imports_no_heavy_library():
    import subprocess
    import sys

    code = ("import sys; from gui_app import cli; cli.main(['judges']); "
            "print('loaded:' + ','.join(m for m in ('torch', 'transformers', 'urllib.request', 'onnxruntime') "
            "if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert res.stdout.strip().splitlines()[-1] == "loaded:"


def test_a_judge_from_another_package_scores_into_the_catalog_beside_the_others(plugin, tmp_path, capsys):
    assert "constant" in registry.names()
    assert registry.spec("rollscope").name == "rollscope"  # a package cannot take a built-in name
    db = tmp_path / "c.sqlite"
    with Catalog(db) as cat:
        cat.scan(RUN.parent)
    assert cli.main(["score", str(RUN), "--judge", "constant", "--catalog", str(db), "--json"]) == 0
    assert cli.main(["score", str(RUN), "--judge", "constant", "--judge-option", "p=0.2", "--catalog", str(db),
                     "--json"]) == 0
    first, second = (json.loads(line) for line in capsys.readouterr().out.splitlines())
    assert (first["model"], first["success"]) == ("constant:p=0.7", True)
    assert (second["model"], second["success"]) == ("constant:p=0.2", False)
    with Catalog(db) as cat:
        assert [m.model for m in cat.scoring_models()] == ["constant:p=0.2", "constant:p=0.7"]
        (d,) = cat.model_disagreements("constant:p=0.7", "constant:p=0.2")
        assert (d.p_a, d.p_b) == (0.7, 0.2)


@pytest.mark.parametrize("argv, message", [
    (["--judge", "nope"], "no judge named 'nope' (installed: rollscope, "),
    (["--judge", "openai-compatible", "--model", "m"], "judge 'openai-compatible' needs endpoint"),
    (["--endpoint", "http://localhost:1/v1"], "judge 'rollscope' takes no option endpoint (it takes: model, backend)"),
    (["--judge", "exevrm", "--judge-option", "weights"], "judge option 'weights' is not NAME=VALUE"),
    (["--judge", "openai-compatible", "--endpoint", "http://h/v1", "--model", "m", "--judge-option", "cache=maybe"],
     "cache='maybe' is not one of on, off"),
    (["--judge", "openai-compatible", "--endpoint", "http://h/v1", "--model", "m", "--judge-option", "frames=0"],
     "frames=0 is below 1"),
])
def test_a_wrong_judge_or_option_is_one_error_line_before_anything_is_read(argv, message, capsys):
    assert cli.main(["score", str(RUN), *argv]) == 1
    out, err = capsys.readouterr()
    (line,) = err.splitlines()
    assert out == "" and line.startswith("rollscope: error: ") and message in line


def test_the_built_in_model_is_the_default_judge_and_keeps_its_flags(tiny_weights, capsys):
    from gui_app.commands.model import activate

    activate(str(tiny_weights))  # the active model is the built-in judge's default, as it was `score`'s
    assert cli.main(["score", str(RUN), "--json"]) == 0
    assert cli.main(["score", str(RUN), "--json", "--judge", "rollscope", "--backend", "onnx"]) == 0
    assert cli.main(["score", str(RUN), "--json", "--judge-option", f"model={tiny_weights}"]) == 0
    plain, named, option = (json.loads(line) for line in capsys.readouterr().out.splitlines())
    assert plain["model"] == named["model"] == option["model"] == "export:onnx"
    assert plain["p_success"] == named["p_success"] == option["p_success"] and plain["usage"] == {}


def test_options_are_checked_against_the_spec():
    spec = registry.spec("openai-compatible")
    got = registry.resolve_options(spec, {"endpoint": "http://h/v1", "model": "m"})
    assert got["frames"] == "16" and got["cache"] == "on"
    with pytest.raises(JudgeError, match="takes no option x"):
        registry.resolve_options(spec, {"endpoint": "e", "model": "m", "x": "1"})
    assert registry.parse_options(["a=1", "b=x=y", "a=2"]) == {"a": "2", "b": "x=y"}
