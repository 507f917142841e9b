#!/usr/bin/env bash
# Decoding speed of a full-size OPUS-MT-shaped MarianMT model (untrained, seeded: d_model 512,
# 6 + 6 layers, 8 heads, FFN 2048, vocabulary 58,101, swish) in Rosetta, transformers (KV cache)
# and CTranslate2 float32, on the same weights, in one invocation, each system alone on the
# machine one after the other (issue #37's benchmark; scripts/bench_marian.py does the work and
# its docstring has the details).
#
# - The model: scripts/make_marian_fixture.py full DIR (a temporary directory; --model DIR
#   reuses one).
# - Rosetta: `rosetta import-hf DIR --output RUN`, then `rosetta bench-decode --checkpoint RUN
#   --src SRC --beams 1,4 --batch-sizes 1,64 --forced-len N --beam-stop transformers
#   --length-norm power --alpha 1` (built by `cargo build -p rosetta-cli`).
# - transformers: MarianMTModel.from_pretrained(DIR), eval, torch.inference_mode(),
#   set_num_threads(nproc), generate(num_beams=k, min_new_tokens=N, max_new_tokens=N+1).
# - CTranslate2 float32: `rosetta export --checkpoint RUN --format ctranslate2`, translate_batch
#   (min_decoding_length=N, max_decoding_length=N+1: N + 1 decoder steps as in the others),
#   intra_threads nproc, inter_threads 1, under each backend setting (default,
#   CT2_PACKED_GEMM=0, CT2_USE_MKL=0) in its own process; the best per row is compared.
# Sources: data/numbers/test.en (500 lines; batch 1 on the first 100); every output forced to
# N = 20 tokens + EOS; target tokens/s counts N + 1 per output, as `rosetta bench-decode` does.
# Output: each system's table, then a markdown summary (rows greedy b1, greedy b64, beam4 b1,
# beam4 b64), the peak RSS of each process, the CPU model and versions; --json FILE writes all.
#
# Usage: scripts/bench_marian.sh [--src FILE] [--lines N] [--batch1-limit N] [--forced-len N]
#          [--threads N] [--beams 1,4] [--batch-sizes 1,64] [--ct2-settings LIST]
#          [--ct2-steps n+1|n] [--systems rosetta,transformers,ctranslate2] [--model DIR]
#          [--rosetta-bin PATH] [--workdir DIR] [--json FILE]
#   PYTHON=... (default: ROSETTA_PYTHON or python3): Python with torch 2.15, transformers 5.23,
#   sentencepiece and ctranslate2.
#   Smoke test: scripts/bench_marian.sh --lines 64 --batch1-limit 5
# Run it on a quiet machine: OpenMP threads (PyTorch, CTranslate2) spin-wait, so timings taken
# while anything else runs are meaningless. About 1.2 GB of disk in the temporary directory
# (the model, the imported run, the CTranslate2 export).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-${ROSETTA_PYTHON:-python3}}
exec "$python" scripts/bench_marian.py "$@"
