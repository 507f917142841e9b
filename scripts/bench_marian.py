#!/usr/bin/env python3
"""Decoding speed of a full-size OPUS-MT-shaped MarianMT model in Rosetta, `transformers` and
CTranslate2, one invocation (issue #37's benchmark).

    python3 scripts/bench_marian.py [--src FILE] [--lines N] [--batch1-limit N]
        [--forced-len N] [--threads N] [--beams 1,4] [--batch-sizes 1,64]
        [--ct2-settings default,CT2_PACKED_GEMM=0,CT2_USE_MKL=0] [--ct2-steps n+1|n]
        [--systems rosetta,transformers,ctranslate2] [--model DIR] [--rosetta-bin PATH]
        [--workdir DIR] [--json FILE]

(`scripts/bench_marian.sh` runs this with $PYTHON, default ROSETTA_PYTHON or python3.)

**The model.** `scripts/make_marian_fixture.py full DIR`: an untrained MarianMT with OPUS-MT's
full dimensions (d_model 512, 6 + 6 layers, 8 heads, FFN 2048, swish, shared vocabulary of
58,101, tied tables), seeded, written by `save_pretrained` into a temporary directory (300 MB;
`--model DIR` reuses one). The SAME weights run in all three systems:

- **Rosetta**: `rosetta import-hf DIR --output RUN`, then `rosetta bench-decode --checkpoint RUN
  --src SRC --beams 1,4 --batch-sizes 1,64 --batch1-limit L --forced-len N --beam-stop
  transformers --length-norm power --alpha 1` (the binary built by `cargo build -p
  rosetta-cli`, run directly, `RAYON_NUM_THREADS` = threads; flex backend, f32). Its clock covers
  tokenization, the batches (sorted by length), the searches and detokenization.
- **transformers** (with its KV cache): `MarianMTModel.from_pretrained(DIR).eval()`,
  `torch.set_num_threads(threads)`, under `torch.inference_mode()`, `generate(input_ids,
  attention_mask, num_beams=k, min_new_tokens=N, max_new_tokens=N + 1)` with the directory's
  generation_config.json otherwise (`bad_words_ids` [[pad]], `forced_eos_token_id` 0,
  `length_penalty` 1, `early_stopping` false: what Rosetta's flags above reproduce). Sentences
  sorted by length (stable, as Rosetta sorts them) and cut into batches; a batch of 64 is padded
  on the right with an attention mask, a batch of 1 is not padded. Tokenization is done before
  the clock starts.
  Why these arguments (transformers 5.23's generation/utils.py and logits_process.py):
  `min_new_tokens=N` sets `min_length = N + 1` (the decoder's start token counts), and
  `MinLengthLogitsProcessor` / `MinNewTokensLengthLogitsProcessor` set EOS to -inf while fewer
  than N tokens were generated; `max_new_tokens=N + 1` sets `max_length = N + 2`, and
  `ForcedEOSTokenLogitsProcessor` (`forced_eos_token_id`) sets every logit but EOS's to -inf at
  `cur_len == max_length - 1`, i.e. once N tokens were generated: every output is N tokens + EOS,
  the EOS step being decoded (as in Rosetta). (`max_new_tokens` counts the EOS: `min_new_tokens=N,
  max_new_tokens=N` gives N - 1 tokens + EOS; `min_new_tokens=N + 1, max_new_tokens=N + 1` also
  gives N + EOS, because the forced-EOS processor runs after the minimum-length ones.) Checked on
  every output: N tokens, none EOS or padding, then EOS.
- **CTranslate2**, float32: `rosetta export --checkpoint RUN --format ctranslate2`, then
  `Translator(CT2DIR, device="cpu", compute_type="float32", intra_threads=threads,
  inter_threads=1).translate_batch(tokens, beam_size=k, max_batch_size=b,
  batch_type="examples", length_penalty=1, min_decoding_length=N, max_decoding_length=N + 1)`
  on the source token strings (MarianTokenizer's pieces without the EOS: the export's config
  adds it), under each backend setting in its own process (scripts/ct2_settings.py: `default`,
  `CT2_PACKED_GEMM=0`, `CT2_USE_MKL=0`, with what CT2_VERBOSE=1 says it selected).
  CTranslate2's semantics (src/decoding.cc, 4.8): `max_decoding_length` counts decoding steps,
  the step that produces EOS included (`is_last_step`: `step + 1 == max_length`, after which
  the hypothesis ends, EOS or not; an EOS is not kept in the hypothesis); `min_decoding_length`
  disables EOS while `step < min_length`. It has no forced EOS. So `min = max = N` gives N tokens
  in N decoder steps (no EOS step), and `min = N, max = N + 1` (the default, `--ct2-steps n+1`)
  runs N + 1 decoder steps for every output, as Rosetta and transformers do, the last token being
  whatever ranks first (EOS or not: N or N + 1 tokens; checked). Counted tokens: N + 1 per
  output with `n+1` (the same work and the same count as the others), N with `--ct2-steps n`
  (`min = max = N`: what it decoded).

**The workload.** The sources (default data/numbers/test.en; `--lines N` keeps the first N);
each (beam, batch size) decodes them once, all of them at batch > 1, the first `--batch1-limit`
(default 100) at batch 1, in the order greedy b1, greedy b64, beam4 b1, beam4 b64 (Rosetta's
order), no warm-up in any system (`rosetta bench-decode` has none). Every output is forced to N
(`--forced-len`, default 20) tokens + EOS. Target tokens/s counts N + 1 per output (tokens +
EOS, as `rosetta bench-decode` counts them: `target_tokens.len() + 1`), the best hypothesis's for
beam search. Each system runs in its own process, one after the other (this one imports neither
torch nor ctranslate2 and waits); threads = `--threads` (default: all logical CPUs).

**Same weights, checked.** The greedy outputs of the first few sentences (from the batch-1 runs
of transformers and CTranslate2, and from `rosetta translate --beam 1 --batch-size 1
--max-len-a 0 --max-len-b N`, outside any clock) are compared: token strings between
transformers and CTranslate2, decoded text between Rosetta and transformers.

**Output.** Each system's table, then one markdown summary: rows greedy b1, greedy b64, beam4
b1, beam4 b64; columns Rosetta, transformers, CT2 fp32 per setting, CT2 best (setting),
Rosetta / CT2 best, Rosetta / transformers; the peak resident memory of every process (GNU
time's %M when /usr/bin/time exists, else the child's ru_maxrss from wait4, the same quantity),
the CPU model and versions. `--json FILE` writes every figure.

Needs Python with torch 2.15, transformers 5.23, sentencepiece and ctranslate2 4.x, and cargo.
Run it on a quiet machine: OpenMP threads (PyTorch, CTranslate2) spin-wait, so figures taken
while anything else runs are noise.
"""

import argparse
import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import ct2_settings  # noqa: E402  (imports nothing of CTranslate2)
from bench_decode_anchor import cpu_model, fmt, last_json, ratio  # noqa: E402  (no torch either)

CHECK = 8  # greedy outputs compared between systems


def search_name(beam, batch):
    return f"{'greedy' if beam == 1 else f'beam{beam}'} b{batch}"


def ints(text):
    return [int(x) for x in text.split(",") if x.strip()]


def peak_rss_mib():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def workloads(args, n_lines):
    """(beam, batch, sentences) per row, in Rosetta's order (beams outer)."""
    out = []
    for beam in ints(args.beams):
        for batch in ints(args.batch_sizes):
            n = min(args.batch1_limit, n_lines) if batch == 1 and args.batch1_limit > 0 else n_lines
            out.append((beam, batch, n))
    return out


# ---------------------------------------------------------------------------------------------
# Children


def child_prep(args):
    """Tokenizes the sources with MarianTokenizer (ids with EOS, piece strings without it)."""
    import warnings
    warnings.filterwarnings("ignore", message="Recommended: pip install sacremoses.")
    import transformers
    from transformers import MarianTokenizer
    transformers.logging.set_verbosity_error()

    tok = MarianTokenizer.from_pretrained(args.model)
    with open(args.src, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    ids = [tok(line).input_ids for line in lines]
    for row in ids:
        assert row[-1] == tok.eos_token_id, "MarianTokenizer did not append EOS"
    pieces = [tok.convert_ids_to_tokens(row[:-1]) for row in ids]
    with open(args.out, "w") as f:
        json.dump(dict(lines=lines, ids=ids, pieces=pieces, eos=tok.eos_token_id,
                       pad=tok.pad_token_id), f)


def child_transformers(args):
    import warnings
    warnings.filterwarnings("ignore", message="Recommended: pip install sacremoses.")
    import torch
    import transformers
    from transformers import MarianMTModel, MarianTokenizer
    transformers.logging.set_verbosity_error()

    torch.set_num_threads(args.threads)
    with open(args.prep) as f:
        prep = json.load(f)
    tok = MarianTokenizer.from_pretrained(args.model)
    model = MarianMTModel.from_pretrained(args.model).eval()
    dtype = str(next(model.parameters()).dtype)
    gen = model.generation_config
    eos, pad, n = prep["eos"], prep["pad"], args.forced_len
    assert gen.eos_token_id == eos and gen.forced_eos_token_id == eos, "unexpected EOS settings"
    ids = prep["ids"]

    def batches(count, size):
        """Rosetta's batching: the first `count` sentences, stable-sorted by length, in chunks;
        tensors built here, outside the clock."""
        order = sorted(range(count), key=lambda i: len(ids[i]))
        out = []
        for s in range(0, count, size):
            chunk = order[s:s + size]
            width = max(len(ids[i]) for i in chunk)
            input_ids = torch.full((len(chunk), width), pad, dtype=torch.long)
            mask = torch.zeros((len(chunk), width), dtype=torch.long)
            for r, i in enumerate(chunk):
                input_ids[r, :len(ids[i])] = torch.tensor(ids[i])
                mask[r, :len(ids[i])] = 1
            out.append((chunk, input_ids, mask))
        return out

    kwargs = dict(min_new_tokens=n, max_new_tokens=n + 1, use_cache=True)
    rows, check = [], None
    with torch.inference_mode():
        for beam, batch, count in workloads(args, len(ids)):
            work = batches(count, batch)
            outputs = {}
            start = time.perf_counter()
            for chunk, input_ids, mask in work:
                out = model.generate(input_ids=input_ids, attention_mask=mask, num_beams=beam,
                                     **kwargs)
                for r, i in enumerate(chunk):
                    outputs[i] = out[r]
            seconds = time.perf_counter() - start
            tokens = 0
            for i, out in outputs.items():
                gen_ids = out[1:].tolist()  # after the decoder's start token
                assert (len(gen_ids) == n + 1 and gen_ids[n] == eos
                        and eos not in gen_ids[:n] and pad not in gen_ids[:n]), \
                    f"sentence {i}: output {gen_ids} is not {n} tokens + EOS"
                tokens += n + 1
            rows.append(dict(beam=beam, batch=batch, sentences=count, seconds=seconds,
                             tokens=tokens))
            print(f"transformers {search_name(beam, batch)}: {count} sentences, "
                  f"{seconds:.2f} s", file=sys.stderr, flush=True)
            if beam == 1 and batch == 1 and check is None:
                first = [outputs[i][1:n + 1].tolist() for i in range(min(CHECK, count))]
                check = dict(pieces=[tok.convert_ids_to_tokens(x) for x in first],
                             text=[tok.decode(x, skip_special_tokens=True) for x in first])
    settings = (f"transformers {transformers.__version__}, torch {torch.__version__}, {dtype}, "
                f"eval(), torch.inference_mode(), torch.set_num_threads({args.threads}) "
                f"(get_num_threads {torch.get_num_threads()}, interop "
                f"{torch.get_num_interop_threads()}), generate(num_beams=k, "
                f"min_new_tokens={n}, max_new_tokens={n + 1}, use_cache=True), generation_config: "
                f"bad_words_ids {gen.bad_words_ids}, forced_eos_token_id {gen.forced_eos_token_id}, "
                f"length_penalty {gen.length_penalty}, early_stopping {gen.early_stopping}")
    print(json.dumps(dict(system="transformers", version=transformers.__version__,
                          torch=torch.__version__, settings=settings, rows=rows, check=check,
                          peak_rss_mib=peak_rss_mib())))


def child_ct2(args):
    import ctranslate2

    with open(args.prep) as f:
        prep = json.load(f)
    pieces = prep["pieces"]
    n = args.forced_len
    max_len = n + 1 if args.ct2_steps == "n+1" else n
    translator = ctranslate2.Translator(args.ct2_model, device="cpu", compute_type="float32",
                                        inter_threads=1, intra_threads=args.threads)
    rows, check = [], None
    for beam, batch, count in workloads(args, len(pieces)):
        work = pieces[:count]
        start = time.perf_counter()
        out = translator.translate_batch(work, max_batch_size=batch, batch_type="examples",
                                         beam_size=beam, length_penalty=1.0,
                                         min_decoding_length=n, max_decoding_length=max_len)
        seconds = time.perf_counter() - start
        lengths = [len(r.hypotheses[0]) for r in out]
        allowed = {n, n + 1} if args.ct2_steps == "n+1" else {n}
        assert set(lengths) <= allowed, f"CTranslate2 output lengths {sorted(set(lengths))}"
        assert all("</s>" not in r.hypotheses[0][:n] for r in out)
        # n+1: N + 1 decoder steps per output, counted N + 1 (tokens + EOS or the last token).
        tokens = count * (n + 1 if args.ct2_steps == "n+1" else n)
        rows.append(dict(beam=beam, batch=batch, sentences=count, seconds=seconds,
                         tokens=tokens, lengths=sorted(set(lengths))))
        print(f"ctranslate2 {search_name(beam, batch)}: {count} sentences, {seconds:.2f} s",
              file=sys.stderr, flush=True)
        if beam == 1 and batch == 1 and check is None:
            check = dict(pieces=[r.hypotheses[0][:n] for r in out[:CHECK]])
    print(json.dumps(dict(system="ctranslate2", version=ctranslate2.__version__,
                          compute_type="float32", min_decoding_length=n,
                          max_decoding_length=max_len, rows=rows, check=check,
                          peak_rss_mib=peak_rss_mib())))


# ---------------------------------------------------------------------------------------------
# The parent


def run_child(command, env=None, label=""):
    """Runs `command` to completion; returns (stdout, stderr, peak RSS MiB, how measured).
    Peak RSS: GNU time's %M (`-o FILE`) when /usr/bin/time exists, else wait4's ru_maxrss (the
    same quantity: the child's maximum resident set size)."""
    gnu_time = os.path.exists("/usr/bin/time")
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(suffix=".rss") as rss_file:
        full = (["/usr/bin/time", "-f", "%M", "-o", rss_file.name] if gnu_time else []) + command
        print("$ " + " ".join(command), file=sys.stderr, flush=True)
        child = subprocess.Popen(full, stdout=out, stderr=err, env=env, cwd=ROOT)
        _, status, usage = os.wait4(child.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
        rss, how = usage.ru_maxrss / 1024, "wait4 ru_maxrss"
        if gnu_time:
            try:
                rss = int(pathlib.Path(rss_file.name).read_text().strip().splitlines()[-1]) / 1024
                how = "GNU time %M"
            except (ValueError, IndexError):
                pass
    if code != 0:
        sys.stderr.write(stdout + stderr)
        raise SystemExit(f"{label or command[0]} failed with status {code}")
    return stdout, stderr, rss, how


def build_rosetta():
    command = ["cargo", "build", "-q", "-p", "rosetta-cli"]
    print("$ " + " ".join(command), file=sys.stderr, flush=True)
    subprocess.run(command, cwd=ROOT, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))
    return str(pathlib.Path(target, "debug", "rosetta").resolve())


def parse_rosetta(stdout):
    """bench-decode's table -> rows."""
    rows = []
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 6 or not (cells[0] == "greedy" or cells[0].startswith("beam ")):
            continue
        beam = 1 if cells[0] == "greedy" else int(cells[0].split()[1])
        rows.append(dict(beam=beam, batch=int(cells[1]), sentences=int(cells[2]),
                         seconds=float(cells[3]), sentences_per_s=float(cells[4]),
                         rate=float(cells[5])))
    return rows


def quiet_output(command):
    try:
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                              timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def print_rows(rows, extra=""):
    print("| search | batch | sentences | seconds | sentences/s | target tokens/s |" + extra)
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        name = "greedy" if r["beam"] == 1 else f"beam {r['beam']}"
        print(f"| {name} | {r['batch']} | {r['sentences']} | {r['seconds']:.2f} | "
              f"{r['sentences'] / r['seconds']:.2f} | {r['tokens'] / r['seconds']:.0f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", default=str(ROOT / "data/numbers/test.en"))
    parser.add_argument("--lines", type=int, default=0,
                        help="use only the first N source lines (0 = all)")
    parser.add_argument("--batch1-limit", type=int, default=100,
                        help="sentences decoded at batch size 1 (0 = all)")
    parser.add_argument("--forced-len", type=int, default=20)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--beams", default="1,4")
    parser.add_argument("--batch-sizes", default="1,64")
    parser.add_argument("--ct2-settings", default=ct2_settings.DEFAULT_SETTINGS,
                        help="comma-separated: default, or CT2_VAR=VALUE[+CT2_VAR=VALUE]")
    parser.add_argument("--ct2-steps", choices=["n+1", "n"], default="n+1",
                        help="n+1: min_decoding_length N, max N + 1 (N + 1 decoder steps, as the "
                             "others; counted N + 1); n: min = max = N (N steps; counted N)")
    parser.add_argument("--systems", default="rosetta,transformers,ctranslate2")
    parser.add_argument("--model", help="an existing `make_marian_fixture.py full` directory")
    parser.add_argument("--rosetta-bin", help="the rosetta executable (skips the cargo build)")
    parser.add_argument("--workdir", help="keep the run, export and sources here (new or empty)")
    parser.add_argument("--json", help="also write every figure to this file")
    # Children (internal).
    parser.add_argument("--child", choices=["prep", "transformers", "ct2"], help=argparse.SUPPRESS)
    parser.add_argument("--prep", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--ct2-model", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        {"prep": child_prep, "transformers": child_transformers, "ct2": child_ct2}[args.child](args)
        return

    systems = [s for s in args.systems.split(",") if s]
    unknown = set(systems) - {"rosetta", "transformers", "ctranslate2"}
    if unknown:
        raise SystemExit(f"unknown systems {sorted(unknown)}")
    try:
        settings = ct2_settings.parse_settings(args.ct2_settings)
    except ValueError as e:
        raise SystemExit(str(e))
    if args.forced_len < 1:
        raise SystemExit("--forced-len must be at least 1")
    if args.workdir:
        work = pathlib.Path(args.workdir).resolve()
        work.mkdir(parents=True, exist_ok=True)
        if any(work.iterdir()):
            raise SystemExit(f"--workdir {work} is not empty")
        cleanup = None
    else:
        cleanup = tempfile.TemporaryDirectory(prefix="bench-marian-")
        work = pathlib.Path(cleanup.name)
    try:
        run(args, systems, settings, work)
    finally:
        if cleanup:
            cleanup.cleanup()


def run(args, systems, settings, work):
    me = [sys.executable, str(pathlib.Path(__file__).resolve())]
    n = args.forced_len

    # The sources: the first --lines lines, blank lines refused (Rosetta skips them).
    with open(args.src, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    if args.lines:
        lines = lines[:args.lines]
    if not lines or any(not line.strip() for line in lines):
        raise SystemExit(f"{args.src}: empty, or has blank lines (Rosetta would skip them)")
    src = work / "src.txt"
    src.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    check_src = work / "check.txt"
    n_check = min(CHECK, args.batch1_limit or len(lines), len(lines))
    check_src.write_text("".join(line + "\n" for line in lines[:n_check]), encoding="utf-8")
    rows_spec = workloads(args, len(lines))

    common = ["--threads", str(args.threads), "--forced-len", str(n), "--beams", args.beams,
              "--batch-sizes", args.batch_sizes, "--batch1-limit", str(args.batch1_limit)]
    report = dict(cpu=cpu_model(), threads=args.threads, forced_len=n, src=str(args.src),
                  sentences=len(lines), batch1_limit=args.batch1_limit, ct2_steps=args.ct2_steps,
                  workloads=[dict(row=search_name(b, s), beam=b, batch=s, sentences=c)
                             for b, s, c in rows_spec],
                  versions=dict(python=platform.python_version()), rosetta=None,
                  transformers=None, ctranslate2=[], setup={})

    # 1. The model.
    if args.model:
        model = pathlib.Path(args.model).resolve()
    else:
        model = work / "marian-full"
        start = time.perf_counter()
        run_child([sys.executable, str(HERE / "make_marian_fixture.py"), "full", str(model)],
                  label="make_marian_fixture.py full")
        report["setup"]["make_model_s"] = time.perf_counter() - start
    report["model"] = str(model)
    with open(model / "config.json") as f:
        config = json.load(f)
    report["model_config"] = {k: config.get(k) for k in (
        "d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads",
        "encoder_ffn_dim", "vocab_size", "activation_function", "tie_word_embeddings")}

    # 2. Tokenize once (MarianTokenizer, its own process).
    prep = work / "prep.json"
    run_child(me + ["--child", "prep", "--model", str(model), "--src", str(src), "--out",
                    str(prep)], label="tokenization")

    print(f"CPU: {report['cpu']}; {args.threads} threads per system; each system in its own "
          f"process, one after the other")
    print(f"Model: {model} (untrained, {report['model_config']}); {len(lines)} sentences from "
          f"{args.src}, batch 1 on the first {rows_spec[0][2] if rows_spec else 0}; every output "
          f"forced to {n} tokens + EOS; target tokens/s counts {n + 1} per output")
    smoke = bool(args.lines) or 0 < args.batch1_limit < 100
    if smoke:
        print("SMOKE TEST (fewer sentences than the benchmark's 500 / 100): noisy figures")

    # 3. Rosetta.
    bin_ = None
    if "rosetta" in systems or "ctranslate2" in systems:
        bin_ = args.rosetta_bin or build_rosetta()
        report["versions"]["rosetta"] = quiet_output([bin_, "--version"])
        report["versions"]["rosetta_git"] = (
            quiet_output(["git", "rev-parse", "--short", "HEAD"])
            + (" (with uncommitted changes)" if quiet_output(["git", "status", "--porcelain",
                                                               "--untracked-files=no"]) else ""))
        report["versions"]["rustc"] = quiet_output(["rustc", "--version"])
        run_dir, ct2_dir = work / "run", work / "ct2"
        start = time.perf_counter()
        run_child([bin_, "import-hf", str(model), "--output", str(run_dir)], label="import-hf")
        report["setup"]["import_s"] = time.perf_counter() - start

    if "rosetta" in systems:
        env = dict(os.environ, RAYON_NUM_THREADS=str(args.threads))
        command = [bin_, "bench-decode", "--checkpoint", str(run_dir), "--src", str(src),
                   "--beams", args.beams, "--batch-sizes", args.batch_sizes,
                   "--batch1-limit", str(args.batch1_limit), "--forced-len", str(n),
                   "--beam-stop", "transformers", "--length-norm", "power", "--alpha", "1"]
        stdout, _, rss, how = run_child(command, env=env, label="rosetta bench-decode")
        rows = parse_rosetta(stdout)
        if len(rows) != len(rows_spec):
            sys.stderr.write(stdout)
            raise SystemExit("could not read rosetta bench-decode's table")
        for r, (beam, batch, count) in zip(rows, rows_spec):
            assert (r["beam"], r["batch"], r["sentences"]) == (beam, batch, count), r
            # Rosetta prints tokens/s and sentences/s, not the tokens: their ratio is the mean
            # tokens per output (expected N + 1; sentences/s has 1 decimal, so roughly).
            r["tokens_per_output"] = r["rate"] / r["sentences_per_s"] if r["sentences_per_s"] else None
            r["tokens"] = count * (n + 1)  # what the forced length makes it count
        print(f"\n## Rosetta (bench-decode, flex f32, RAYON_NUM_THREADS={args.threads})\n")
        print("$ " + " ".join(command))
        print(stdout.rstrip())
        report["rosetta"] = dict(command=" ".join(command), rows=rows, peak_rss_mib=rss,
                                 rss_source=how)
        # Same-weights check: greedy, first sentences, batch 1, at most N tokens + EOS.
        out, _, _, _ = run_child([bin_, "translate", "--checkpoint", str(run_dir), "--beam", "1",
                                  "--batch-size", "1", "--max-len-a", "0", "--max-len-b", str(n),
                                  "--input", str(check_src)], env=env, label="rosetta translate")
        report["rosetta"]["check"] = dict(text=out.splitlines())

    # 4. transformers.
    if "transformers" in systems:
        stdout, _, rss, how = run_child(
            me + ["--child", "transformers", "--model", str(model), "--prep", str(prep)] + common,
            label="transformers")
        result = last_json(stdout)
        result.update(peak_rss_mib=rss, rss_source=how)
        report["transformers"] = result
        report["versions"]["transformers"] = result["version"]
        report["versions"]["torch"] = result["torch"]
        print(f"\n## transformers, KV cache\n\n{result['settings']}\n")
        print_rows(result["rows"])

    # 5. CTranslate2.
    if "ctranslate2" in systems:
        start = time.perf_counter()
        run_child([bin_, "export", "--checkpoint", str(run_dir), "--format", "ctranslate2",
                   "--output", str(ct2_dir)], label="export --format ctranslate2")
        report["setup"]["export_ct2_s"] = time.perf_counter() - start
        report["ct2_model_bytes"] = sum(p.stat().st_size for p in ct2_dir.iterdir())
        for setting in settings:
            stdout, stderr, rss, how = run_child(
                me + ["--child", "ct2", "--ct2-model", str(ct2_dir), "--prep", str(prep),
                      "--ct2-steps", args.ct2_steps] + common,
                env=ct2_settings.environment(setting), label=f"CTranslate2 {setting}")
            result = last_json(stdout)
            result.update(setting=setting, peak_rss_mib=rss, rss_source=how,
                          backend=ct2_settings.backend_of(stderr, "float32"),
                          log=ct2_settings.log_lines(stderr))
            report["ctranslate2"].append(result)
            report["versions"]["ctranslate2"] = result["version"]
            print(f"\n## CTranslate2 {result['version']} float32, {setting}\n\n"
                  f"translate_batch(beam_size=k, max_batch_size=b, batch_type='examples', "
                  f"length_penalty=1, min_decoding_length={result['min_decoding_length']}, "
                  f"max_decoding_length={result['max_decoding_length']}), intra_threads "
                  f"{args.threads}, inter_threads 1; CT2_VERBOSE: "
                  f"{result['backend'] or '(nothing logged)'}\n")
            print_rows(result["rows"])

    report["check"] = same_weights(report, n_check)
    report["summary"] = summary(report, settings, rows_spec)
    print_summary(report, settings)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
        print(f"\nJSON: {args.json}")


def same_weights(report, n_check):
    """Greedy outputs of the first sentences compared between systems."""
    out = {}
    hf = (report["transformers"] or {}).get("check")
    ros = (report["rosetta"] or {}).get("check")
    if hf and ros:
        same = sum(a == b for a, b in zip(ros["text"], hf["text"]))
        out["rosetta_vs_transformers_text"] = f"{same}/{len(hf['text'])}"
    if hf:
        for r in report["ctranslate2"]:
            if r.get("check"):
                same = sum(a == b for a, b in zip(r["check"]["pieces"], hf["pieces"]))
                out[f"ctranslate2_{r['setting']}_vs_transformers_tokens"] = \
                    f"{same}/{len(hf['pieces'])}"
    return out


def rates_of(rows):
    return {search_name(r["beam"], r["batch"]): r["tokens"] / r["seconds"] for r in rows}


def summary(report, settings, rows_spec):
    ros = {search_name(r["beam"], r["batch"]): r["rate"]
           for r in (report["rosetta"] or {}).get("rows", [])}
    hf = rates_of(report["transformers"]["rows"]) if report["transformers"] else {}
    ct2 = {r["setting"]: rates_of(r["rows"]) for r in report["ctranslate2"]}
    rows = []
    for beam, batch, count in rows_spec:
        name = search_name(beam, batch)
        per = {s: ct2.get(s, {}).get(name) for s in settings}
        best = max(((v, s) for s, v in per.items() if v), default=(None, None))
        rows.append(dict(row=name, sentences=count, rosetta=ros.get(name),
                         transformers=hf.get(name), ct2=per, ct2_best=best[0],
                         ct2_best_setting=best[1],
                         rosetta_over_ct2_best=(ros[name] / best[0]
                                                if ros.get(name) and best[0] else None),
                         rosetta_over_transformers=(ros[name] / hf[name]
                                                    if ros.get(name) and hf.get(name) else None)))
    return rows


def print_summary(report, settings):
    n = report["forced_len"]
    print(f"\n## Summary: target tokens/s ({n} forced tokens + EOS per output, counted {n + 1}; "
          f"{report['sentences']} sentences, batch 1 on the first "
          f"{report['workloads'][0]['sentences'] if report['workloads'] else 0})\n")
    head = ["row", "Rosetta", "transformers"]
    head += [f"CT2 fp32 {s.replace('CT2_', '')}" for s in settings]
    head += ["CT2 fp32 best (setting)", "Rosetta / CT2-best", "Rosetta / transformers"]
    print("| " + " | ".join(head) + " |")
    print("| " + " | ".join("---" for _ in head) + " |")
    for r in report["summary"]:
        cells = [r["row"], fmt(r["rosetta"]), fmt(r["transformers"])]
        cells += [fmt(r["ct2"][s]) for s in settings]
        cells += [f"{fmt(r['ct2_best'])} ({r['ct2_best_setting'].replace('CT2_', '')})"
                  if r["ct2_best"] else "n/a",
                  ratio(r["rosetta"], r["ct2_best"]), ratio(r["rosetta"], r["transformers"])]
        print("| " + " | ".join(cells) + " |")
    print("\nClocks: Rosetta's covers its tokenization and detokenization too (bench-decode "
          "times translate_lines); transformers' starts from id tensors and CTranslate2's from "
          "token strings. No warm-up in any system (bench-decode has none).")
    if report["ct2_steps"] == "n":
        print(f"\nCTranslate2 with min = max = {n}: {n} decoder steps per output (no EOS step), "
              f"counted {n} tokens per output.")
    note = ct2_settings.same_backend_note(
        [dict(r, compute_type="float32") for r in report["ctranslate2"]], "float32")
    if note:
        print(f"\nNote: {note}.")
    print("\nPeak resident memory of each process:")
    if report["rosetta"]:
        print(f"- Rosetta bench-decode: {report['rosetta']['peak_rss_mib']:.0f} MiB "
              f"({report['rosetta']['rss_source']})")
    if report["transformers"]:
        print(f"- transformers: {report['transformers']['peak_rss_mib']:.0f} MiB "
              f"({report['transformers']['rss_source']})")
    for r in report["ctranslate2"]:
        print(f"- CTranslate2 float32 {r['setting']}: {r['peak_rss_mib']:.0f} MiB "
              f"({r['rss_source']})")
    if report["ctranslate2"]:
        print("\nCTranslate2 backend per setting (CT2_VERBOSE=1):")
        for r in report["ctranslate2"]:
            print(f"- {r['setting']}: {r['backend'] or '(nothing logged)'}")
    if report["rosetta"]:
        per = [f"{search_name(r['beam'], r['batch'])}: {r['tokens_per_output']:.1f}" for r in report["rosetta"]["rows"]
               if r.get("tokens_per_output")]
        print(f"\nRosetta tokens per output (its tokens/s over sentences/s, the latter printed "
              f"to 0.1): {', '.join(per)} (expected {n + 1})")
    if report["check"]:
        print("\nSame weights: greedy outputs of the first sentences (batch 1) identical: "
              + ", ".join(f"{k} {v}" for k, v in report["check"].items()))
    v = report["versions"]
    print(f"\nVersions: {', '.join(f'{k} {val}' for k, val in v.items() if val)}")
    print(f"CPU: {report['cpu']}; {report['threads']} threads per system")


if __name__ == "__main__":
    main()
