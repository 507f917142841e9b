#!/usr/bin/env bash
# The property-based tests (corpus reader, tokenizers, the browser's tokenizer against the
# `tokenizers` crate, config parser, translation options, batch planner) with many more cases than `cargo test` runs: ROSETTA_FUZZ_CASES per property
# (default 10000). Prints each binary's result and the total time.
set -euo pipefail
cd "$(dirname "$0")/.."
export ROSETTA_FUZZ_CASES="${1:-${ROSETTA_FUZZ_CASES:-10000}}"
start=$(date +%s)
echo "ROSETTA_FUZZ_CASES=$ROSETTA_FUZZ_CASES"
cargo test -q -p rosetta-data --test fuzz --test plan --test byte_level
cargo test -q -p rosetta-train --test fuzz_config
cargo test -q -p rosetta-infer --test fuzz_options
echo "fuzzing done in $(( $(date +%s) - start )) s"
