"""A tiny faster-whisper model made on the spot, for testing ``--transcribe local/faster-whisper`` where no real
weights can be fetched (CI reaches no model hub): CTranslate2 weights written with CTranslate2's own
``WhisperSpec`` from NumPy arrays, and a byte-level ``tokenizer.json`` written with the ``tokenizers`` library,
so faster-whisper loads it from the folder and never asks a hub.

It hears nothing: its decoder is wired as a fixed chain (each token's logits come from that token alone: the
layers add nothing to the residual stream and positions are zero), so every 30 s window it decodes ``<|0.00|>big
cat<|T|>`` and stops, where ``T`` is ``span`` seconds. The encoder and the cross-attention are real (random)
layers, so the mel features, the window loop, the word alignment (cross-attention DTW) and the timestamps are
faster-whisper's own code paths. A test checks timing and shape, not words. ``dims`` picks the layer sizes;
``WHISPER_TINY`` gives the real whisper-tiny sizes (for measuring speed, not for hearing).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# What it says: tokens each used once (the chain is keyed by the token alone). A word after the first starts
# with a merged "space + letter" token, as Whisper's own vocabulary has them: faster-whisper suppresses the bare
# space token (the first token of " -" and other symbols), and splits words where a token starts with a space.
SAID = ("b", "i", "g", "\u0120c", "a", "t")
_WORD_STARTS = ("\u0120c",)


@dataclass(frozen=True)
class Dims:
    """Layer sizes: model width, heads, encoder and decoder layers, feed-forward width, mel bands."""

    width: int = 64
    heads: int = 2
    layers: int = 2
    ffn: int = 128
    mels: int = 80


TEST_DIMS = Dims()
WHISPER_TINY = Dims(width=384, heads=6, layers=4, ffn=1536)
_SPECIALS = ("<|endoftext|>", "<|startoftranscript|>", "<|translate|>", "<|transcribe|>", "<|startoflm|>",
             "<|startofprev|>", "<|nocaptions|>", "<|notimestamps|>")


def _vocabulary() -> tuple[list[str], list[str]]:
    """The byte-level alphabet (ids 0-255), then the special tokens, then the 1501 timestamps (0.00-30.00 s)."""
    from tokenizers import pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    stamps = [f"<|{i * 0.02:.2f}|>" for i in range(1501)]
    return [*alphabet, *_WORD_STARTS, *_SPECIALS, *stamps], alphabet


def make_tiny_whisper(folder: str | Path, *, dims: Dims = TEST_DIMS, span: float = 1.0, seed: int = 0) -> Path:
    """Write the model into ``folder`` (created) and return it; ``span``: the seconds each window's one segment
    lasts (at most 30)."""
    import numpy as np
    from ctranslate2.specs import whisper_spec

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokens, _alphabet = _vocabulary()
    ids = {token: n for n, token in enumerate(tokens)}
    rng = np.random.default_rng(seed)
    d = dims.width

    def random(*shape: int) -> Any:
        return (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)

    def zeros(*shape: int) -> Any:
        return np.zeros(shape, np.float32)

    spec = whisper_spec.WhisperSpec(dims.layers, dims.heads, dims.layers, dims.heads)
    _fill_encoder(spec.encoder, dims, random, zeros)
    embeddings = rng.standard_normal((len(tokens), d)).astype(np.float32)
    _fill_decoder(spec.decoder, dims, random, zeros, embeddings)
    chain = [ids["<|startoftranscript|>"], ids["<|0.00|>"],
             *(ids[token] for token in SAID), ids[f"<|{min(span, 30.0):.2f}|>"],
             ids["<|endoftext|>"]]
    spec.decoder.projection.weight = _chain_projection(embeddings, chain, len(tokens))
    spec.config.suppress_ids = []
    spec.config.suppress_ids_begin = [ids["<|endoftext|>"]]
    spec.config.lang_ids = []
    spec.config.alignment_heads = [(dims.layers - 1, h) for h in range(dims.heads)]
    spec.register_vocabulary(tokens)
    spec.validate()
    spec.optimize(quantization=None)
    spec.save(str(folder))
    _write_tokenizer(folder, tokens)
    (folder / "preprocessor_config.json").write_text(json.dumps({"feature_size": dims.mels}))
    return folder


def _fill_encoder(encoder: Any, dims: Dims, random: Any, zeros: Any) -> None:
    d = dims.width
    encoder.conv1.weight, encoder.conv1.bias = random(d, dims.mels, 3), zeros(d)
    encoder.conv2.weight, encoder.conv2.bias = random(d, d, 3), zeros(d)
    encoder.position_encodings.encodings = random(1500, d)
    _norm(encoder.layer_norm, d, zeros)
    for layer in encoder.layer:
        _self_attention(layer.self_attention, random(3 * d, d), random(d, d), zeros)
        _feed_forward(layer.ffn, dims, random(d, dims.ffn), random, zeros)


def _fill_decoder(decoder: Any, dims: Dims, random: Any, zeros: Any, embeddings: Any) -> None:
    """Every layer reads (the cross-attention weights feed the word alignment) and writes nothing back: its output
    projections are zero, so the residual stream is the token's embedding alone."""
    d = dims.width
    decoder.embeddings.weight = embeddings
    decoder.position_encodings.encodings = zeros(448, d)
    _norm(decoder.layer_norm, d, zeros)
    for layer in decoder.layer:
        _self_attention(layer.self_attention, random(3 * d, d), zeros(d, d), zeros)
        _linear(layer.attention.linear[0], random(d, d), zeros)
        _linear(layer.attention.linear[1], random(2 * d, d), zeros)
        _linear(layer.attention.linear[2], zeros(d, d), zeros)
        _norm(layer.attention.layer_norm, d, zeros)
        _feed_forward(layer.ffn, dims, zeros(d, dims.ffn), random, zeros)


def _chain_projection(embeddings: Any, chain: list[int], size: int) -> Any:
    """Output weights under which token ``chain[i]`` makes ``chain[i + 1]`` the next token by a wide margin."""
    import numpy as np

    normed = embeddings - embeddings.mean(axis=1, keepdims=True)
    normed /= normed.std(axis=1, keepdims=True)
    weight = np.zeros((size, embeddings.shape[1]), np.float32)
    for current, following in zip(chain, chain[1:]):
        weight[following] += 4.0 * normed[current] / np.sqrt(embeddings.shape[1])
    return weight


def _self_attention(spec: Any, inputs: Any, out: Any, zeros: Any) -> None:
    _linear(spec.linear[0], inputs, zeros)  # queries, keys and values in one
    _linear(spec.linear[1], out, zeros)
    _norm(spec.layer_norm, out.shape[0], zeros)


def _linear(spec: Any, weight: Any, zeros: Any) -> None:
    spec.weight, spec.bias = weight, zeros(weight.shape[0])


def _norm(spec: Any, width: int, zeros: Any) -> None:
    spec.gamma, spec.beta = zeros(width) + 1.0, zeros(width)


def _feed_forward(spec: Any, dims: Dims, out: Any, random: Any, zeros: Any) -> None:
    _linear(spec.linear_0, random(dims.ffn, dims.width), zeros)
    _linear(spec.linear_1, out, zeros)
    _norm(spec.layer_norm, dims.width, zeros)


def _write_tokenizer(folder: Path, tokens: list[str]) -> None:
    """A byte-level BPE without merges over the same ids as the model's vocabulary (what faster-whisper decodes
    the chosen ids with)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    merges = [(word[0], word[1:]) for word in _WORD_STARTS]
    tokenizer = Tokenizer(models.BPE(vocab={token: n for n, token in enumerate(tokens)}, merges=merges))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(tokens[256 + len(_WORD_STARTS):])
    tokenizer.save(str(folder / "tokenizer.json"))
