#!/usr/bin/env python3
"""Data preparation at scale: `rosetta prepare` and the first training steps on N pairs.

For each N, a corpus of N pairs is assembled from real sentences (the Tatoeba English-French
training split, repeated with every copy shuffled differently, as the issue that asked for this
did), then, each in its own process:

  1. `rosetta prepare`: tokenizer training and encoding into a fresh cache; wall time, pairs/s,
     peak resident memory (the child's own maximum, from wait4), cache size on disk;
  2. `rosetta train --max-steps 1` from that cache: time to the first training step (wall time
     of the whole command, checkpoint included) and its peak resident memory;
  3. `rosetta train --max-steps STEPS`: peak resident memory while training.

Usage:
  python3 scripts/bench_data.py --rosetta target/debug/rosetta --pairs 100000,1000000 \
      --work /tmp/bench-data [--vocab 16000] [--steps 30] [--keep]

The corpora (plain text, about 67 bytes per pair) and runs are written under --work, which
needs about 130 bytes per pair of free disk (corpus and cache). Needs
data/tatoeba-fra-eng (scripts/get_data.py tatoeba) or --from DIR holding train.en.gz/train.fr.gz.
Prints one Markdown table row per N; nothing here is timed by the test suite.
"""

import argparse
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def read_gz(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def make_corpus(source_dir, out_dir, pairs):
    """N pairs: the training split repeated, every copy in its own shuffled order."""
    done = out_dir / "done.json"
    if done.is_file() and json.loads(done.read_text()).get("pairs") == pairs:
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    en = read_gz(source_dir / "train.en.gz")
    fr = read_gz(source_dir / "train.fr.gz")
    assert len(en) == len(fr), "misaligned source corpus"
    order = list(range(len(en)))
    written = 0
    copy = 0
    with open(out_dir / "train.en", "w", encoding="utf-8") as fe, open(
        out_dir / "train.fr", "w", encoding="utf-8"
    ) as ff:
        while written < pairs:
            random.Random(copy).shuffle(order)
            take = order[: pairs - written]
            fe.write("\n".join(en[i] for i in take) + "\n")
            ff.write("\n".join(fr[i] for i in take) + "\n")
            written += len(take)
            copy += 1
    done.write_text(json.dumps({"pairs": pairs}))


def run(cmd, log):
    """Runs `cmd`, returning (wall seconds, peak RSS in MiB) of that child alone."""
    start = time.monotonic()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed ({code}); see {log}")
    return wall, usage.ru_maxrss / 1024.0


def du(path):
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def config_text(corpus, valid_dir, vocab, out, steps):
    return f"""output_dir = "{out}"

[model]
d_model = 256
n_heads = 4
d_ff = 1024
n_encoder_layers = 3
n_decoder_layers = 3
dropout = 0.1
max_positions = 128
share_embeddings = true
tie_output_projection = true

[data]
train = {{ source = "{corpus}/train.en", target = "{corpus}/train.fr" }}
valid = {{ source = "{valid_dir}/valid.en.gz", target = "{valid_dir}/valid.fr.gz" }}
tokenizer = {{ model = "bpe", vocab_size = {vocab}, joint = true }}
filter = {{ max_source_tokens = 96, max_target_tokens = 96, max_length_ratio = 3.0 }}
batch = {{ by = "tokens", max_tokens = 2048, bucket = "longer_side" }}

[training]
device = "flex"
seed = 1
max_steps = {steps}
validate_every = 1000000
log_every = 10
bleu_sentences = 0

[checkpoint]
every = 1000000
keep_last = 1
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rosetta", default=str(ROOT / "target/debug/rosetta"))
    parser.add_argument("--pairs", default="100000,1000000")
    parser.add_argument("--work", default="/tmp/rosetta-bench-data")
    parser.add_argument("--from", dest="source", default=str(ROOT / "data/tatoeba-fra-eng"))
    parser.add_argument("--vocab", type=int, default=16000)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--keep", action="store_true", help="keep runs and corpora")
    args = parser.parse_args()

    source = Path(args.source)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    print(f"# {cpu}, {os.cpu_count()} cores; {args.rosetta}; joint BPE {args.vocab}")
    print(
        "| pairs | prepare s | pairs/s | prepare peak RSS MiB | cache MiB "
        "| first step s | first-step peak RSS MiB | training peak RSS MiB |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for n in [int(x) for x in args.pairs.split(",")]:
        corpus = work / f"corpus-{n}"
        make_corpus(source, corpus, n)
        run_dir = work / f"run-{n}"
        shutil.rmtree(run_dir, ignore_errors=True)
        run_dir.mkdir(parents=True)
        config = run_dir / "config.toml"
        config.write_text(
            config_text(corpus, source.resolve(), args.vocab, run_dir / "out", args.steps)
        )
        prep_s, prep_rss = run(
            [args.rosetta, "prepare", "--config", config], run_dir / "prepare.log"
        )
        cache = du(run_dir / "out" / "cache")
        first_s, first_rss = run(
            [args.rosetta, "train", "--config", config, "--max-steps", "1"],
            run_dir / "first-step.log",
        )
        shutil.rmtree(run_dir / "out" / "checkpoints", ignore_errors=True)
        for name in ["metrics.jsonl", "train.log", "state.json"]:
            (run_dir / "out" / name).unlink(missing_ok=True)
        _, train_rss = run(
            [args.rosetta, "train", "--config", config, "--max-steps", str(args.steps)],
            run_dir / "train.log",
        )
        print(
            f"| {n:,} | {prep_s:.1f} | {n / prep_s:,.0f} | {prep_rss:,.0f} | {cache / 2**20:,.0f} "
            f"| {first_s:.1f} | {first_rss:,.0f} | {train_rss:,.0f} |",
            flush=True,
        )
        if not args.keep:
            shutil.rmtree(run_dir, ignore_errors=True)
            shutil.rmtree(corpus, ignore_errors=True)


if __name__ == "__main__":
    main()
