#!/usr/bin/env bash
# Trains the quickstart configuration with several seeds and reports, per seed, the training
# time and how many of the 500 test numbers `rosetta translate` (default search) gets exactly
# right, with test BLEU. Usage: scripts/quickstart_seeds.sh [SEED ...] (default: 1 2 3 4 5).
# Runs go to runs/quickstart-seed-N (replaced). Needs only the repository and cargo.
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=("$@")
if [ ${#seeds[@]} -eq 0 ]; then seeds=(1 2 3 4 5); fi
config=${CONFIG:-configs/quickstart.toml}
cargo build -q -p rosetta-cli
bin="${CARGO_TARGET_DIR:-target}/debug/rosetta"
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
flags=$(grep -m1 -o 'avx512f' /proc/cpuinfo || echo "no AVX-512")
echo "config $config; CPU: $cpu ($flags), $(nproc) cores"
echo
echo "| seed | training s | exact match (of 500) | test BLEU |"
echo "| --- | --- | --- | --- |"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for seed in "${seeds[@]}"; do
  run="runs/quickstart-seed-$seed"
  rm -rf "$run"
  sed -e "s|^seed = .*|seed = $seed|" -e "s|^output_dir = .*|output_dir = \"$run\"|" \
    "$config" > "$tmp/seed-$seed.toml"
  start=$(date +%s.%N)
  "$bin" train --config "$tmp/seed-$seed.toml" > "$tmp/train-$seed.log" 2>&1
  seconds=$(echo "$(date +%s.%N) - $start" | bc)
  "$bin" translate --checkpoint "$run" --input data/numbers/test.en --output "$tmp/hyp-$seed.fr" 2>/dev/null
  exact=$(paste -d '\t' "$tmp/hyp-$seed.fr" data/numbers/test.fr | awk -F '\t' '$1 == $2 { n++ } END { print n + 0 }')
  bleu=$("$bin" eval --hyp "$tmp/hyp-$seed.fr" --ref data/numbers/test.fr | head -1 | sed -E 's/^[^=]*= ([0-9.]+) .*/\1/')
  printf '| %s | %.0f | %s (%.1f%%) | %s |\n' "$seed" "$seconds" "$exact" "$(echo "$exact / 5" | bc -l)" "$bleu"
done
