#!/usr/bin/env bash
# Decoding speed and BLEU of one trained checkpoint in Rosetta (float32 and int8, `--quantize`), in a cached PyTorch decoder
# (scripts/torch_decode.py) and in CTranslate2 (float32 and int8), in one invocation, on the
# same exported weights and the same sentences. Each system runs alone on the machine, one
# after the other; every system decodes by the same rules (CTranslate2's: length penalty
# len^1, stop after k finished hypotheses = Rosetta's `--length-norm power --alpha 1
# --beam-stop count`), so they do the same work and, up to rounding, give the same text.
# Target tokens/s counts each output's tokens plus its EOS, in all three.
#
# Each peer is configured as its own documentation recommends, and every setting tried is
# reported:
# - PyTorch: eager, `torch.inference_mode()`, `torch.set_num_threads(nproc)`,
#   `set_num_interop_threads(1)` (scripts/torch_decode.py prints them).
# - CTranslate2: `intra_threads` = nproc, `inter_threads` 1, each compute type under each
#   backend setting in its own process (scripts/bench_ctranslate2.py): `default` (MKL with
#   packed GEMM on Intel CPUs, oneDNN elsewhere), `CT2_PACKED_GEMM=0` and `CT2_USE_MKL=0`
#   (oneDNN), from CTranslate2's docs/environment_variables.md and docs/performance.md; the
#   backend each selected is what CT2_VERBOSE=1 logged. On an Intel Xeon the default was up to
#   10x slower at batch 1 than the others, so the summary compares Rosetta with CTranslate2 at
#   its best setting per row (CT2_SETTINGS=... overrides the list, e.g.
#   CT2_SETTINGS=default,CT2_USE_MKL=0,CT2_USE_MKL=1).
# The summary table at the end: per row Rosetta, PyTorch, CTranslate2 float32 and int8 at their
# best (setting), and Rosetta's ratios to each (scripts/bench_decode_summary.py).
#
# Usage: scripts/bench_decode_systems.sh CHECKPOINT SRC [REF] [BEAMS] [BATCH_SIZES]
#   e.g. scripts/bench_decode_systems.sh runs/m30k-serve data/multi30k/val.en data/multi30k/val.de
# With REF, each system also translates SRC (each of BEAMS, batch 64) and is scored with
# `rosetta eval` (sacreBLEU's BLEU), with the number of its outputs equal to Rosetta's (the
# CTranslate2 translations use its default backend setting). BATCH1_LIMIT (default 100): the
# sentences decoded at batch size 1. ROSETTA_BIN=path: use that `rosetta` binary instead of
# building one with `cargo build -p rosetta-cli` (the dev profile, as the figures were taken).
# Needs Python with torch, safetensors, ctranslate2 and tokenizers (PYTHON=..., default:
# ROSETTA_PYTHON or python3). For the random-weight anchor (no checkpoint) see
# scripts/bench_decode_anchor.sh.
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
ct2_settings=${CT2_SETTINGS:-default,CT2_PACKED_GEMM=0,CT2_USE_MKL=0}
batch1_limit=${BATCH1_LIMIT:-100}
# CTranslate2's beam rules are the count rule only for a length penalty other than 0.
alpha=1
rules=(--alpha "$alpha" --length-norm power --beam-stop count)
if [ -n "${ROSETTA_BIN:-}" ]; then
  bin=$(realpath "$ROSETTA_BIN")  # a binary built earlier (`cargo build -p rosetta-cli`)
else
  cargo build -q -p rosetta-cli
  bin="${CARGO_TARGET_DIR:-target}/debug/rosetta"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" export --checkpoint "$checkpoint" --format ctranslate2 --output "$tmp/ct2" > /dev/null
"$bin" export --checkpoint "$checkpoint" --format safetensors --transformer-prefix "" \
  --output "$tmp/torch" > /dev/null
cpu=$({ grep -m1 'model name' /proc/cpuinfo || echo ': unknown CPU'; } | cut -d: -f2- | sed 's/^ *//')
flags=$(grep -m1 -o 'avx512f' /proc/cpuinfo || echo "no AVX-512")
echo "checkpoint $checkpoint; CPU: $cpu ($flags), $threads cores; beam rules: ${rules[*]}"
echo
for quantize in float32 int8; do
  echo "Rosetta (flex, $quantize):"
  suffix=${quantize#float32}  # "" for float32, "-int8" for int8
  out="$tmp/rosetta${suffix:+-$suffix}.txt"
  timer=()
  if [ -x /usr/bin/time ]; then timer=(/usr/bin/time -o "$out.rss" -f "peak RSS %M KiB"); fi  # GNU time
  "${timer[@]}" "$bin" bench-decode --checkpoint "$checkpoint" --src "$src" --quantize "$quantize" \
    --beams "$beams" --batch-sizes "$batches" --batch1-limit "$batch1_limit" "${rules[@]}" \
    | tee "$out"
  [ ! -f "$out.rss" ] || cat "$out.rss"
  echo
done
echo
echo "PyTorch, cached decoder:"
"$python" scripts/torch_decode.py "$tmp/torch" --bench --beams "$beams" \
  --batch-sizes "$batches" --batch1-limit "$batch1_limit" --threads "$threads" "${rules[@]}" \
  < "$src" | tee "$tmp/pytorch.txt"
echo
echo "CTranslate2 (each compute type under each backend setting, in its own process):"
"$python" scripts/bench_ctranslate2.py "$tmp/ct2" --src "$src" --beams "$beams" \
  --batch-sizes "$batches" --batch1-limit "$batch1_limit" --compute-types float32,int8 \
  --threads "$threads" --length-penalty "$alpha" --ct2-settings "$ct2_settings" \
  --json "$tmp/ct2.json"
echo
echo "Summary: target tokens/s (with EOS); CTranslate2 at its best setting per row:"
"$python" scripts/bench_decode_summary.py --rosetta "$tmp/rosetta.txt" \
  --rosetta-int8 "$tmp/rosetta-int8.txt" --pytorch "$tmp/pytorch.txt" --ctranslate2 "$tmp/ct2.json"

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
  for quantize in float32 int8; do
    suffix=${quantize#float32}
    "$bin" translate --checkpoint "$checkpoint" --input "$src" --quantize "$quantize" \
      --output "$tmp/rosetta${suffix:+-$suffix}.$beam" \
      --beam "$beam" --batch-size 64 "${rules[@]}" 2> /dev/null
  done
  # (its stderr: the PyTorch settings line, shown above; kept out of the table)
  "$python" scripts/torch_decode.py "$tmp/torch" --beam "$beam" --batch-size 64 \
    --threads "$threads" "${rules[@]}" < "$src" > "$tmp/pytorch.$beam" 2> "$tmp/pytorch.err" \
    || { cat "$tmp/pytorch.err" >&2; exit 1; }
  for type in float32 int8; do
    "$python" scripts/ctranslate2_translate.py "$tmp/ct2" --beam "$beam" --compute-type "$type" \
      --threads "$threads" --length-penalty "$alpha" < "$src" > "$tmp/ctranslate2-$type.$beam"
  done
  for system in rosetta rosetta-int8 pytorch ctranslate2-float32 ctranslate2-int8; do
    bleu=$("$bin" eval --hyp "$tmp/$system.$beam" --ref "$ref" 2> /dev/null |
      sed -n 's/^BLEU[^=]*= \([0-9.]*\) .*/\1/p')
    equal=$(equal_lines "$tmp/rosetta.$beam" "$tmp/$system.$beam")
    echo "| $system | $search | $bleu | $equal |"
  done
done
