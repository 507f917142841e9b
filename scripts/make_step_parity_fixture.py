#!/usr/bin/env python3
"""Writes the training-step parity fixture that `crates/train/tests/step_parity.rs` checks.

Builds `rosetta_torch.Seq2Seq` (PyTorch's own Transformer layers) in the shape our configs train:
post-norm, one embedding shared by source and target and tied to the output projection, dropout 0.
Initialises it as Rosetta does (`init_like_rosetta`), then moves every bias and LayerNorm off its
initial value so that a parameter mapped to the wrong place shows. Then takes optimizer steps
exactly as `scripts/train_torch.py` does, on fixed padded batches: label-smoothed cross-entropy
summed over non-padding targets and divided by their count, backward, `clip_grad_norm_` over all
parameters, Adam (betas 0.9/0.98, eps 1e-9) at the warmup schedule's learning rate. Writes

  crates/train/tests/fixtures/step_parity.pt    the initial state dict (torch.save)
  crates/train/tests/fixtures/step_parity.json  config, batches (the unframed pairs and the padded
                                                tensors PyTorch consumed), learning rates, and each step's
                                                loss and gradient norm before clipping, and the
                                                loss of every batch after the last step

Run by hand (the fixture is committed; CI does not need Python):

  python3 -m venv .venv && .venv/bin/pip install torch
  .venv/bin/python scripts/make_step_parity_fixture.py
"""

import json
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from rosetta_torch import Seq2Seq, loss_sum, noam  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parent.parent / "crates/train/tests/fixtures"
VOCAB = 40
PAD, BOS, EOS = 0, 2, 3  # Rosetta's (rosetta_data::SPECIAL_TOKEN_IDS), as train_torch.py's
CONFIG = dict(
    source_vocab_size=VOCAB,
    target_vocab_size=VOCAB,
    d_model=32,
    n_heads=4,
    d_ff=64,
    n_encoder_layers=2,
    n_decoder_layers=2,
    dropout=0.0,
    attention_dropout=0.0,
    max_positions=64,
    pad_id=PAD,
    layer_norm_eps=1e-5,
    activation="Relu",
    norm_position="Post",
    final_norm=False,
    share_embeddings=True,
    tie_output_projection=True,
)
LABEL_SMOOTHING = 0.1
CLIP_NORM = 1.0
BETAS = (0.9, 0.98)
EPSILON = 1e-9
WARMUP, FACTOR = 4, 0.2
STEPS = 10


def batch(generator: torch.Generator, size: int) -> dict:
    """A batch framed as Rosetta frames one: source + EOS, BOS + target, target + EOS, padded."""
    pairs = []
    for _ in range(size):
        s_len = int(torch.randint(2, 9, (1,), generator=generator))
        t_len = int(torch.randint(2, 9, (1,), generator=generator))
        pairs.append((torch.randint(4, VOCAB, (s_len,), generator=generator).tolist(),
                      torch.randint(4, VOCAB, (t_len,), generator=generator).tolist()))
    s_max = max(len(s) for s, _ in pairs) + 1
    t_max = max(len(t) for _, t in pairs) + 1

    def pad(row: list, length: int) -> list:
        return row + [PAD] * (length - len(row))

    return dict(
        pairs=pairs,
        source=[pad(s + [EOS], s_max) for s, _ in pairs],
        target_input=[pad([BOS] + t, t_max) for _, t in pairs],
        target_output=[pad(t + [EOS], t_max) for _, t in pairs],
    )


def tensors(b: dict):
    return (torch.tensor(b["source"]), torch.tensor(b["target_input"]), torch.tensor(b["target_output"]))


def mean_loss(model: Seq2Seq, b: dict) -> float:
    src, tin, tout = tensors(b)
    tokens = int((tout != PAD).sum())
    return loss_sum(model(src, tin), tout, PAD, LABEL_SMOOTHING).item() / tokens


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(20261130)
    generator = torch.Generator().manual_seed(7)
    batches = [batch(generator, size) for size in (5, 3, 6)]
    model = Seq2Seq(CONFIG).init_like_rosetta()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(torch.randn_like(p) * 0.05)
    # train() with dropout 0 keeps PyTorch off its inference fast path, which zeroes padded rows.
    model.train()
    torch.save(model.state_dict(), OUT / "step_parity.pt")

    adam = torch.optim.Adam(model.parameters(), lr=0.0, betas=BETAS, eps=EPSILON)
    steps = []
    for step in range(1, STEPS + 1):
        b = batches[(step - 1) % len(batches)]
        lr = noam(CONFIG["d_model"], step, WARMUP, FACTOR)
        for group in adam.param_groups:
            group["lr"] = lr
        adam.zero_grad(set_to_none=True)
        src, tin, tout = tensors(b)
        tokens = int((tout != PAD).sum())
        total = loss_sum(model(src, tin), tout, PAD, LABEL_SMOOTHING)
        (total / tokens).backward()
        norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP_NORM))
        adam.step()
        steps.append(dict(step=step, batch=(step - 1) % len(batches), learning_rate=lr,
                          target_tokens=tokens, loss=total.item() / tokens, grad_norm=norm))
        print(f"step {step}: loss {total.item() / tokens:.6f} grad norm {norm:.6f} lr {lr:.5f}")
    with torch.no_grad():
        after = [mean_loss(model, b) for b in batches]
    fixture = dict(
        generator="scripts/make_step_parity_fixture.py",
        torch_version=torch.__version__,
        # Rosetta's TransformerConfig, as its serde form reads it.
        model=CONFIG,
        label_smoothing=LABEL_SMOOTHING,
        clip_norm=CLIP_NORM,
        beta1=BETAS[0],
        beta2=BETAS[1],
        epsilon=EPSILON,
        batches=batches,
        steps=steps,
        loss_after=after,
    )
    (OUT / "step_parity.json").write_text(json.dumps(fixture, indent=1) + "\n")
    print(f"after {STEPS} steps: losses {', '.join(f'{v:.6f}' for v in after)}")


if __name__ == "__main__":
    main()
