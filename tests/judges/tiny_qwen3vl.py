"""A tiny Qwen3-VL checkpoint with random weights, built from a config in the test (nothing downloaded).

Its tokenizer is a byte-level BPE trained on a few sentences, with Qwen's chat and vision tokens. Two ways rig the
answer through the checkpoint's generation config (``sequence_bias``), so that a random network still says a given
text; without them it says noise:

- ``answer``: the text becomes one token of the vocabulary, favoured at every step;
- ``spell``: the text's own tokens, each favoured after those before it (so the network's logits where the answer
  chooses a word are its own).
"""

from __future__ import annotations

import json
from pathlib import Path

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|video_pad|>",
           "<|image_pad|>"]
CORPUS = ("Given a user task and a computer-using video recording, evaluate whether the user completes the task or "
          "not. \\box{correct} \\box{incorrect} The video deviates from the user's instruction between <3.0 seconds> "
          "and <4.0 seconds>. Enter the username and the password into the text fields and press login.")


def build(folder: Path, answer: str | None = None, spell: str | None = None, video_config: dict | None = None) -> Path:
    """Write the checkpoint to ``folder`` (config.json, model.safetensors, tokenizer, generation config)."""
    import torch
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3VLConfig, Qwen3VLForConditionalGeneration

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator([CORPUS] * 10, trainers.BpeTrainer(
        vocab_size=400, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    if answer is not None:
        tok.add_tokens([AddedToken(answer, special=False, normalized=False)])
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    ids = {t: hf.convert_tokens_to_ids(t) for t in SPECIAL}
    cfg = Qwen3VLConfig(
        text_config=dict(vocab_size=len(hf), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=8192,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3],
                                          "mrope_interleaved": True}, tie_word_embeddings=False),
        vision_config=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, in_channels=3, patch_size=16,
                           temporal_patch_size=2, spatial_merge_size=2, out_hidden_size=32, num_position_embeddings=64,
                           deepstack_visual_indexes=[0]),
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    torch.manual_seed(0)
    model = Qwen3VLForConditionalGeneration(cfg)
    if answer is not None:
        model.generation_config.sequence_bias = [[[hf.convert_tokens_to_ids(answer)], 1000.0]]
    if spell is not None:
        ids_ = hf.encode(spell, add_special_tokens=False)
        model.generation_config.sequence_bias = [[ids_[: i + 1], 1000.0 * (i + 1)] for i in range(len(ids_))]
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    hf.save_pretrained(folder)
    if video_config is not None:
        (folder / "video_preprocessor_config.json").write_text(json.dumps(video_config))
    return folder
