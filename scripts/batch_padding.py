#!/usr/bin/env python3
"""How much padding each bucketing makes: one epoch's batch plan of a Rosetta run's training set.

    python scripts/batch_padding.py --run runs/multi30k-en-de [--epochs 3]

Reads the run's `config.toml` and tokenizer, encodes and filters the training pairs as
`train_torch.py` does (Rosetta's framing and length filter), plans the epoch's batches with
`train_torch.plan` (the same cut as Rosetta's `bucket = "both_sides"` and `"longer_side"`,
under the run's padded-token budget), and prints for each bucketing: batches, real target
tokens a batch, the share of target positions that are real, and the padded positions (source
and target together) a batch. Averaged over `--epochs` shuffles. Needs `tokenizers` (and
`torch`, which `train_torch.py` imports).
"""

import argparse
import pathlib
import random
import sys
import tomllib

from tokenizers import Tokenizer

from train_torch import encode, filter_pairs, plan, read_pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=pathlib.Path, required=True, help="a Rosetta run directory")
    ap.add_argument("--epochs", type=int, default=3, help="shuffles to average over")
    ap.add_argument("--base", type=pathlib.Path, default=pathlib.Path("."),
                    help="directory the corpus paths of config.toml are relative to")
    args = ap.parse_args()

    config = tomllib.loads((args.run / "config.toml").read_text())
    joint = args.run / "tokenizer.json"
    tok_src = Tokenizer.from_file(str(joint if joint.exists() else args.run / "tokenizer.source.json"))
    tok_tgt = Tokenizer.from_file(str(joint if joint.exists() else args.run / "tokenizer.target.json"))
    data = config["data"]
    if "directions" in data:
        sys.exit(f"{args.run / 'config.toml'}: a multilingual run ([[data.directions]]); this script reproduces bilingual runs only")
    src, tgt = read_pairs(data["train"], args.base)
    pairs = filter_pairs(encode(tok_src, src), encode(tok_tgt, tgt), data.get("filter", {}))
    seed = config.get("training", {}).get("seed", 1)
    print(f"{len(pairs)} training pairs; budget {data['batch'].get('max_tokens')} padded tokens")
    print("bucket       batches  real target tokens/batch  real/padded target  padded src+tgt/batch")
    for bucket in ("both_sides", "longer_side"):
        batch = dict(data["batch"], bucket=bucket)
        rng = random.Random(seed)
        batches = real = padded_target = padded_all = 0
        for _ in range(args.epochs):
            for b in plan(pairs, batch, rng):
                source_width = max(len(pairs[i][0]) for i in b) + 1
                target_width = max(len(pairs[i][1]) for i in b) + 1
                batches += 1
                real += sum(len(pairs[i][1]) + 1 for i in b)
                padded_target += len(b) * target_width
                padded_all += len(b) * (source_width + target_width)
        print(f"{bucket:<12} {batches / args.epochs:>8.0f} {real / batches:>25.0f} "
              f"{real / padded_target:>19.3f} {padded_all / batches:>21.0f}")


if __name__ == "__main__":
    main()
