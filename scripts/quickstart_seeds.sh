#!/usr/bin/env bash
# Trains the quickstart configuration with several seeds and reports, per seed, the training
# time, how many of the 500 test numbers `rosetta translate` (default search) gets exactly
# right, test BLEU, and how many of the numbers below 100 (single words like "one", "eighty";
# all of them are in the training data) come out right.
# Usage: scripts/quickstart_seeds.sh [SEED ...] (default: 1 2 3 4 5); CONFIG=FILE for another
# configuration. Runs go to runs/quickstart-seed-N, replaced (RUNS=DIR for DIR/quickstart-seed-N;
# give two concurrent invocations different directories). Needs only the repository and cargo.
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=("$@")
if [ ${#seeds[@]} -eq 0 ]; then seeds=(1 2 3 4 5); fi
config=${CONFIG:-configs/quickstart.toml}
cargo build -q -p rosetta-cli
bin="${CARGO_TARGET_DIR:-target}/debug/rosetta"
cpu=$({ grep -m1 'model name' /proc/cpuinfo || echo ': unknown CPU'; } | cut -d: -f2- | sed 's/^ *//')
flags=$(grep -m1 -o 'avx512f' /proc/cpuinfo || echo "no AVX-512")
echo "config $config; CPU: $cpu ($flags), $(nproc) cores"
echo
echo "| seed | training s | exact match (of 500) | test BLEU | below 100 (of 100) |"
echo "| --- | --- | --- | --- | --- |"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The numbers below 100: the training lines with neither "hundred" nor "thousand", once each.
paste -d '\t' data/numbers/train.en data/numbers/train.fr |
  awk -F '\t' '$1 !~ /hundred|thousand/ && !seen[$1]++' > "$tmp/small.tsv"
cut -f1 "$tmp/small.tsv" > "$tmp/small.en"
cut -f2 "$tmp/small.tsv" > "$tmp/small.fr"
exact_matches() { paste -d '\t' "$1" "$2" | awk -F '\t' '$1 == $2 { n++ } END { print n + 0 }'; }
for seed in "${seeds[@]}"; do
  run="${RUNS:-runs}/quickstart-seed-$seed"
  rm -rf "$run"
  sed -e "s|^seed = .*|seed = $seed|" -e "s|^output_dir = .*|output_dir = \"$run\"|" \
    "$config" > "$tmp/seed-$seed.toml"
  start=$(date +%s.%N)
  "$bin" train --config "$tmp/seed-$seed.toml" > "$tmp/train-$seed.log" 2>&1
  seconds=$(echo "$(date +%s.%N) - $start" | bc)
  "$bin" translate --checkpoint "$run" --input data/numbers/test.en --output "$tmp/hyp-$seed.fr" 2>/dev/null
  exact=$(exact_matches "$tmp/hyp-$seed.fr" data/numbers/test.fr)
  "$bin" eval --hyp "$tmp/hyp-$seed.fr" --ref data/numbers/test.fr > "$tmp/eval-$seed.txt"
  bleu=$(sed -n -E '1s/^[^=]*= ([0-9.]+) .*/\1/p' "$tmp/eval-$seed.txt")
  "$bin" translate --checkpoint "$run" --input "$tmp/small.en" --output "$tmp/small-$seed.fr" 2>/dev/null
  small=$(exact_matches "$tmp/small-$seed.fr" "$tmp/small.fr")
  printf '| %s | %.0f | %s (%.1f%%) | %s | %s |\n' "$seed" "$seconds" "$exact" "$(echo "$exact / 5" | bc -l)" "$bleu" "$small"
done
