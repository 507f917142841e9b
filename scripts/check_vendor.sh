#!/usr/bin/env bash
# Checks that vendor/burn-flex is the published burn-flex 0.22.1 plus vendor/burn-flex.patch and
# nothing else: downloads the crate from crates.io (the package registry, which CI reaches),
# unpacks it, applies the patch, and compares the result with vendor/burn-flex file by file. A
# stray edit of the vendored crate, or a patch that no longer describes it, fails the check.
#
# What the vendored copy leaves out of the published crate, by design (vendor/README.md): its
# long Markdown documents and its Cargo.lock; and what it adds: Burn's licence files.
#
#   scripts/check_vendor.sh
set -euo pipefail
cd "$(dirname "$0")/.."

version=0.22.1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

url="https://static.crates.io/crates/burn-flex/burn-flex-$version.crate"
if ! curl -fsSL --retry 3 -o "$work/crate.tar.gz" "$url"; then
  echo "check_vendor: cannot download $url" >&2
  exit 1
fi
tar -xzf "$work/crate.tar.gz" -C "$work"
published="$work/burn-flex-$version"
# What the vendored copy drops of the published crate, and adds to it (vendor/README.md).
rm -f "$published/Cargo.lock" "$published/.cargo_vcs_info.json" "$published/Cargo.toml.orig"
find "$published" -maxdepth 1 -name '*.md' -delete
(cd "$published" && patch -s -p1 < "$OLDPWD/vendor/burn-flex.patch")

status=0
diff -r -q \
  --exclude=LICENSE-MIT --exclude=LICENSE-APACHE --exclude='*.md' --exclude=Cargo.lock \
  --exclude=.cargo_vcs_info.json --exclude=Cargo.toml.orig \
  "$published" vendor/burn-flex || status=$?
for licence in LICENSE-MIT LICENSE-APACHE; do
  [ -s "vendor/burn-flex/$licence" ] || { echo "check_vendor: vendor/burn-flex/$licence is missing" >&2; status=1; }
done
if [ "$status" -ne 0 ]; then
  echo "check_vendor: vendor/burn-flex is not burn-flex $version plus vendor/burn-flex.patch" >&2
  exit 1
fi
echo "check_vendor: vendor/burn-flex is burn-flex $version plus vendor/burn-flex.patch"
