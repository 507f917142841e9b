#!/usr/bin/env bash
# Training throughput of Rosetta and of the PyTorch reference, same model, same batch, same
# thread count, in one run:
#
#   scripts/bench-train.sh CONFIG [DEVICE] [-- extra rosetta bench-train flags]
#
#   scripts/bench-train.sh configs/multi30k-en-de.toml flex
#   scripts/bench-train.sh configs/multi30k-en-de.toml cuda:0 -- --steps 50   (torch on cuda)
#
# Environment: ROSETTA (the rosetta binary; default: built by cargo in the dev profile, whose
# dependencies, Burn included, are optimised at opt-level 3: the build the tests use), PYTHON
# (a Python with torch; default python3), THREADS (CPU threads for both; default: all cores),
# FEATURES (cargo features for the build, e.g. "ndarray" or "cuda").
set -euo pipefail
config=${1:?usage: scripts/bench-train.sh CONFIG [DEVICE] [-- rosetta bench-train flags]}
device=${2:-flex}
shift $(( $# >= 2 ? 2 : 1 ))
[[ ${1:-} == -- ]] && shift
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
threads=${THREADS:-$(nproc)}
export RAYON_NUM_THREADS=$threads
if [[ -z ${ROSETTA:-} ]]; then
    cargo build --quiet --manifest-path "$root/Cargo.toml" -p rosetta-cli \
        ${FEATURES:+--features "$FEATURES"}
    ROSETTA="${CARGO_TARGET_DIR:-$root/target}/debug/rosetta"
fi
case $device in
    cuda*) torch_device=$device ;;
    *) torch_device=cpu ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$ROSETTA" bench-train --config "$config" --device "$device" --json "$tmp/rosetta.json" "$@"
"$python" "$root/scripts/bench_train_torch.py" --rosetta "$tmp/rosetta.json" \
    --threads "$threads" --device "$torch_device"
