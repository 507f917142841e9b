#!/usr/bin/env bash
# Decoding speed and BLEU of one trained checkpoint in Rosetta, in a cached PyTorch decoder
# (scripts/torch_decode.py) and in CTranslate2 (float32 and int8), in one invocation, on the
# same exported weights and the same sentences. Each system runs alone on the machine, one
# after the other; every system decodes by the same rules (CTranslate2's: length penalty
# len^1, stop after k finished hypotheses = Rosetta's `--length-norm power --alpha 1
# --beam-stop count`), so they do the same work and, up to rounding, give the same text.
#
# Usage: scripts/bench_decode_systems.sh CHECKPOINT SRC [REF] [BEAMS] [BATCH_SIZES]
#   e.g. scripts/bench_decode_systems.sh runs/m30k-serve data/multi30k/val.en data/multi30k/val.de
# With REF, each system also translates SRC (each of BEAMS, batch 64) and is scored with
# `rosetta eval` (sacreBLEU's BLEU), with the number of its outputs equal to Rosetta's.
# Needs Python with torch, safetensors, ctranslate2 and tokenizers (PYTHON=..., default:
# ROSETTA_PYTHON or python3).
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 CHECKPOINT SRC [REF] [BEAMS] [BATCH_SIZES]" >&2
  exit 2
fi
checkpoint=$(realpath "$1")
src=$(realpath "$2")
ref=${3:+$(realpath "$3")}
cd "$(dirname "$0")/.."
beams=${4:-1,5}
batches=${5:-1,64}
python=${PYTHON:-${ROSETTA_PYTHON:-python3}}
threads=$(nproc)
# CTranslate2's beam rules are the count rule only for a length penalty other than 0.
alpha=1
rules=(--alpha "$alpha" --length-norm power --beam-stop count)
cargo build -q -p rosetta-cli
bin="${CARGO_TARGET_DIR:-target}/debug/rosetta"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" export --checkpoint "$checkpoint" --format ctranslate2 --output "$tmp/ct2" > /dev/null
"$bin" export --checkpoint "$checkpoint" --format safetensors --transformer-prefix "" \
  --output "$tmp/torch" > /dev/null
cpu=$({ grep -m1 'model name' /proc/cpuinfo || echo ': unknown CPU'; } | cut -d: -f2- | sed 's/^ *//')
flags=$(grep -m1 -o 'avx512f' /proc/cpuinfo || echo "no AVX-512")
echo "checkpoint $checkpoint; CPU: $cpu ($flags), $threads cores; beam rules: ${rules[*]}"
echo
echo "Rosetta (flex, f32):"
timer=()
if [ -x /usr/bin/time ]; then timer=(/usr/bin/time -f "peak RSS %M KiB"); fi  # GNU time
"${timer[@]}" "$bin" bench-decode --checkpoint "$checkpoint" --src "$src" \
  --beams "$beams" --batch-sizes "$batches" "${rules[@]}"
echo
echo "PyTorch, cached decoder:"
"$python" scripts/torch_decode.py "$tmp/torch" --bench --beams "$beams" \
  --batch-sizes "$batches" --threads "$threads" "${rules[@]}" < "$src"
echo
echo "CTranslate2:"
"$python" scripts/bench_ctranslate2.py "$tmp/ct2" --src "$src" --beams "$beams" \
  --batch-sizes "$batches" --compute-types float32,int8 --threads "$threads" \
  --length-penalty "$alpha"

[ -n "$ref" ] || exit 0
# "EQUAL/TOTAL": the lines of $2 equal to those of $1.
equal_lines() {
  "$python" - "$1" "$2" <<'PY'
import sys
a, b = (open(path, encoding="utf-8").read().split("\n") for path in sys.argv[1:])
print(f"{sum(x == y for x, y in zip(a, b) if x or y)}/{sum(1 for x in a if x)}")
PY
}
echo
echo "BLEU on $ref (batch 64):"
echo "| system | search | BLEU | outputs equal to Rosetta's |"
echo "| --- | --- | --- | --- |"
for beam in ${beams//,/ }; do
  search=$([ "$beam" = 1 ] && echo greedy || echo "beam $beam")
  "$bin" translate --checkpoint "$checkpoint" --input "$src" --output "$tmp/rosetta.$beam" \
    --beam "$beam" --batch-size 64 "${rules[@]}" 2> /dev/null
  "$python" scripts/torch_decode.py "$tmp/torch" --beam "$beam" --batch-size 64 \
    --threads "$threads" "${rules[@]}" < "$src" > "$tmp/pytorch.$beam"
  for type in float32 int8; do
    "$python" scripts/ctranslate2_translate.py "$tmp/ct2" --beam "$beam" --compute-type "$type" \
      --threads "$threads" --length-penalty "$alpha" < "$src" > "$tmp/ctranslate2-$type.$beam"
  done
  for system in rosetta pytorch ctranslate2-float32 ctranslate2-int8; do
    bleu=$("$bin" eval --hyp "$tmp/$system.$beam" --ref "$ref" 2> /dev/null |
      sed -n 's/^BLEU[^=]*= \([0-9.]*\) .*/\1/p')
    equal=$(equal_lines "$tmp/rosetta.$beam" "$tmp/$system.$beam")
    echo "| $system | $search | $bleu | $equal |"
  done
done
