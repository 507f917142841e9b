#!/usr/bin/env bash
# The random-weight decoding anchor in Rosetta, cached PyTorch and CTranslate2, in one
# invocation, each system alone on the machine one after the other (scripts/bench_decode_anchor.py
# does the work; its docstring has the details).
#
# What it measures: the workload of `cargo bench -p rosetta-model --bench decode --profile dev`
# (crates/model/benches/decode.rs): a random post-norm Transformer, d_model 256, 4 heads, d_ff
# 1,024, 3 + 3 layers, vocabularies of 8,000; 64 sources of 12 random tokens + EOS (the same ids
# in every system); every output forced to exactly 20 tokens; greedy and beam 5, batch 64 over
# the 64 sentences and batch 1 over the first 16. Target tokens/s counts the 20 tokens of each
# output (the best hypothesis for beam search), EOS not counted, as decode.rs counts.
# - Rosetta: the decode bench itself (built with `cargo bench ... --no-run`, then run).
# - PyTorch 2.x eager with a key/value cache (scripts/torch_decode.py's decoder) on random
#   weights of the same shapes, EOS blocked until 20 tokens and forced at 20; settings:
#   `torch.inference_mode()`, `set_num_threads(N)`, `set_num_interop_threads(1)`.
# - CTranslate2 float32 and int8 on a random model of the same shapes built through its Python
#   spec API, `min_decoding_length=20, max_decoding_length=20`, `intra_threads` N,
#   `inter_threads` 1, under each backend setting in its own process: `default` (MKL with
#   packed GEMM on Intel CPUs, oneDNN elsewhere), `CT2_PACKED_GEMM=0`, `CT2_USE_MKL=0`
#   (CTranslate2's docs/environment_variables.md and docs/performance.md), with what
#   CT2_VERBOSE=1 says it selected; Rosetta is compared with the best setting per row.
# The weights differ between systems (the work does not depend on them: the length is forced).
# Rosetta and PyTorch run a 21st decoder step per output to score the closing EOS; CTranslate2
# stops after the 20th token (about 5% less work for it).
#
# Output: each system's table, a summary table (rows greedy b1, greedy b64, beam5 b1, beam5
# b64; columns Rosetta, PyTorch cached, CT2 fp32 under each setting, CT2 fp32 best,
# Rosetta / CT2 best, Rosetta / PyTorch; the same for int8), the peak RSS of every process and
# the CPU model.
#
# Usage: scripts/bench_decode_anchor.sh [--threads N] [--ct2-settings LIST]
#          [--compute-types float32,int8] [--systems rosetta,pytorch,ctranslate2]
#          [--rosetta-bench PATH] [--sentences N] [--rounds N] [--json FILE]
#   PYTHON=... (default: ROSETTA_PYTHON or python3): Python with torch and ctranslate2.
#   ANCHOR_SENTENCES=N (or --sentences N): PyTorch and CTranslate2 on the first N sentences
#   only, for a quick smoke test (Rosetta's bench always runs its 16 / 64).
#   --rounds N: every system N times, round after round; ends with each row's median and range
#   over the rounds (ratios taken within each round): what to quote from a shared machine.
# Run it on a quiet machine: OpenMP threads (PyTorch, CTranslate2) spin-wait, so timings taken
# while anything else runs are meaningless.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-${ROSETTA_PYTHON:-python3}}
exec "$python" scripts/bench_decode_anchor.py "$@"
