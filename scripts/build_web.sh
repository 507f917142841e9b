#!/usr/bin/env bash
# Builds Rosetta for the browser: crates/web for wasm32-unknown-unknown (Cargo profile `web`:
# LTO, no debug information, optimised for size but for the decoding crates), then
# `wasm-bindgen --target web` into web/pkg/, which web/index.html loads. Installs what it
# needs: the rustup target, and wasm-bindgen-cli at the version of the wasm-bindgen crate in
# Cargo.lock (the two must match).
#
#   scripts/build_web.sh                      # then: rosetta export --web --checkpoint RUN --output web/model
#   python3 -m http.server -d web 8000        # and open http://localhost:8000/
set -euo pipefail
cd "$(dirname "$0")/.."
target_dir="${CARGO_TARGET_DIR:-target}"

if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  rustup target add wasm32-unknown-unknown
fi
version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if [ -z "$version" ]; then
  echo "build_web: no wasm-bindgen in Cargo.lock" >&2
  exit 1
fi
if ! wasm-bindgen --version 2>/dev/null | grep -qx "wasm-bindgen $version"; then
  echo "build_web: installing wasm-bindgen-cli $version"
  # Not --locked: its lock file names a webpki-roots release that crates.io no longer serves.
  # --force: a binary that is missing or of another version while Cargo still lists the
  # package as installed would otherwise be left as it is.
  cargo install --quiet --force wasm-bindgen-cli --version "$version"
  if ! wasm-bindgen --version 2>/dev/null | grep -qx "wasm-bindgen $version"; then
    echo "build_web: wasm-bindgen $version is not on PATH after installing it (is ~/.cargo/bin on PATH?)" >&2
    exit 1
  fi
fi

cargo build --locked -p rosetta-web --target wasm32-unknown-unknown --profile web
rm -rf web/pkg
wasm-bindgen --target web --remove-name-section --remove-producers-section --out-dir web/pkg \
  "$target_dir/wasm32-unknown-unknown/web/rosetta_web.wasm"
ls -l web/pkg/rosetta_web_bg.wasm web/pkg/rosetta_web.js | awk '{ printf "build_web: %s %.2f MiB\n", $9, $5 / 1048576 }'
