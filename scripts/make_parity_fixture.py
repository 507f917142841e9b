#!/usr/bin/env python3
"""Writes the PyTorch parity fixtures that `crates/model/tests/pytorch_parity.rs` checks.

For post-norm and pre-norm, builds PyTorch's own `torch.nn.Transformer` (batch_first, ReLU,
dropout 0) with token embeddings scaled by sqrt(d_model), the sinusoidal positional encoding of
the paper, and an output projection; fills every parameter (LayerNorms and biases included) with
seeded random values; runs a padded batch with padding and look-ahead masks; and writes

  crates/model/tests/fixtures/parity_{post,pre}norm.pt    the state dict (torch.save)
  crates/model/tests/fixtures/parity_{post,pre}norm.json  config, inputs, logits, losses

Run by hand (the fixtures are committed; CI does not need Python):

  python3 -m venv .venv && .venv/bin/pip install torch
  .venv/bin/python scripts/make_parity_fixture.py
"""

import json
import math
import pathlib
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from rosetta_torch import sinusoidal_table  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parent.parent / "crates/model/tests/fixtures"
CONFIG = dict(
    source_vocab_size=50,
    target_vocab_size=47,
    d_model=32,
    n_heads=4,
    d_ff=64,
    n_encoder_layers=2,
    n_decoder_layers=2,
    max_positions=64,
    pad_id=0,
    layer_norm_eps=1e-5,
)
LABEL_SMOOTHING = 0.1


class Seq2Seq(nn.Module):
    """torch.nn.Transformer with the embeddings and projection the paper puts around it."""

    def __init__(self, norm_first: bool):
        super().__init__()
        c = CONFIG
        self.d_model = c["d_model"]
        self.source_embedding = nn.Embedding(c["source_vocab_size"], c["d_model"])
        self.target_embedding = nn.Embedding(c["target_vocab_size"], c["d_model"])
        self.transformer = nn.Transformer(
            d_model=c["d_model"],
            nhead=c["n_heads"],
            num_encoder_layers=c["n_encoder_layers"],
            num_decoder_layers=c["n_decoder_layers"],
            dim_feedforward=c["d_ff"],
            dropout=0.0,
            activation="relu",
            layer_norm_eps=c["layer_norm_eps"],
            batch_first=True,
            norm_first=norm_first,
        )
        self.output_projection = nn.Linear(c["d_model"], c["target_vocab_size"])
        self.register_buffer("pe", sinusoidal_table(c["max_positions"], c["d_model"]), persistent=False)

    def forward(self, src, tgt_in):
        pad = CONFIG["pad_id"]
        scale = math.sqrt(self.d_model)
        s = self.source_embedding(src) * scale + self.pe[: src.shape[1]]
        t = self.target_embedding(tgt_in) * scale + self.pe[: tgt_in.shape[1]]
        causal = torch.triu(torch.ones(tgt_in.shape[1], tgt_in.shape[1], dtype=torch.bool), 1)
        hidden = self.transformer(
            s,
            t,
            tgt_mask=causal,
            src_key_padding_mask=src == pad,
            tgt_key_padding_mask=tgt_in == pad,
            memory_key_padding_mask=src == pad,
        )
        return self.output_projection(hidden)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, norm_first in [("postnorm", False), ("prenorm", True)]:
        torch.manual_seed(20261129 + int(norm_first))
        model = Seq2Seq(norm_first)
        with torch.no_grad():
            # Random values everywhere, so that a parameter mapped to the wrong place shows.
            for p in model.parameters():
                p.copy_(torch.randn_like(p) * (0.3 if p.dim() > 1 else 0.1))
            for n, p in model.named_parameters():
                if n.endswith("norm1.weight") or n.endswith("norm2.weight") or n.endswith("norm3.weight") or n.endswith("norm.weight"):
                    p.add_(1.0)
        # train() with dropout 0 keeps PyTorch off its inference fast path, which zeroes padded rows.
        model.train()
        src = torch.tensor([[5, 17, 9, 33, 2, 41, 3], [8, 12, 44, 3, 0, 0, 0]])
        tgt_in = torch.tensor([[1, 7, 22, 30, 11, 4], [1, 19, 6, 0, 0, 0]])
        tgt_out = torch.tensor([[7, 22, 30, 11, 4, 2], [19, 6, 2, 0, 0, 0]])
        logits = model(src, tgt_in)
        flat_logits = logits.reshape(-1, CONFIG["target_vocab_size"])
        loss = F.cross_entropy(flat_logits, tgt_out.reshape(-1), ignore_index=CONFIG["pad_id"])
        smoothed = F.cross_entropy(
            flat_logits, tgt_out.reshape(-1), ignore_index=CONFIG["pad_id"], label_smoothing=LABEL_SMOOTHING
        )
        torch.save(model.state_dict(), OUT / f"parity_{name}.pt")
        fixture = dict(
            generator="scripts/make_parity_fixture.py",
            torch_version=torch.__version__,
            # Rosetta's TransformerConfig, as its serde form reads it.
            model=dict(
                CONFIG,
                dropout=0.0,
                attention_dropout=0.0,
                activation="Relu",
                norm_position="Pre" if norm_first else "Post",
                final_norm=True,
                share_embeddings=False,
                tie_output_projection=False,
            ),
            source=src.tolist(),
            target_input=tgt_in.tolist(),
            target_output=tgt_out.tolist(),
            logits_shape=list(logits.shape),
            logits=[float(v) for v in logits.detach().reshape(-1)],
            loss=loss.item(),
            label_smoothing=LABEL_SMOOTHING,
            loss_label_smoothed=smoothed.item(),
        )
        (OUT / f"parity_{name}.json").write_text(json.dumps(fixture, indent=1) + "\n")
        print(f"{name}: logits {tuple(logits.shape)}, loss {loss.item():.6f}, smoothed {smoothed.item():.6f}")


if __name__ == "__main__":
    main()
