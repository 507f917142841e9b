#!/usr/bin/env python3
"""How decoding cost grows with the batch and the sentence length: Rosetta, cached PyTorch and
CTranslate2 on the random-weight anchor model, in one invocation, plotted.

    python3 scripts/bench_decode_growth.py [--threads N] [--ct2-settings LIST]
        [--systems rosetta,pytorch,ctranslate2] [--rosetta-bench PATH] [--json FILE]
        [--plot FILE] [--quick]

The model, the systems and their settings are those of `scripts/bench_decode_anchor.py` (its
docstring has the details: d_model 256, 4 heads, d_ff 1,024, 3 + 3 layers, vocabularies of
8,000, random weights; outputs forced to an exact length; each system in its own process, one
after the other, alone on the machine; CTranslate2 float32 under each backend setting, the best
per workload compared). Only the workloads differ, given to each system as decode.rs's `--grid`:

- **batch**: batch 1, 4, 16, 64 and 256 (sentences: the batch, at least 16), sources of 12
  random tokens + EOS, outputs of 20 tokens, greedy and beam 5;
- **length**: sources and outputs of 5, 10, 20, 50, 100 and 200 tokens (source: length - 1
  random tokens + EOS), batch 1 (8 sentences) and batch 64 (64 sentences), greedy and beam 5.

Target tokens/s counts the forced output tokens (of the best hypothesis for beam search). With a
key/value cache, a decoder step's cost grows with the length only through attention over the
cached keys, so tokens/s should fall slowly with the length, not in proportion to it.

Rosetta's bench is built with `cargo bench --workspace --bench decode --profile dev --no-run`
(the workspace's Burn features, so it reuses the README's build). Output: a table per sweep
(each system's target tokens/s, CTranslate2's best setting, Rosetta / CTranslate2 best,
Rosetta / PyTorch), the JSON of every figure (`--json`), and the plot (`--plot`, default
docs/decode-growth.png; needs matplotlib). `--quick`: a smaller grid, for a smoke test (not for
figures). Run it on a quiet machine (OpenMP threads spin-wait).
"""

import argparse
import json
import os
import pathlib
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import bench_decode_anchor as anchor  # noqa: E402  (imports neither torch nor ctranslate2)
import ct2_settings  # noqa: E402

BATCHES = [1, 4, 16, 64, 256]
LENGTHS = [5, 10, 20, 50, 100, 200]
BEAMS = [1, 5]


def length_batches(quick):
    """The two batch sizes of the length sweep."""
    return [1, 8] if quick else [1, 64]


def grid(quick):
    """The workloads, (sweep, beam, batch, sentences, source, output), in a fixed order; every
    batch has at least its size in sentences."""
    batches = [1, 16] if quick else BATCHES
    lengths = [5, 50] if quick else LENGTHS
    work = []
    for beam in BEAMS:
        for batch in batches:
            work.append(("batch", beam, batch, max(batch, 4 if quick else 16), 13, 20))
        for batch in length_batches(quick):
            for length in lengths:
                count = max(batch, 2 if quick else 8)
                work.append(("length", beam, batch, count, length, length))
    return work


def spec_of(work):
    return ",".join(f"{b}:{n}:{s}:{src}:{out}" for _, b, n, s, src, out in work)


def key(row):
    return (row["beam"], row["batch"], row["sentences"], row["source"], row["output"])


def json_lines(stdout):
    rows = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            rows.append(json.loads(line))
    return rows


def rate(row):
    return row["tokens"] / row["seconds"] if row and row["seconds"] > 0 else float("nan")


def fmt(x):
    return "n/a" if x != x else f"{x:,.0f}"


def ratio(a, b):
    return "n/a" if a != a or b != b or b == 0 else f"{a / b:.2f}"


def table(work, report, sweep):
    """Markdown rows of one sweep: tokens/s per system, CTranslate2's best, the ratios."""
    settings = [run["setting"] for run in report["ctranslate2"]]
    head = ["search", "batch", "length (source / output)", "Rosetta", "PyTorch, cached"]
    head += [f"CT2 fp32 {s}" for s in settings] + ["CT2 best", "Rosetta / CT2 best",
                                                   "Rosetta / PyTorch"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for w in work:
        if w[0] != sweep:
            continue
        k = w[1:]
        rosetta = rate(report["rosetta"].get(k)) if report["rosetta"] else float("nan")
        pytorch = rate(report["pytorch"].get(k)) if report["pytorch"] else float("nan")
        ct2 = [rate(run["rows"].get(k)) for run in report["ctranslate2"]]
        best = max((r for r in ct2 if r == r), default=float("nan"))
        search = "greedy" if w[1] == 1 else f"beam {w[1]}"
        cells = [search, str(w[2]), f"{w[4] - 1} + EOS / {w[5]}", fmt(rosetta), fmt(pytorch)]
        cells += [fmt(r) for r in ct2] + [fmt(best), ratio(rosetta, best), ratio(rosetta, pytorch)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def check_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise SystemExit("--plot needs matplotlib (pip install matplotlib), or pass --plot ''")


def plot(work, report, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = []
    if report["rosetta"]:
        systems.append(("Rosetta (flex)", "tab:blue", report["rosetta"]))
    if report["pytorch"]:
        systems.append(("PyTorch eager, cached", "tab:orange", report["pytorch"]))
    if report["ctranslate2"]:
        best = {}
        for run in report["ctranslate2"]:
            for k, row in run["rows"].items():
                if k not in best or rate(row) > rate(best[k]):
                    best[k] = row
        systems.append(("CTranslate2 fp32, best setting", "tab:green", best))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    small, large = length_batches(report["quick"])
    panels = [("batch", None, "batch size (length 12 + EOS -> 20)", axes[0]),
              ("length", small, f"sentence length, batch {small}", axes[1]),
              ("length", large, f"sentence length, batch {large}", axes[2])]
    for sweep, batch, xlabel, ax in panels:
        for name, color, rows in systems:
            for beam, style in [(1, "-"), (5, "--")]:
                points = [(w[2] if sweep == "batch" else w[5], rate(rows.get(w[1:])))
                          for w in work if w[0] == sweep and w[1] == beam
                          and (batch is None or w[2] == batch)]
                points = [(x, y) for x, y in points if y == y]
                if points:
                    xs, ys = zip(*points)
                    label = f"{name}, {'greedy' if beam == 1 else f'beam {beam}'}"
                    ax.plot(xs, ys, style, marker="o", color=color, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("target tokens/s")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"Decoding cost growth, random-weight anchor (d_model 256, 3+3 layers, vocab "
                 f"8,000); {report['cpu']}, {report['threads']} threads", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--ct2-settings", default=ct2_settings.DEFAULT_SETTINGS)
    parser.add_argument("--systems", default="rosetta,pytorch,ctranslate2")
    parser.add_argument("--rosetta-bench", help="the decode bench's executable (skips the build)")
    parser.add_argument("--json", help="also write every figure to this file")
    parser.add_argument("--plot", help="the plot's PNG ('' for none; default "
                        "docs/decode-growth.png, none with --quick)")
    parser.add_argument("--quick", action="store_true", help="a small grid, for a smoke test")
    args = parser.parse_args()
    if args.plot is None:
        args.plot = "" if args.quick else str(ROOT / "docs" / "decode-growth.png")
    if args.plot:
        check_matplotlib()  # before the run, not after it

    systems = args.systems.split(",")
    try:
        settings = ct2_settings.parse_settings(args.ct2_settings)
    except ValueError as e:
        raise SystemExit(str(e))
    work = grid(args.quick)
    spec = spec_of(work)
    anchor_py = [sys.executable, str(HERE / "bench_decode_anchor.py")]
    common = ["--threads", str(args.threads), "--grid", spec]
    report = dict(cpu=anchor.cpu_model(), threads=args.threads, quick=args.quick,
                  workloads=[list(w) for w in work], rosetta=None, pytorch=None, ctranslate2=[])
    print(f"CPU: {report['cpu']}; {args.threads} threads per system; each system in its own "
          f"process, one after the other" + ("; QUICK grid (smoke test)" if args.quick else ""))

    if "rosetta" in systems:
        exe = args.rosetta_bench or anchor.build_rosetta(("--workspace", "--locked"))
        env = dict(os.environ, RAYON_NUM_THREADS=str(args.threads))
        stdout, _, rss = anchor.run_child([exe, "--bench", "--grid", spec], env=env,
                                          label="the decode bench")
        report["rosetta"] = {key(r): r for r in json_lines(stdout)}
        report["rosetta_peak_rss_mib"] = rss
    if "pytorch" in systems:
        stdout, _, rss = anchor.run_child(anchor_py + ["--child", "pytorch"] + common,
                                          label="PyTorch")
        result = anchor.last_json(stdout)
        report["pytorch"] = {key(r): r for r in result["rows"]}
        report["pytorch_settings"] = result["settings"]
        report["pytorch_peak_rss_mib"] = rss
    if "ctranslate2" in systems:
        with tempfile.TemporaryDirectory() as tmp:
            model = os.path.join(tmp, "ct2")
            stdout, _, _ = anchor.run_child(
                anchor_py + ["--child", "ct2-build", "--ct2-model", model],
                env=ct2_settings.environment("default"), label="CTranslate2 model build")
            report["ctranslate2_version"] = anchor.last_json(stdout)["version"]
            for setting in settings:
                stdout, stderr, rss = anchor.run_child(
                    anchor_py + ["--child", "ct2", "--ct2-model", model, "--compute-type",
                                 "float32"] + common,
                    env=ct2_settings.environment(setting), label=f"CTranslate2 {setting}")
                result = anchor.last_json(stdout)
                report["ctranslate2"].append(dict(
                    setting=setting, peak_rss_mib=rss,
                    backend=ct2_settings.backend_of(stderr, "float32"),
                    rows={key(r): r for r in result["rows"]}))

    for expected, name in [(report["rosetta"], "Rosetta"), (report["pytorch"], "PyTorch")] + [
            (run["rows"], f"CTranslate2 {run['setting']}") for run in report["ctranslate2"]]:
        if expected is not None and len(expected) != len(work):
            raise SystemExit(f"{name} reported {len(expected)} of the {len(work)} workloads")
    if report["pytorch"]:
        print(f"PyTorch: {report['pytorch_settings']}")
    for run in report["ctranslate2"]:
        print(f"CTranslate2 {report['ctranslate2_version']} fp32, {run['setting']}: "
              f"{run['backend'] or '(nothing logged)'}")
    print("\n## Target tokens/s against the batch size\n")
    print(table(work, report, "batch"))
    print("\n## Target tokens/s against the sentence length\n")
    print(table(work, report, "length"))
    if args.json:
        def rows(d):
            return [r for r in d.values()] if d else None
        out = dict(report, rosetta=rows(report["rosetta"]), pytorch=rows(report["pytorch"]),
                   ctranslate2=[dict(run, rows=rows(run["rows"]))
                                for run in report["ctranslate2"]])
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    if args.plot:
        plot(work, report, args.plot)


if __name__ == "__main__":
    main()
