#!/usr/bin/env python3
"""CTranslate2's decoding speed on the workload of `rosetta bench-decode`, same table.

    python3 scripts/bench_ctranslate2.py EXPORT_DIR --src FILE [--beams 1,5]
        [--batch-sizes 1,64] [--batch1-limit 100] [--compute-types float32,int8] [--threads 2]
        [--length-penalty 1]

EXPORT_DIR is what `rosetta export --format ctranslate2` wrote. Like `rosetta bench-decode`,
each (search, batch size) translates the source file once (only the first --batch1-limit
sentences at batch size 1), sentences sorted by length and cut into batches, and counts the
target tokens produced with the EOS of each. Tokenization is done before the clock starts
(Rosetta's table includes its tokenization, a few percent of the time). The length limit is
Rosetta's for the longest sentence (CTranslate2 takes one per call), so a sentence that does
not end may run a little longer than in Rosetta. Greedy search gives
Rosetta's tokens exactly (see `ctranslate2_translate.py`); beam search uses CTranslate2's own
rules, which are Rosetta's with `--length-norm power --alpha L --beam-stop count` for a
--length-penalty L other than 0 (see `ctranslate2_translate.py`). The last column is the process's peak resident memory so far.
Needs `pip install ctranslate2 tokenizers`.
"""

import argparse
import json
import os
import resource
import time

import ctranslate2
from tokenizers import Tokenizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--src", required=True)
    parser.add_argument("--beams", default="1,5")
    parser.add_argument("--batch-sizes", default="1,64")
    parser.add_argument("--batch1-limit", type=int, default=100)
    parser.add_argument("--compute-types", default="float32,int8")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--length-penalty", type=float, default=1.0)
    args = parser.parse_args()

    joint = os.path.join(args.model, "tokenizer.json")
    source_path = joint if os.path.exists(joint) else os.path.join(args.model, "tokenizer.source.json")
    source = Tokenizer.from_file(source_path)
    with open(args.src, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    with open(os.path.join(args.model, "model.json")) as f:
        max_positions = json.load(f)["max_positions"]
    # As `rosetta translate` frames them: blank lines skipped, sources cut to max_positions - 1.
    cut = max(max_positions - 1, 1)
    tokens = [source.encode(line, add_special_tokens=False).tokens[:cut]
              for line in lines if line.strip()]
    # Rosetta's length limit (a = 1.5, b = 10, on the source with its EOS) for the longest
    # sentence, capped by the positions the model has: one limit per call in CTranslate2.
    limit = min(int(1.5 * (max(len(t) for t in tokens) + 1)) + 10, max_positions - 1)

    print(f"{args.src}: {len(tokens)} sentences, CTranslate2 {ctranslate2.__version__}, "
          f"{args.threads} threads")
    print("| compute type | search | batch | sentences | seconds | sentences/s | target tokens/s | peak RSS MiB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for compute_type in args.compute_types.split(","):
        translator = ctranslate2.Translator(args.model, device="cpu", compute_type=compute_type,
                                            inter_threads=1, intra_threads=args.threads)
        for beam in (int(b) for b in args.beams.split(",")):
            for batch in (int(b) for b in args.batch_sizes.split(",")):
                work = tokens[: args.batch1_limit] if batch == 1 and args.batch1_limit > 0 else tokens
                start = time.perf_counter()
                results = translator.translate_batch(work, max_batch_size=batch,
                                                     batch_type="examples", beam_size=beam,
                                                     max_decoding_length=limit,
                                                     min_decoding_length=0,
                                                     length_penalty=args.length_penalty)
                seconds = time.perf_counter() - start
                produced = sum(len(r.hypotheses[0]) + 1 for r in results)
                search = "greedy" if beam == 1 else f"beam {beam}"
                rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                print(f"| {compute_type} | {search} | {batch} | {len(work)} | {seconds:.1f} | "
                      f"{len(work) / seconds:.1f} | {produced / seconds:.0f} | {rss:.0f} |")
        del translator


if __name__ == "__main__":
    main()
