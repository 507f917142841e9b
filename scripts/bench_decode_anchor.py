#!/usr/bin/env python3
"""The random-weight decoding anchor in Rosetta, cached PyTorch and CTranslate2, one invocation.

    python3 scripts/bench_decode_anchor.py [--threads N] [--ct2-settings LIST]
        [--compute-types float32,int8] [--systems rosetta,pytorch,ctranslate2]
        [--rosetta-bench PATH] [--sentences N] [--rounds N] [--json FILE]

(`scripts/bench_decode_anchor.sh` runs this with $PYTHON, default ROSETTA_PYTHON or python3.)

**What it measures.** The workload of `cargo bench -p rosetta-model --bench decode --profile dev`
(crates/model/benches/decode.rs), in each of three systems, each in its own process, one after
the other, each alone on the machine (this process only starts them and waits; it imports
neither torch nor ctranslate2):

- model: encoder-decoder Transformer, post-norm, d_model 256, 4 heads, d_ff 1,024, 3 + 3
  layers, source and target vocabularies of 8,000 (separate embeddings, untied output projection
  with a bias, no final LayerNorms), random weights;
- sources: 64 sentences of 12 random tokens + EOS, the very ids of decode.rs (its LCG is
  reproduced here and handed to PyTorch and CTranslate2);
- outputs forced to exactly 20 tokens: greedy and beam 5, batch 64 over the 64 sentences and
  batch 1 over the first 16; a warm-up of 4 sentences (batch 4, greedy) before the clock, as
  decode.rs does;
- target tokens/s counts the 20 tokens of each output (of the best hypothesis for beam
  search), EOS not counted, exactly as decode.rs counts; every system's outputs are checked to
  have 20 tokens. The clock covers the encoder and the search (what decode.rs times).

Systems:

- **Rosetta**: the decode bench, built by `cargo bench -p rosetta-model --bench decode
  --profile dev --no-run` and its executable run directly (`--bench`, as `cargo bench` runs
  it), so that its peak memory is the bench's own and not cargo's. Rows "greedy, cached" and
  "beam 5, cached". Its 16/64 sentences are fixed in decode.rs: `--sentences` does not apply.
- **PyTorch, cached**: `scripts/torch_decode.py`'s incremental decoder (PyTorch's own layers
  from `scripts/rosetta_torch.py`; self-attention keys/values cached and reordered by beam,
  cross-attention keys/values once per sentence) on a random `Seq2Seq` of the same shapes
  (Rosetta's initialisation, `init_like_rosetta`). Forced length as Rosetta forces it:
  `min_len = 20` (EOS blocked before 20 tokens) and `max_len = 20` (`max_len_a 0`,
  `max_len_b 20`). Settings: eager, `torch.inference_mode()`, `torch.set_num_threads(N)`,
  `torch.set_num_interop_threads(1)` (printed by the child).
- **CTranslate2**: a random model of the same shapes built through its Python spec API
  (`TransformerSpec.from_config((3, 3), 4, pre_norm=False)`, filled as its OpenNMT-py converter
  fills it, the paper's sinusoidal table stored in `position_encodings`, LayerNorm epsilon 1e-5,
  EOS appended to the source, decoding started from BOS; saved by a `Converter` subclass),
  decoded with `translate_batch(..., beam_size=B, max_batch_size=b,
  min_decoding_length=20, max_decoding_length=20)`, `intra_threads=N`, `inter_threads=1`,
  `return_scores` left off (CTranslate2's documented advice for speed). Each compute type
  (float32, int8) runs under each backend setting, each in its own process (the variables are
  read when ctranslate2 is imported), and the best setting per row is compared with:
  - `default`: no CT2_* variable (those inherited are removed);
  - `CT2_PACKED_GEMM=0`: "Enable or disable the packed GEMM API for Intel MKL. Packed GEMM is
    enabled by default when using the MKL backend [...] Set to 0 to disable it"
    (CTranslate2's docs/environment_variables.md; its performance tips say the same);
  - `CT2_USE_MKL=0`: "Force CTranslate2 to use (or not) Intel MKL. By default, the runtime
    automatically decides whether to use Intel MKL or not based on the CPU vendor": 0 gives
    its other x86 backend, oneDNN.
  On Intel the default is MKL with packed GEMM, which was pathological at small batches
  (/work/shared/notes/ctranslate2.md); on AMD the default is already not MKL. Each child runs
  with `CT2_VERBOSE=1`, and the backend it logs (ISA, MKL or not, SGEMM / GEMM_S8 backend and
  whether packed) is printed per setting. `--ct2-settings` takes any comma-separated list of
  `default` or `VAR=VALUE[+VAR=VALUE...]` (e.g. `CT2_USE_MKL=1`).

**Not the same between systems, by design**: the weights (random in each; the work does not
depend on them since every output is forced to the same length; only the ids chosen differ),
and the last step: Rosetta and the PyTorch decoder run the decoder a 21st time to score the EOS
that closes each output at the length limit (decode.rs's searches score it; the outputs still
count 20 tokens), while CTranslate2 stops after the 20th token without scoring an EOS: it does
20 decoder steps per output where the others do 21 (~5% less work, in its favour).

**Output**: each system's own table, then one markdown table (rows greedy b1, greedy b64,
beam5 b1, beam5 b64; columns Rosetta, PyTorch cached, CT2 float32 under each setting, CT2
float32 best, Rosetta / CT2 best, Rosetta / PyTorch), the same for int8, peak resident memory
of every process (the child's `ru_maxrss`, from `wait4`, as GNU time reports it), the CPU model
and the backend CTranslate2 reported per setting.

**Rounds.** On a shared machine one system can meet a busier moment than the next, and a
single run's ratio then moves by 20% or more. `--rounds N` runs the whole sequence (Rosetta,
PyTorch, every CTranslate2 setting) N times, one round after the other, prints each round's
summary, and ends with the median and range over the rounds of each row's ratios (each round's
ratio taken between runs minutes apart, against that round's best CTranslate2 setting), and of
each system's rate. With `--json`, the file holds the list of the rounds' reports.

`--sentences N` (or ANCHOR_SENTENCES=N) uses only the first N sentences in PyTorch and
CTranslate2 (batch 1: the first min(N, 16)), for smoke tests; the figures are then not
comparable with Rosetta's, which always decodes 16/64. `--rosetta-bench PATH` skips the build
and runs that executable. Needs Python with torch and ctranslate2 (numpy comes with both).
"""

import argparse
import json
import math
import os
import pathlib
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import ct2_settings  # noqa: E402  (imports nothing of CTranslate2)

# crates/model/benches/decode.rs
SENTENCES, SINGLE, SOURCE_TOKENS, OUTPUT_TOKENS, VOCAB = 64, 16, 12, 20, 8000
D_MODEL, HEADS, D_FF, LAYERS = 256, 4, 1024, 3
PAD, UNK, BOS, EOS = 0, 1, 2, 3
ROWS = [(1, 1), (1, 64), (5, 1), (5, 64)]  # (beam, batch), in the table's order
WARMUP = 4


def sources(count=SENTENCES, tokens=SOURCE_TOKENS):
    """decode.rs's `count` rows of `tokens` random ids (4..VOCAB) + EOS, from its LCG (by
    default its table's 64 rows of 12)."""
    state = 0x5EED
    rows = []
    for _ in range(count):
        row = []
        for _ in range(tokens):
            state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
            row.append(4 + (state >> 33) % (VOCAB - 4))
        rows.append(row + [EOS])
    return rows


def parse_grid(spec):
    """decode.rs's `--grid BEAM:BATCH:SENTENCES:SOURCE:OUTPUT,...` -> tuples of five ints, with
    decode.rs's rules: every field at least 1, SOURCE at least 2, SENTENCES at least BATCH,
    within the model's 1,024 positions."""
    grid = []
    for item in spec.split(","):
        try:
            fields = [int(f) for f in item.split(":")]
        except ValueError:
            fields = []
        if len(fields) != 5:
            raise SystemExit(f"--grid: {item!r}: expected BEAM:BATCH:SENTENCES:SOURCE:OUTPUT")
        beam, batch, sentences, source, output = fields
        if min(fields) < 1 or source < 2 or sentences < batch:
            raise SystemExit(f"--grid: {item!r}: every field at least 1, SOURCE at least 2, "
                             f"SENTENCES at least BATCH")
        if source > 1024 or output >= 1024:
            raise SystemExit(f"--grid: {item!r}: longer than the model's 1,024 positions")
        grid.append(tuple(fields))
    return grid


def workloads(limit, grid=None):
    """(beam, batch, rows, output tokens) per table row, or per workload of `grid` (decode.rs's
    `--grid`: sources of SOURCE - 1 random ids + EOS); `limit` cuts the sentences for smoke
    tests."""
    if grid:
        return [(beam, batch, sources(count, source - 1), output)
                for beam, batch, count, source, output in parse_grid(grid)]
    rows = sources()
    if limit:
        rows = rows[:limit]
    return [(beam, batch, rows[:SINGLE] if batch == 1 else rows, OUTPUT_TOKENS)
            for beam, batch in ROWS]


def peak_rss_mib():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---------------------------------------------------------------------------------------------
# PyTorch child


def run_pytorch(args):
    import torch

    from rosetta_torch import Seq2Seq
    import torch_decode

    settings = torch_decode.configure_threads(args.threads)
    torch.manual_seed(0)
    config = dict(source_vocab_size=VOCAB, target_vocab_size=VOCAB, d_model=D_MODEL,
                  n_heads=HEADS, d_ff=D_FF, n_encoder_layers=LAYERS, n_decoder_layers=LAYERS,
                  dropout=0.0, attention_dropout=0.0, max_positions=1024, pad_id=PAD,
                  layer_norm_eps=1e-5, norm_position="Post", final_norm=False,
                  share_embeddings=False, tie_output_projection=False)
    model = Seq2Seq(config).init_like_rosetta().eval()

    def search(beam, output=OUTPUT_TOKENS):
        # Forced length as Rosetta's bench: max_len = floor(0 * s) + 20, min_len = 20. The beam
        # rules do not matter here (every hypothesis ends at the limit); CTranslate2's.
        return torch_decode.Search(beam, alpha=1.0, length_norm="power", stop="count",
                                   max_len_a=0.0, max_len_b=output, min_len=output)

    results = []
    with torch.inference_mode():
        warm = sources()[:WARMUP]
        torch_decode.translate(model, warm, search(1), WARMUP)
        for beam, batch, rows, output in workloads(args.sentences, args.grid):
            start = time.perf_counter()
            out = torch_decode.translate(model, rows, search(beam, output), batch)
            seconds = time.perf_counter() - start
            lengths = sorted({len(t) for t in out})
            assert lengths == [output], f"output lengths {lengths}"
            results.append(dict(beam=beam, batch=batch, sentences=len(rows), seconds=seconds,
                                source=len(rows[0]), output=output,
                                tokens=len(rows) * output))
    print(json.dumps(dict(system="pytorch", version=torch.__version__, settings=settings,
                          rows=results, peak_rss_mib=peak_rss_mib())))


# ---------------------------------------------------------------------------------------------
# CTranslate2 children


def sinusoidal_table(positions, d):
    """The paper's table (rosetta_torch.sinusoidal_table), rows = positions from 0."""
    import numpy as np
    pos = np.arange(positions, dtype=np.float64)[:, None]
    two_i = (np.arange(d) // 2 * 2).astype(np.float64)
    angle = pos / np.power(10000.0, two_i / d)
    table = np.where(np.arange(d) % 2 == 0, np.sin(angle), np.cos(angle))
    return table.astype(np.float32)


def vocabulary():
    """Rosetta's special ids as CTranslate2 expects the strings; other ids as `t<id>`."""
    return ["<blank>", "<unk>", "<s>", "</s>"] + [f"t{i}" for i in range(4, VOCAB)]


def build_ctranslate2(args):
    import ctranslate2
    import numpy as np
    from ctranslate2.converters.converter import Converter
    from ctranslate2.specs import common_spec, transformer_spec

    rng = np.random.default_rng(0)

    def xavier(out_dim, in_dim):
        bound = math.sqrt(6.0 / (in_dim + out_dim))
        return rng.uniform(-bound, bound, (out_dim, in_dim)).astype(np.float32)

    def linear(spec, out_dim, in_dim):
        spec.weight = xavier(out_dim, in_dim)
        spec.bias = np.zeros(out_dim, dtype=np.float32)

    def layer_norm(spec):
        spec.gamma = np.ones(D_MODEL, dtype=np.float32)
        spec.beta = np.zeros(D_MODEL, dtype=np.float32)

    def attention(spec, self_attention):
        layer_norm(spec.layer_norm)
        if self_attention:  # linear_0 = [Wq; Wk; Wv]
            linear(spec.linear[0], 3 * D_MODEL, D_MODEL)
        else:  # linear_0 = Wq, linear_1 = [Wk; Wv]
            linear(spec.linear[0], D_MODEL, D_MODEL)
            linear(spec.linear[1], 2 * D_MODEL, D_MODEL)
        linear(spec.linear[-1], D_MODEL, D_MODEL)

    def ffn(spec):
        layer_norm(spec.layer_norm)
        linear(spec.linear_0, D_FF, D_MODEL)
        linear(spec.linear_1, D_MODEL, D_FF)

    def embedding():  # Rosetta's initialisation: N(0, d_model^-1/2)
        return rng.normal(0.0, D_MODEL ** -0.5, (VOCAB, D_MODEL)).astype(np.float32)

    spec = transformer_spec.TransformerSpec.from_config(
        (LAYERS, LAYERS), HEADS, pre_norm=False, activation=common_spec.Activation.RELU)
    # Embeddings scaled by sqrt(d_model) (the spec's default), the paper's positions stored.
    spec.encoder.embeddings[0].weight = embedding()  # a list: one per source factor
    spec.encoder.position_encodings.encodings = sinusoidal_table(1024, D_MODEL)
    for layer in spec.encoder.layer:
        attention(layer.self_attention, True)
        ffn(layer.ffn)
    spec.decoder.embeddings.weight = embedding()
    spec.decoder.position_encodings.encodings = sinusoidal_table(1024, D_MODEL)
    for layer in spec.decoder.layer:
        attention(layer.self_attention, True)
        attention(layer.attention, False)
        ffn(layer.ffn)
    linear(spec.decoder.projection, VOCAB, D_MODEL)
    spec.config.layer_norm_epsilon = 1e-5
    spec.config.add_source_eos = True
    spec.config.decoder_start_token = "<s>"
    spec.register_source_vocabulary(vocabulary())
    spec.register_target_vocabulary(vocabulary())

    class Random(Converter):
        def _load(self):
            return spec

    Random().convert(args.ct2_model, force=True)
    print(json.dumps(dict(system="ctranslate2-build", version=ctranslate2.__version__,
                          path=args.ct2_model)))


def run_ctranslate2(args):
    import ctranslate2

    translator = ctranslate2.Translator(args.ct2_model, device="cpu",
                                        compute_type=args.compute_type,
                                        inter_threads=1, intra_threads=args.threads)
    vocab = vocabulary()
    # Strings outside the clock; the source's EOS is added by the model's config.
    as_tokens = lambda rows: [[vocab[i] for i in row[:-1]] for row in rows]  # noqa: E731

    def decode(rows, beam, batch, output=OUTPUT_TOKENS):
        return translator.translate_batch(as_tokens(rows), max_batch_size=batch,
                                          batch_type="examples", beam_size=beam,
                                          min_decoding_length=output,
                                          max_decoding_length=output)

    decode(sources()[:WARMUP], 1, WARMUP)
    results = []
    for beam, batch, rows, output in workloads(args.sentences, args.grid):
        start = time.perf_counter()
        out = decode(rows, beam, batch, output)
        seconds = time.perf_counter() - start
        lengths = sorted({len(r.hypotheses[0]) for r in out})
        assert lengths == [output], f"output lengths {lengths}"
        results.append(dict(beam=beam, batch=batch, sentences=len(rows), seconds=seconds,
                            source=len(rows[0]), output=output,
                            tokens=len(rows) * output))
    print(json.dumps(dict(system="ctranslate2", version=ctranslate2.__version__,
                          compute_type=args.compute_type, rows=results,
                          peak_rss_mib=peak_rss_mib())))


# ---------------------------------------------------------------------------------------------
# The parent: runs each system in its own process and prints the tables.


def run_child(command, env=None, label=""):
    """Runs `command` to completion; returns (stdout, stderr, peak RSS MiB of the child)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=ROOT)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    if child.returncode != 0:
        sys.stderr.write(stdout + stderr)
        raise SystemExit(f"{label or command[0]} failed with status {child.returncode}")
    return stdout, stderr, usage.ru_maxrss / 1024  # KiB on Linux


def last_json(stdout):
    return json.loads(stdout.strip().splitlines()[-1])


def build_rosetta(selection=("-p", "rosetta-model")):
    """Builds the decode bench (dev profile) of the packages `selection` names and returns its
    executable (`("--workspace",)`: with the workspace's Burn features, reusing its build)."""
    command = ["cargo", "bench", *selection, "--bench", "decode", "--profile", "dev",
               "--no-run", "--message-format=json"]
    print("$ " + " ".join(command), file=sys.stderr, flush=True)
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, check=True)
    for line in done.stdout.decode().splitlines():
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if (message.get("reason") == "compiler-artifact" and message.get("executable")
                and message["target"]["name"] == "decode"):
            return message["executable"]
    raise SystemExit("cargo did not report the decode bench's executable")


def parse_rosetta(stdout):
    """decode.rs's table -> {(beam, batch): tokens/s} for the cached rows."""
    rates = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 6 or cells[0] not in ("greedy, cached", "beam 5, cached"):
            continue
        beam = 1 if cells[0].startswith("greedy") else 5
        rates[(beam, int(cells[1]))] = dict(sentences=int(cells[2]), seconds=float(cells[3]),
                                            rate=float(cells[5]))
    return rates


def cpu_model():
    name, flags = "unknown CPU", ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and name == "unknown CPU":
                    name = line.split(":", 1)[1].strip()
                if line.startswith("flags") and not flags:
                    flags = line
    except OSError:
        pass
    isa = "AVX-512" if " avx512f" in flags else "AVX2, no AVX-512" if " avx2" in flags else "no AVX2"
    return f"{name} ({isa}), {os.cpu_count()} logical CPUs"


def fmt(x):
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:,.0f}"


def ratio(a, b):
    return "n/a" if not a or not b else f"{a / b:.2f}x"


def search_name(beam, batch):
    return f"{'greedy' if beam == 1 else f'beam{beam}'} b{batch}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--ct2-settings", default=ct2_settings.DEFAULT_SETTINGS,
                        help="comma-separated: default, or CT2_VAR=VALUE[+CT2_VAR=VALUE]")
    parser.add_argument("--compute-types", default="float32,int8")
    parser.add_argument("--systems", default="rosetta,pytorch,ctranslate2")
    parser.add_argument("--rosetta-bench", help="the decode bench's executable (skips the build)")
    parser.add_argument("--sentences", type=int, default=int(os.environ.get("ANCHOR_SENTENCES", 0)),
                        help="first N sentences only, in PyTorch and CTranslate2 (smoke tests)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every system this many times, round after round, and report "
                             "the median and range of each ratio")
    parser.add_argument("--json", help="also write every figure to this file")
    # Children (internal).
    parser.add_argument("--child", choices=["pytorch", "ct2-build", "ct2"], help=argparse.SUPPRESS)
    parser.add_argument("--ct2-model", help=argparse.SUPPRESS)
    parser.add_argument("--compute-type", help=argparse.SUPPRESS)
    # Children only: decode.rs's --grid workloads instead of the table's (bench_decode_growth.py).
    parser.add_argument("--grid", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        {"pytorch": run_pytorch, "ct2-build": build_ctranslate2, "ct2": run_ctranslate2}[
            args.child](args)
        return
    if args.grid:
        raise SystemExit("--grid is for the children of scripts/bench_decode_growth.py")

    systems = args.systems.split(",")
    try:
        settings = ct2_settings.parse_settings(args.ct2_settings)
    except ValueError as e:
        raise SystemExit(str(e))
    compute_types = args.compute_types.split(",")
    if args.rounds < 1:
        raise SystemExit(f"--rounds: at least 1, got {args.rounds}")
    print(f"CPU: {cpu_model()}; {args.threads} threads per system; each system in its own "
          f"process, one after the other" + (f"; {args.rounds} rounds" if args.rounds > 1 else ""))
    if args.sentences:
        print(f"SMOKE TEST: PyTorch and CTranslate2 on the first {args.sentences} sentences only "
              f"(Rosetta's bench always decodes 16 / 64): the ratios are not comparable")
    exe = (args.rosetta_bench or build_rosetta()) if "rosetta" in systems else None
    reports = []
    for round_number in range(1, args.rounds + 1):
        if args.rounds > 1:
            print(f"\n# Round {round_number} of {args.rounds}")
        reports.append(run_round(args, systems, settings, compute_types, exe))
    if args.rounds > 1:
        print_rounds(reports, settings, compute_types)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(reports[0] if args.rounds == 1 else reports, f, indent=1)


def run_round(args, systems, settings, compute_types, exe):
    """Every system once, one after the other; prints their tables and the summary and
    returns the round's report."""
    me = [sys.executable, str(pathlib.Path(__file__).resolve())]
    common = ["--threads", str(args.threads), "--sentences", str(args.sentences)]
    report = dict(cpu=cpu_model(), threads=args.threads, sentences=args.sentences or None,
                  rosetta=None, pytorch=None, ctranslate2=[])

    if exe:
        env = dict(os.environ, RAYON_NUM_THREADS=str(args.threads))
        stdout, _, rss = run_child([exe, "--bench"], env=env, label="the decode bench")
        print("\n## Rosetta (cargo bench -p rosetta-model --bench decode --profile dev)\n")
        print(stdout.rstrip())
        rows = parse_rosetta(stdout)
        missing = [search_name(*row) for row in ROWS if row not in rows]
        if missing:  # decode.rs's table changed: say so rather than print n/a silently
            print(f"WARNING: rows {missing} not found in the decode bench's table", file=sys.stderr)
        report["rosetta"] = dict(rows={search_name(*k): v for k, v in rows.items()},
                                 peak_rss_mib=rss)

    if "pytorch" in systems:
        stdout, _, rss = run_child(me + ["--child", "pytorch"] + common, label="PyTorch")
        result = last_json(stdout)
        result["peak_rss_mib"] = rss
        report["pytorch"] = result
        print(f"\n## PyTorch, cached decoder\n\n{result['settings']}\n")
        print_rows(result["rows"])

    if "ctranslate2" in systems:
        with tempfile.TemporaryDirectory() as tmp:
            model = os.path.join(tmp, "ct2")
            stdout, _, _ = run_child(me + ["--child", "ct2-build", "--ct2-model", model],
                                     env=ct2_settings.environment("default"), label="CTranslate2 model build")
            version = last_json(stdout)["version"]
            print(f"\n## CTranslate2 {version} (random model built through its spec API)")
            for compute_type in compute_types:
                for setting in settings:
                    stdout, stderr, rss = run_child(
                        me + ["--child", "ct2", "--ct2-model", model, "--compute-type",
                              compute_type] + common,
                        env=ct2_settings.environment(setting), label=f"CTranslate2 {compute_type} {setting}")
                    result = last_json(stdout)
                    result.update(setting=setting, peak_rss_mib=rss,
                                  backend=ct2_settings.backend_of(stderr, compute_type),
                                  log=ct2_settings.log_lines(stderr))
                    report["ctranslate2"].append(result)
                    print(f"\n### {compute_type}, {setting}\n\nCT2_VERBOSE: "
                          f"{result['backend'] or '(nothing logged)'}\n")
                    print_rows(result["rows"])

    print_summary(report, settings, compute_types)
    return report


def print_rows(rows):
    print("| search | batch | sentences | seconds | sentences/s | target tokens/s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        name = "greedy" if r["beam"] == 1 else f"beam {r['beam']}"
        print(f"| {name} | {r['batch']} | {r['sentences']} | {r['seconds']:.2f} | "
              f"{r['sentences'] / r['seconds']:.1f} | {r['tokens'] / r['seconds']:.0f} |")


def rates_of(result):
    return {search_name(r["beam"], r["batch"]): r["tokens"] / r["seconds"] for r in result["rows"]}


def ct2_runs(report, compute_type):
    """{setting: {row: tokens/s}} of one compute type's CTranslate2 runs in `report`."""
    return {r["setting"]: rates_of(r) for r in report["ctranslate2"]
            if r["compute_type"] == compute_type}


def best_setting(runs, settings, name):
    """(tokens/s, setting) of the fastest setting on row `name`, or (None, None)."""
    per = [runs.get(s, {}).get(name) for s in settings]
    return max(((v, s) for v, s in zip(per, settings) if v), default=(None, None))


def rosetta_rates(report):
    return {k: v["rate"] for k, v in (report["rosetta"] or {}).get("rows", {}).items()}


def print_summary(report, settings, compute_types):
    rosetta = rosetta_rates(report)
    pytorch = rates_of(report["pytorch"]) if report["pytorch"] else {}
    names = [search_name(*row) for row in ROWS]
    print("\n## Summary: target tokens/s (20 forced tokens per output, EOS not counted)\n")
    if report["sentences"]:
        print(f"(SMOKE TEST: PyTorch and CTranslate2 on {report['sentences']} sentences)\n")
    for compute_type in compute_types:
        runs = ct2_runs(report, compute_type)
        if not runs and compute_type != compute_types[0]:
            continue
        label = {"float32": "fp32"}.get(compute_type, compute_type)
        head = ["row", "Rosetta", "PyTorch cached"]
        head += [f"CT2 {label} {s.replace('CT2_', '')}" for s in settings]
        head += [f"CT2 {label} best", f"Rosetta / CT2-{label}-best", "Rosetta / PyTorch"]
        print("| " + " | ".join(head) + " |")
        print("| " + " | ".join("---" for _ in head) + " |")
        for name in names:
            per = [runs.get(s, {}).get(name) for s in settings]
            best = best_setting(runs, settings, name)
            cells = [name, fmt(rosetta.get(name)), fmt(pytorch.get(name))]
            cells += [fmt(v) for v in per]
            cells += [f"{fmt(best[0])} ({best[1]})" if best[0] else "n/a",
                      ratio(rosetta.get(name), best[0]), ratio(rosetta.get(name), pytorch.get(name))]
            print("| " + " | ".join(cells) + " |")
        note = ct2_settings.same_backend_note(report["ctranslate2"], compute_type)
        if note:
            print(f"\nNote: {note}.")
        print()
    print("Peak resident memory (ru_maxrss of each process):")
    if report["rosetta"]:
        print(f"- Rosetta decode bench: {report['rosetta']['peak_rss_mib']:.0f} MiB")
    if report["pytorch"]:
        print(f"- PyTorch: {report['pytorch']['peak_rss_mib']:.0f} MiB")
    for r in report["ctranslate2"]:
        print(f"- CTranslate2 {r['compute_type']} {r['setting']}: {r['peak_rss_mib']:.0f} MiB")
    print("\nCTranslate2 backend per setting (CT2_VERBOSE=1):")
    seen = set()
    for r in report["ctranslate2"]:
        key = (r["compute_type"], r["setting"])
        if key not in seen:
            seen.add(key)
            print(f"- {r['compute_type']}, {r['setting']}: {r['backend'] or '(nothing logged)'}")
    print(f"\nCPU: {report['cpu']}")


def spread(values, ratios=False):
    """"median (min–max)" of the values present (rates, or ratios written as 0.00x), or n/a."""
    values = sorted(v for v in values if v)
    if not values:
        return "n/a"
    middle = len(values) // 2
    median = values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2
    if ratios:
        return f"{median:.2f}x ({values[0]:.2f}–{values[-1]:.2f})"
    return f"{fmt(median)} ({fmt(values[0])}–{fmt(values[-1])})"


def print_rounds(reports, settings, compute_types):
    """Per row, over the rounds: the median (min–max) of Rosetta's, PyTorch's and CTranslate2's
    best rates, and of each round's ratios."""
    names = [search_name(*row) for row in ROWS]
    print(f"\n# Over the {len(reports)} rounds: median (min–max)\n")
    for compute_type in compute_types:
        if not any(ct2_runs(r, compute_type) for r in reports) and compute_type != compute_types[0]:
            continue
        label = {"float32": "fp32"}.get(compute_type, compute_type)
        head = ["row", "Rosetta", "PyTorch cached", f"CT2 {label} best",
                f"Rosetta / CT2-{label}-best", "Rosetta / PyTorch"]
        print("| " + " | ".join(head) + " |")
        print("| " + " | ".join("---" for _ in head) + " |")
        for name in names:
            rosetta = [rosetta_rates(r).get(name) for r in reports]
            pytorch = [rates_of(r["pytorch"]).get(name) if r["pytorch"] else None for r in reports]
            best = [best_setting(ct2_runs(r, compute_type), settings, name)[0] for r in reports]
            over_best = [a / b if a and b else None for a, b in zip(rosetta, best)]
            over_torch = [a / b if a and b else None for a, b in zip(rosetta, pytorch)]
            cells = [name, spread(rosetta), spread(pytorch), spread(best),
                     spread(over_best, ratios=True), spread(over_torch, ratios=True)]
            print("| " + " | ".join(cells) + " |")
        print()


if __name__ == "__main__":
    main()
