#!/usr/bin/env python3
"""CTranslate2's decoding speed on the workload of `rosetta bench-decode`, under each backend
setting, same table.

    python3 scripts/bench_ctranslate2.py EXPORT_DIR --src FILE [--beams 1,5]
        [--batch-sizes 1,64] [--batch1-limit 100] [--compute-types float32,int8] [--threads 2]
        [--length-penalty 1] [--ct2-settings default,CT2_PACKED_GEMM=0,CT2_USE_MKL=0]
        [--json FILE]

EXPORT_DIR is what `rosetta export --format ctranslate2` wrote. Like `rosetta bench-decode`,
each (search, batch size) translates the source file once (only the first --batch1-limit
sentences at batch size 1), sentences sorted by length and cut into batches, and counts the
target tokens produced with the EOS of each. Tokenization is done before the clock starts
(Rosetta's table includes its tokenization, a few percent of the time). The length limit is
Rosetta's for the longest sentence (CTranslate2 takes one per call), so a sentence that does
not end may run a little longer than in Rosetta. Greedy search gives
Rosetta's tokens exactly (see `ctranslate2_translate.py`); beam search uses CTranslate2's own
rules, which are Rosetta's with `--length-norm power --alpha L --beam-stop count` for a
--length-penalty L other than 0 (see `ctranslate2_translate.py`). `intra_threads` is --threads
(default 2; give the machine's cores), `inter_threads` 1, `return_scores` off (CTranslate2's default
and its advice for speed).

**Backend settings.** CTranslate2 picks its CPU backend from environment variables read once,
at import; its documented ones for this are tried, each (per compute type) in its own process,
run one after the other (this process never imports ctranslate2):

- `default`: no CT2_* variable (inherited ones removed): MKL with packed GEMM on Intel CPUs,
  oneDNN elsewhere ("the runtime automatically decides whether to use Intel MKL or not based
  on the CPU vendor", docs/environment_variables.md);
- `CT2_PACKED_GEMM=0`: MKL's packed GEMM off ("Set CT2_PACKED_GEMM=0 to disable it if needed",
  docs/performance.md); a no-op where MKL is not used;
- `CT2_USE_MKL=0`: oneDNN instead of MKL ("Force CTranslate2 to use (or not) Intel MKL").

On an Intel Xeon the default was up to 10x slower at batch 1 than the other two
(/work/shared/notes/ctranslate2.md), so a comparison must take the best. `--ct2-settings` takes
any comma-separated list of `default` or `CT2_VAR=VALUE[+CT2_VAR=VALUE...]` (e.g. add
`CT2_USE_MKL=1` to try MKL on an AMD CPU). Each child runs with `CT2_VERBOSE=1`; the table's
`backend` column is what it logged it selected (ISA, MKL or not, the GEMM backend of the compute
type and whether its weights are packed), and the full lines are printed below it.

Output: one table, a row per (compute type, setting, search, batch size), with the peak resident
memory of that setting's process so far; then "best per row": per compute type, search and
batch size, the most target tokens/s over the settings, naming the setting, with every
setting's figure beside it. `--json FILE` also writes every row (read by
`scripts/bench_decode_summary.py`).
Needs `pip install ctranslate2 tokenizers`.
"""

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import ct2_settings  # noqa: E402  (imports nothing of CTranslate2)


def child(args) -> None:
    """One compute type under the environment this process was started with: JSON rows."""
    import ctranslate2
    from tokenizers import Tokenizer

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

    translator = ctranslate2.Translator(args.model, device="cpu", compute_type=args.compute_type,
                                        inter_threads=1, intra_threads=args.threads)
    rows = []
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
            rows.append(dict(beam=beam, batch=batch, sentences=len(work), seconds=seconds,
                             tokens=produced,
                             peak_rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
    print(json.dumps(dict(version=ctranslate2.__version__, sentences=len(tokens), rows=rows)))


def run_setting(args, compute_type: str, setting: str) -> dict:
    """Runs `child` for one compute type under one setting, in its own process."""
    command = [sys.executable, str(pathlib.Path(__file__).resolve()), args.model, "--src", args.src,
               "--beams", args.beams, "--batch-sizes", args.batch_sizes,
               "--batch1-limit", str(args.batch1_limit), "--threads", str(args.threads),
               "--length-penalty", str(args.length_penalty), "--compute-type", compute_type,
               "--child"]
    done = subprocess.run(command, env=ct2_settings.environment(setting), capture_output=True,
                          text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"CTranslate2 {compute_type} under {setting} failed ({done.returncode})")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result.update(compute_type=compute_type, setting=setting,
                  backend=ct2_settings.backend_of(done.stderr, compute_type),
                  log=ct2_settings.log_lines(done.stderr))
    return result


def search_name(beam: int) -> str:
    return "greedy" if beam == 1 else f"beam {beam}"


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
    parser.add_argument("--ct2-settings", default=ct2_settings.DEFAULT_SETTINGS,
                        help="comma-separated: default, or CT2_VAR=VALUE[+CT2_VAR=VALUE...]")
    parser.add_argument("--json", help="also write every row to this file")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--compute-type", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    try:
        settings = ct2_settings.parse_settings(args.ct2_settings)
    except ValueError as e:
        raise SystemExit(str(e))
    compute_types = [c for c in args.compute_types.split(",") if c]

    runs = []
    for compute_type in compute_types:
        for setting in settings:
            runs.append(run_setting(args, compute_type, setting))
    first = runs[0]
    print(f"{args.src}: {first['sentences']} sentences, CTranslate2 {first['version']}, "
          f"intra_threads {args.threads}, inter_threads 1; each setting in its own process")
    print("| compute type | setting | backend (CT2_VERBOSE) | search | batch | sentences | seconds "
          "| sentences/s | target tokens/s | peak RSS MiB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for run in runs:
        for r in run["rows"]:
            print(f"| {run['compute_type']} | {run['setting']} | {run['backend'] or 'n/a'} | "
                  f"{search_name(r['beam'])} | {r['batch']} | {r['sentences']} | "
                  f"{r['seconds']:.1f} | {r['sentences'] / r['seconds']:.1f} | "
                  f"{r['tokens'] / r['seconds']:.0f} | {r['peak_rss_mib']:.0f} |")

    print()
    print("Best per row (target tokens/s; every setting's figure beside it):")
    print("| compute type | search | batch | best target tokens/s | best setting | "
          + " | ".join(settings) + " |")
    print("| --- | --- | --- | --- | --- | " + " | ".join("---" for _ in settings) + " |")
    for compute_type in compute_types:
        mine = {run["setting"]: run for run in runs if run["compute_type"] == compute_type}
        for i, r in enumerate(mine[settings[0]]["rows"]):
            rates = {s: mine[s]["rows"][i]["tokens"] / mine[s]["rows"][i]["seconds"]
                     for s in settings}
            best = max(settings, key=lambda s: rates[s])
            print(f"| {compute_type} | {search_name(r['beam'])} | {r['batch']} | "
                  f"{rates[best]:.0f} | {best} | "
                  + " | ".join(f"{rates[s]:.0f}" for s in settings) + " |")

    for compute_type in compute_types:
        note = ct2_settings.same_backend_note(runs, compute_type)
        if note:
            print(f"Note: {note}.")
    print()
    print("What CTranslate2 logged it selected (CT2_VERBOSE=1), per setting:")
    for run in runs:
        print(f"- {run['compute_type']}, {run['setting']}: " + ("; ".join(run["log"]) or "nothing"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(threads=args.threads, settings=settings, runs=runs), f, indent=1)


if __name__ == "__main__":
    main()
