"""Grounding pretraining: generated screens are labelled by what they show, and a short run feeds train --init."""

from __future__ import annotations

import json

import numpy as np
from gui_app.cli import main
from models.config import ModelConfig
from models.pretrain import ScreenMaker, templates_and_words, typo
from models.render import find_fonts

INSTRUCTIONS = ['Click on the "okay" button.', 'Click on the "next" button.', 'Enter "Kasey" into the text field.',
                'Type "Bob" in all upper case letters in the text input and press Submit.',
                "Click button ONE.", 'Select "Alpha" from the list and click Submit.',
                'Click on a "beta" widget.', 'Click on the link "gamma".', 'Click on the "delta" tab.']


def test_fonts_are_installed():
    # make test installs fonts-liberation with chromium; without fonts pretraining says what to install
    assert find_fonts()


def test_templates_and_word_pool():
    templates, words = templates_and_words(INSTRUCTIONS)
    assert "Click button ONE." not in templates and len(templates) == 8
    assert {"okay", "Kasey", "Alpha", "gamma"} <= set(words)


def test_typo_is_always_a_different_word():
    rng = np.random.default_rng(0)
    for w in ("a", "ab", "Kasey", "okay", "aaaa"):
        for _ in range(20):
            assert typo(w, rng) != w


def test_screens_are_reproducible_and_labelled_by_what_they_show():
    a = ScreenMaker(INSTRUCTIONS, seed=5)
    b = ScreenMaker(INSTRUCTIONS, seed=5)
    shots = [a.make() for _ in range(40)]
    again = [b.make() for _ in range(40)]
    assert all(np.array_equal(x.frame, y.frame) and x.instruction == y.instruction for x, y in zip(shots, again))
    labels = [s.success for s in shots]
    assert 0.2 < np.mean(labels) < 0.8  # both labels occur
    for s in shots:
        assert s.frame.shape == (420, 320, 3) and s.frame.dtype == np.uint8
        assert s.instruction.count('"') == 2
        assert (s.frame[:100] == 255).all()  # nothing drawn where a recording's instruction box is hidden
        assert (s.frame < 128).any()  # text and the cursor outline are drawn


def test_short_pretraining_run_continues_in_train(syn_dataset, tmp_path, capsys):
    import polars as pl

    from models.data import read_manifest

    # the synthetic dataset's instructions quote their colour, as MiniWoB's quote their targets
    ds = tmp_path / "ds"
    ds.mkdir()
    df = read_manifest(syn_dataset)
    df = df.with_columns(pl.col("instruction").str.replace(r"the (\w+) button", 'the "$1" button'))
    df.write_parquet(ds / "manifest.parquet")
    cfg = json.dumps(ModelConfig.tiny(vocab_size=300, mil_head=True, char_ngrams=32).to_dict())
    out = tmp_path / "pt"
    assert main(["pretrain", "--data", str(ds), "--out", str(out), "--minutes", "0.05", "--batch-size", "4",
                 "--threads", "1", "--config", cfg, "--json"]) == 0
    m = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert m["steps"] >= 1 and 0.0 <= m["val_accuracy"] <= 1.0
    run = tmp_path / "run"
    assert main(["train", "--data", str(ds), "--out", str(run), "--init", str(out), "--epochs", "1",
                 "--cache", str(tmp_path / "cache"), "--batch-size", "4", "--json"]) == 0
    assert (run / "checkpoint.pt").is_file()
