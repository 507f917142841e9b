#!/usr/bin/env python3
"""Writes small word-vector files for the pretrained-embeddings test (crates/train/tests): every
word of the numbers corpus (data/numbers/train.en and train.fr) with a seeded random vector, in
fastText's text format (a `COUNT DIM` header) at dimension 32 and in GloVe's (no header) at 48.

Usage: scripts/make_vectors.py [OUT_DIR]   (default: crates/train/tests/fixtures)
"""

import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def words():
    seen = []
    for name in ("train.en", "train.fr"):
        with open(os.path.join(ROOT, "data", "numbers", name), encoding="utf-8") as f:
            for line in f:
                for word in line.split():
                    if word not in seen:
                        seen.append(word)
    return seen


def write(path, vocabulary, dim, header, seed):
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        if header:
            f.write(f"{len(vocabulary)} {dim}\n")
        for word in vocabulary:
            values = " ".join(f"{rng.gauss(0.0, 0.3):.5f}" for _ in range(dim))
            f.write(f"{word} {values}\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "crates", "train", "tests", "fixtures")
    vocabulary = words()
    write(os.path.join(out, "numbers-32.vec"), vocabulary, 32, True, 1)
    write(os.path.join(out, "numbers-48.txt"), vocabulary, 48, False, 2)
    print(f"{len(vocabulary)} words, in {out}/numbers-32.vec and numbers-48.txt")


if __name__ == "__main__":
    main()
