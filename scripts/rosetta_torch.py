"""Rosetta's Transformer in PyTorch, for side-by-side measurements (imported by the scripts here).

`Seq2Seq(config)` takes a Rosetta `TransformerConfig` as a dict (the `model` of a
`rosetta bench-train --json` report, or of a run's `state.json`) and builds the same
architecture from PyTorch's own layers: token embeddings scaled by sqrt(d_model) (shared when
`share_embeddings`), the sinusoidal positional encoding, `nn.TransformerEncoderLayer` /
`nn.TransformerDecoderLayer` stacks (post- or pre-norm, optional final LayerNorms), and the
output projection (tied to the target embedding when `tie_output_projection`).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def sinusoidal_table(positions: int, d_model: int) -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...), computed in float64."""
    pos = torch.arange(positions, dtype=torch.float64).unsqueeze(1)
    two_i = (torch.arange(d_model) // 2 * 2).to(torch.float64)
    angle = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), two_i / d_model)
    table = torch.where(torch.arange(d_model) % 2 == 0, torch.sin(angle), torch.cos(angle))
    return table.to(torch.float32)


class Seq2Seq(nn.Module):
    """The encoder-decoder Transformer with embeddings and output projection."""

    def __init__(self, c: dict):
        super().__init__()
        self.c = c
        d = c["d_model"]
        activation = c.get("activation", "Relu").lower()
        norm_first = c.get("norm_position", "Post") == "Pre"
        eps = c.get("layer_norm_eps", 1e-5)
        self.source_embedding = nn.Embedding(c["source_vocab_size"], d)
        if c.get("share_embeddings", False):
            self.target_embedding = self.source_embedding
        else:
            self.target_embedding = nn.Embedding(c["target_vocab_size"], d)
        # `final_norm` may be present as null (Rosetta's "unset"): the default then applies.
        final = c.get("final_norm")
        final = norm_first if final is None else final
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(d, c["n_heads"], c["d_ff"], c["dropout"], activation,
                                       eps, batch_first=True, norm_first=norm_first),
            c["n_encoder_layers"], norm=nn.LayerNorm(d, eps) if final else None,
            enable_nested_tensor=False,
        )
        self.decoder = nn.TransformerDecoder(
            nn.TransformerDecoderLayer(d, c["n_heads"], c["d_ff"], c["dropout"], activation,
                                       eps, batch_first=True, norm_first=norm_first),
            c["n_decoder_layers"], norm=nn.LayerNorm(d, eps) if final else None,
        )
        tied = c.get("tie_output_projection", False)
        # Tied: logits = h · Eᵀ without a bias, as Rosetta's ScaledEmbedding::project.
        # PyTorch's layers take one rate; their attention modules read theirs from `.dropout`.
        attention_dropout = c.get("attention_dropout", c["dropout"])
        for layer in list(self.encoder.layers) + list(self.decoder.layers):
            for name in ("self_attn", "multihead_attn"):
                if hasattr(layer, name):
                    getattr(layer, name).dropout = attention_dropout
        self.output_projection = nn.Linear(d, c["target_vocab_size"], bias=not tied)
        if tied:
            self.output_projection.weight = self.target_embedding.weight
        self.dropout = nn.Dropout(c["dropout"])
        self.register_buffer("pe", sinusoidal_table(c["max_positions"], d), persistent=False)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    @torch.no_grad()
    def init_like_rosetta(self) -> "Seq2Seq":
        """Re-initialises as Rosetta does (crates/model/src/init.rs, embedding.rs): embeddings from
        N(0, d_model^-1/2), or Xavier-uniform where the model sets embedding_init = "XavierUniform";
        every linear map Xavier-uniform on its own [d_out, d_in] matrix (the query, key and value
        blocks of PyTorch's fused `in_proj_weight` one by one, with the model's qkv_init_gain,
        unset 1.0) with zero biases; LayerNorms the
        identity. The constructor's default is Xavier on every matrix,
        embeddings included, as PyTorch's Transformer tutorial does."""
        d = self.c["d_model"]
        for module in self.modules():
            if isinstance(module, nn.Embedding):
                if self.c.get("embedding_init") == "XavierUniform":
                    nn.init.xavier_uniform_(module.weight)
                else:
                    nn.init.normal_(module.weight, 0.0, d ** -0.5)
            elif isinstance(module, nn.MultiheadAttention):
                for block in module.in_proj_weight.chunk(3, 0):
                    nn.init.xavier_uniform_(block, gain=self.c.get("qkv_init_gain") or 1.0)
                nn.init.zeros_(module.in_proj_bias)
            elif isinstance(module, nn.Linear) and module.weight is not self.target_embedding.weight:
                nn.init.xavier_uniform_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
        return self

    def embed(self, embedding: nn.Embedding, ids: torch.Tensor) -> torch.Tensor:
        x = embedding(ids) * math.sqrt(self.c["d_model"]) + self.pe[: ids.shape[1]]
        return self.dropout(x)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        pad = self.c["pad_id"]
        src_pad = src == pad
        causal = torch.triu(
            torch.ones(tgt_in.shape[1], tgt_in.shape[1], dtype=torch.bool, device=src.device), 1
        )
        memory = self.encoder(self.embed(self.source_embedding, src), src_key_padding_mask=src_pad)
        hidden = self.decoder(
            self.embed(self.target_embedding, tgt_in),
            memory,
            tgt_mask=causal,
            tgt_key_padding_mask=tgt_in == pad,
            memory_key_padding_mask=src_pad,
        )
        return self.output_projection(hidden)


def loss_sum(logits: torch.Tensor, target: torch.Tensor, pad_id: int, label_smoothing: float):
    """Summed label-smoothed cross-entropy over non-padding targets (Rosetta's loss)."""
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]),
        target.reshape(-1),
        ignore_index=pad_id,
        label_smoothing=label_smoothing,
        reduction="sum",
    )


def noam(d_model: int, step: int, warmup: int, factor: float = 1.0) -> float:
    """The paper's learning rate: factor * d^-0.5 * min(step^-0.5, step * warmup^-1.5)."""
    step = max(step, 1)
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def reset_peak_rss() -> None:
    """Resets this process's peak-RSS counter (Linux), as `rosetta bench-train` does."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def peak_rss_bytes():
    """VmHWM of this process, in bytes (Linux), else None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None
