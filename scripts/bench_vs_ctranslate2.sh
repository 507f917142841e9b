#!/usr/bin/env bash
# Decoding speed of a trained checkpoint in Rosetta and in CTranslate2, in one invocation, on
# the same sentences: exports the checkpoint (`rosetta export --format ctranslate2`), then runs
# `rosetta bench-decode` and `scripts/bench_ctranslate2.py` (float32 and int8) one after the
# other, each alone on the machine, with the same batch sizes and beams.
# Usage: scripts/bench_vs_ctranslate2.sh CHECKPOINT SRC [BEAMS] [BATCH_SIZES]
#   e.g. scripts/bench_vs_ctranslate2.sh runs/multi30k-en-de data/multi30k/val.en 1,5 1,64
# Needs Python with ctranslate2 and tokenizers (PYTHON=..., default: ROSETTA_PYTHON or python3).
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 CHECKPOINT SRC [BEAMS] [BATCH_SIZES]" >&2
  exit 2
fi
checkpoint=$(realpath "$1")
src=$(realpath "$2")
cd "$(dirname "$0")/.."
beams=${3:-1,5}
batches=${4:-1,64}
python=${PYTHON:-${ROSETTA_PYTHON:-python3}}
cargo build -q -p rosetta-cli
bin="${CARGO_TARGET_DIR:-target}/debug/rosetta"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" export --checkpoint "$checkpoint" --format ctranslate2 --output "$tmp/ct2" > /dev/null
cpu=$({ grep -m1 'model name' /proc/cpuinfo || echo ': unknown CPU'; } | cut -d: -f2- | sed 's/^ *//')
flags=$(grep -m1 -o 'avx512f' /proc/cpuinfo || echo "no AVX-512")
echo "checkpoint $checkpoint; CPU: $cpu ($flags), $(nproc) cores"
echo
echo "Rosetta (flex, f32):"
timer=()
if [ -x /usr/bin/time ]; then timer=(/usr/bin/time -f "peak RSS %M KiB"); fi  # GNU time
"${timer[@]}" "$bin" bench-decode --checkpoint "$checkpoint" --src "$src" \
  --beams "$beams" --batch-sizes "$batches"
echo
echo "CTranslate2:"
"$python" scripts/bench_ctranslate2.py "$tmp/ct2" --src "$src" --beams "$beams" \
  --batch-sizes "$batches" --compute-types float32,int8 --threads "$(nproc)"
