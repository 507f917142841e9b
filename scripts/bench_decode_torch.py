#!/usr/bin/env python3
"""PyTorch's greedy decoding on the workload of `cargo bench -p rosetta-model --bench decode`.

Same model (d_model 256, 3 + 3 layers, 4 heads, d_ff 1024, vocabulary 8,000, random weights),
same sources (64 sentences of 12 random tokens + EOS), every output forced to 20 tokens (EOS
is never chosen). PyTorch's `nn.TransformerDecoder` has no key/value cache, so each step runs
the decoder over the whole prefix ("uncached"), the usual way to decode with it; the encoder
runs once per batch. Batch 64 decodes the 64 sentences at once; batch 1 the first 16 one at a
time.

    python scripts/bench_decode_torch.py [--threads 2]
"""

import argparse
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import torch  # noqa: E402

from rosetta_torch import Seq2Seq  # noqa: E402

SENTENCES, SINGLE, SOURCE_TOKENS, OUTPUT_TOKENS, VOCAB = 64, 16, 12, 20, 8000
BOS, EOS = 2, 3
CONFIG = dict(source_vocab_size=VOCAB, target_vocab_size=VOCAB, d_model=256, n_heads=4, d_ff=1024,
              n_encoder_layers=3, n_decoder_layers=3, dropout=0.0, attention_dropout=0.0,
              max_positions=512, pad_id=0, layer_norm_eps=1e-5, norm_position="Post",
              final_norm=False, share_embeddings=False, tie_output_projection=False)


def greedy_uncached(model: Seq2Seq, src: torch.Tensor) -> torch.Tensor:
    memory_mask = src == CONFIG["pad_id"]
    memory = model.encoder(model.embed(model.source_embedding, src), src_key_padding_mask=memory_mask)
    out = torch.full((src.shape[0], 1), BOS)
    for _ in range(OUTPUT_TOKENS):
        n = out.shape[1]
        causal = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
        hidden = model.decoder(model.embed(model.target_embedding, out), memory, tgt_mask=causal,
                               memory_key_padding_mask=memory_mask)
        logits = model.output_projection(hidden[:, -1])
        logits[:, EOS] = float("-inf")  # forced length, as min_len does in Rosetta
        out = torch.cat([out, logits.argmax(-1, keepdim=True)], 1)
    return out[:, 1:]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = Seq2Seq(CONFIG).eval()
    g = torch.Generator().manual_seed(0x5EED)
    src = torch.randint(4, VOCAB, (SENTENCES, SOURCE_TOKENS), generator=g)
    src = torch.cat([src, torch.full((SENTENCES, 1), EOS)], 1)
    print(f"pytorch {torch.__version__}, {args.threads} threads; greedy, uncached (no KV cache in "
          f"nn.TransformerDecoder); {SOURCE_TOKENS}+EOS source tokens, {OUTPUT_TOKENS} output tokens")
    print("| search | batch | sentences | seconds | sentences/s | target tokens/s |")
    print("| --- | --- | --- | --- | --- | --- |")
    with torch.inference_mode():
        greedy_uncached(model, src[:4])  # warm-up
        for batch, rows in [(64, src), (1, src[:SINGLE])]:
            start = time.perf_counter()
            for i in range(0, rows.shape[0], batch):
                out = greedy_uncached(model, rows[i:i + batch])
                assert out.shape[1] == OUTPUT_TOKENS
            seconds = time.perf_counter() - start
            n = rows.shape[0]
            print(f"| greedy, uncached (pytorch) | {batch} | {n} | {seconds:.2f} | {n / seconds:.1f} "
                  f"| {n * OUTPUT_TOKENS / seconds:.0f} |")


if __name__ == "__main__":
    main()
