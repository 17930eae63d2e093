"""Word match maps: drawn instruction words found on real rendered frames, carried through features, batches,
training records and the exported network. Real fonts, real OpenCV matching, real ONNX sessions."""

from __future__ import annotations

import numpy as np
import onnx
import polars as pl
import torch
from PIL import Image, ImageDraw, ImageFont

from gui_app.core import native
from models.config import ModelConfig
from models.data import Record, build_cache, build_match_cache, load_records, match_for, read_manifest
from models.export_onnx import compare, export, sample_batch
from models.features import featurize, make_batch
from models.grounding import CHANNELS, instruction_terms, match_maps
from models.network import RewardNet, input_names
from models.pruning import frames_to_patches, prune
from models.render import find_fonts
from models.tokenizer import Tokenizer
from models.train import Item, to_batch


def _screen(words: dict[str, tuple[int, int]], size: int = 26, h: int = 320, w: int = 320) -> np.ndarray:
    """A white RGB frame with each word drawn at its (x, y) in the screen face."""
    img = Image.new("RGB", (w, h), (255, 255, 255))
    font = ImageFont.truetype(find_fonts()[0], size)
    d = ImageDraw.Draw(img)
    for word, xy in words.items():
        d.text(xy, word, font=font, fill=(20, 20, 20))
    return np.asarray(img).copy()


def _patches(frames: list[np.ndarray]) -> np.ndarray:
    return frames_to_patches(frames, 320, 16)  # (T, 20, 20, 768): no resize at this size


def test_instruction_terms_quoted_forms_and_content_words():
    q, w = instruction_terms('Click on the "Next" button, then select Haiti and click Submit.')
    assert q == ["Next", "next", "NEXT"]
    assert w == ["button", "Haiti", "Submit"]  # 6 terms in all; "then" is a stop word, the verbs too
    q, w = instruction_terms("Select Haiti from the list and click Submit.")
    assert q == [] and w == ["Haiti", "list", "Submit"]  # no "Select"/"click": actions are not on the screen
    q, w = instruction_terms('Close the dialog by clicking the "x".')
    assert q == ["x", "X"]  # a quoted single character is kept (a close button), in both cases
    assert instruction_terms("") == ([], [])


def test_named_word_scores_high_where_it_is_written_and_absent_word_low():
    frame = _screen({"Submit": (40, 200), "Cancel": (200, 60)})
    maps = match_maps(_patches([frame]), 'Press "Submit" now', 16)
    assert maps.shape == (1, 20, 20, CHANNELS) and maps.dtype == np.float32
    q = maps[0, ..., 0]
    r, c = np.unravel_index(np.argmax(q), q.shape)
    assert q.max() > 0.95 and 12 <= r <= 14 and 2 <= c <= 7  # the word's box: y 200-230, x 40-125
    assert q[3:5, 12:18].max() < 0.7  # "Cancel" is not "Submit"
    absent = match_maps(_patches([frame]), 'Press "Delete" now', 16)[0, ..., 0]
    assert absent.max() < 0.75
    words = match_maps(_patches([frame]), "Select Cancel please", 16)[0]
    assert words[..., 0].max() == 0.0 and words[3:6, 12:18, 1].max() > 0.95  # unquoted: channel 1


def test_masks_restrict_matching_to_kept_regions_without_changing_their_scores():
    a = _screen({"Submit": (40, 160)})
    b = _screen({"Submit": (40, 160), "Okay": (220, 10), "Later": (20, 290)})  # changes at the top and bottom
    patches = _patches([a, b])
    res = prune([a, b], working_size=320)
    text = 'Click "Okay", "Later" or "Submit"'
    full = match_maps(patches, text, 16, threads=1)
    cropped = match_maps(patches, text, 16, res.masks)
    kept = res.masks
    assert np.allclose(full[kept], cropped[kept], atol=1e-3)  # every kept token scores the same (to rounding)
    assert cropped[1, 10:12, :, 0].max() == 0.0 < full[1, 10:12, :, 0].max()  # unchanged Submit: not matched
    assert cropped[1, 0:3, 13:18, 0].max() > 0.95 and cropped[1, 18:20, 1:6, 0].max() > 0.95  # both new words


def test_featurize_attaches_scores_of_kept_tokens_and_batches_them(syn_traj_dir):
    traj = native.load(syn_traj_dir)
    cfg = ModelConfig.tiny(word_match=True, max_grid=32)
    tok = Tokenizer.build([traj.instruction], min_count=1, max_len=16)
    ex = featurize(traj, cfg, tok)
    assert ex.match is not None and ex.match.shape == (ex.tokens_kept, CHANNELS)
    assert np.isfinite(ex.match).all() and (ex.match >= 0).all() and (ex.match <= 1).all()
    batch = make_batch([ex, featurize(traj, cfg, tok, prune=False)])
    assert batch["token_match"].shape == batch["tokens"].shape[:2] + (CHANNELS,)
    assert (batch["token_match"][0, ex.tokens_kept:] == 0).all()  # padding scores 0
    assert "token_match" not in make_batch([featurize(traj, ModelConfig.tiny(max_grid=32), tok)])


def test_word_match_exports_and_the_scores_change_the_verdict(tmp_path):
    cfg = ModelConfig.tiny(word_match=True, mil_head=True)
    net = RewardNet(cfg)
    assert export(net, tmp_path / "m.onnx")["max_abs_diff"] <= 1e-4
    model = onnx.load(tmp_path / "m.onnx")
    assert [i.name for i in model.graph.input] == list(input_names(cfg)) and "token_match" in input_names(cfg)
    b = sample_batch(cfg, batch=3, frames=4, tokens_per_frame=5, text=5, seed=4)
    assert compare((tmp_path / "m.onnx").read_bytes(), net.eval(), b) <= 1e-4
    with torch.no_grad():
        a = net(**{k: torch.from_numpy(b[k]) for k in input_names(cfg)})[0]
        z = dict(b, token_match=np.zeros_like(b["token_match"]))
        c = net(**{k: torch.from_numpy(z[k]) for k in input_names(cfg)})[0]
    assert not torch.allclose(a, c)


def test_match_cache_records_and_online_instructions(syn_dataset):
    cfg = ModelConfig.tiny(word_match=True, max_grid=32)
    df = read_manifest(syn_dataset)
    cache = syn_dataset / "cache"
    assert build_cache(df, cfg, cache) == {}
    assert load_records(df, cfg, cache) == []  # no match maps yet: nothing is loaded without them
    assert build_match_cache(df, cfg, cache, workers=2) == {}
    recs = load_records(df, cfg, cache)
    assert len(recs) == len(df)
    for r in recs:
        assert r.match is not None and r.match.shape == (len(r.positions), CHANNELS)
    # the same maps as featurizing the trajectory directly (the runtime's path)
    row = df.row(0, named=True)
    ex = featurize(native.load(row["path"]), cfg, Tokenizer.build([row["instruction"]], min_count=1))
    rec = next(r for r in recs if r.meta["id"] == row["id"])
    assert np.allclose(rec.match, ex.match, atol=2e-3)  # float16 on disk
    # an online negative's instruction gets its own maps, computed once and cached
    other = match_for(rec, 'Click "Zebra"', cfg, cache)
    assert other.shape == rec.match.shape
    tok = Tokenizer.build(df["instruction"].to_list(), min_count=1)
    inputs, y, _ = to_batch([Item(rec, instruction='Click "Zebra"', success=False, error_frame=0)], tok, cfg, None,
                            lambda r, t: match_for(r, t, cfg, cache))
    assert torch.allclose(inputs["token_match"][0], torch.from_numpy(other)) and y.tolist() == [0.0]
    # unpruned records get maps matched over whole frames
    assert build_match_cache(df, cfg, cache, prune=False) == {}
    full = load_records(df.head(1), cfg, cache, prune=False)[0]
    assert full.match.shape == (full.tokens_total, CHANNELS)


def test_records_without_match_maps_are_left_alone_when_the_config_does_not_ask(syn_dataset):
    cfg = ModelConfig.tiny(max_grid=32)
    df = read_manifest(syn_dataset)
    build_cache(df, cfg, syn_dataset / "cache")
    recs = load_records(pl.DataFrame(df.head(2)), cfg, syn_dataset / "cache")
    assert all(isinstance(r, Record) and r.match is None for r in recs)


def test_run_stats_count_frames_tokens_and_best_scores_ignoring_padding():
    from models.network import run_stats

    positions = torch.tensor([[[0, 0, 0], [0, 1, 1], [1, 2, 2], [1, 3, 3], [0, 0, 0]]])  # last row: padding
    token_mask = torch.tensor([[True, True, True, True, False]])
    frame_mask = torch.tensor([[True, True, False]])  # two keyframes, one padding frame
    match = torch.tensor([[[0.9, 0.1], [0.2, 0.3], [0.5, 0.6], [0.85, 0.2], [1.0, 1.0]]])
    st = run_stats(positions, token_mask, frame_mask, match)[0]
    want = [np.log1p(2), np.log1p(2), np.log1p(4), 0.9, 0.6, 0.85, 0.6, 2 / 4]
    assert np.allclose(st.numpy(), want, atol=1e-6)
    assert run_stats(positions, token_mask, frame_mask, None).shape == (1, 3)


def test_stats_head_starts_neutral_exports_and_reads_its_weights_from_the_instruction(tmp_path):
    cfg = ModelConfig.tiny(word_match=True, stats_head=True, mil_head=True)
    torch.manual_seed(0)
    net = RewardNet(cfg).eval()
    b = sample_batch(cfg, batch=3, frames=4, tokens_per_frame=5, text=5, seed=5)
    names = input_names(cfg)
    plain = RewardNet(ModelConfig.tiny(word_match=True, mil_head=True)).eval()
    plain.load_state_dict({k: v for k, v in net.state_dict().items() if not k.startswith("stats_weights")})
    with torch.no_grad():
        a = net(**{k: torch.from_numpy(b[k]) for k in names})[0]
        assert torch.allclose(a, plain(**{k: torch.from_numpy(b[k]) for k in names})[0])  # neutral at init
        net.stats_weights.weight.normal_(0, 0.5)  # trained: the statistics now move the verdict...
        c = net(**{k: torch.from_numpy(b[k]) for k in names})[0]
        other = dict(b, text_ids=np.roll(b["text_ids"], 1, axis=1))  # ...by weights that depend on the words
        d = net(**{k: torch.from_numpy(other[k]) for k in names})[0]
    assert not torch.allclose(a, c) and not torch.allclose(c, d)
    assert export(net, tmp_path / "m.onnx")["max_abs_diff"] <= 1e-4


def test_stats_weights_from_text_depend_on_the_words_not_the_screen(tmp_path):
    cfg = ModelConfig.tiny(word_match=True, stats_head=True, stats_from_text=True, mil_head=True)
    torch.manual_seed(0)
    net = RewardNet(cfg).eval()
    plain = RewardNet(ModelConfig.tiny(word_match=True, mil_head=True)).eval()
    plain.load_state_dict({k: v for k, v in net.state_dict().items() if not k.startswith("stats_")})
    b = sample_batch(cfg, batch=3, frames=4, tokens_per_frame=5, text=5, seed=5)
    names = input_names(cfg)

    def stats_part(batch: dict) -> torch.Tensor:  # what the statistics add to the success logit
        with torch.no_grad():
            t = {k: torch.from_numpy(batch[k]) for k in names}
            return net(**t)[0] - plain(**t)[0]

    assert torch.allclose(stats_part(b), torch.zeros(3), atol=1e-6)  # neutral at initialisation
    with torch.no_grad():
        net.stats_weights.weight.normal_(0, 0.5)
    other_screen = dict(b, tokens=np.random.default_rng(1).uniform(-1, 1, b["tokens"].shape).astype(np.float32))
    other_words = dict(b, text_ids=np.roll(b["text_ids"], 1, axis=1))
    assert not torch.allclose(stats_part(b), torch.zeros(3), atol=1e-3)
    # Same statistics (positions and match unchanged) and same words: same contribution whatever the pixels.
    assert torch.allclose(stats_part(b), stats_part(other_screen), atol=1e-5)
    assert not torch.allclose(stats_part(b), stats_part(other_words), atol=1e-3)
    assert export(net, tmp_path / "m.onnx")["max_abs_diff"] <= 1e-4


def test_training_with_word_match_and_stats_head_end_to_end(syn_dataset, tmp_path, capsys):
    """train (match maps built for the runs it reads, online negatives matched on first use) -> export ->
    score: the shipped recipe's path on tiny data."""
    import json

    from gui_app.cli import main

    cfg = json.dumps(ModelConfig.tiny(vocab_size=300, word_match=True, stats_head=True, mil_head=True,
                                      max_grid=32).to_dict())
    run, cache = tmp_path / "run", tmp_path / "cache"
    assert main(["train", "--data", str(syn_dataset), "--out", str(run), "--epochs", "1", "--config", cfg,
                 "--cache", str(cache), "--batch-size", "4", "--max-train", "6", "--online-negatives", "1.0",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["n_train"] == 6
    ids = {f.name.rsplit("-", 1)[0] for f in cache.glob("*/match/*.npy")}
    assert len(ids) == 6 + 4  # maps only for the runs read (6 train, 4 val); online instructions reuse their ids
    assert main(["export-onnx", str(run), "--out", str(tmp_path / "w"), "--json"]) == 0
    capsys.readouterr()
    assert main(["score", str(syn_dataset / "t000"), "--json", "--model", str(tmp_path / "w")]) == 0
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert 0.0 <= row["p_success"] <= 1.0 and row["tokens_kept"] > 0
