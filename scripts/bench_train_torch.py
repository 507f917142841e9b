#!/usr/bin/env python3
"""The PyTorch side of the training benchmark.

Reads a `rosetta bench-train --json` report, runs the same number of steps of the same model
(`rosetta_torch.Seq2Seq`) on the same batch shape, loss, clipping and Adam settings in PyTorch
(eager), and prints both results and their ratio. `scripts/bench-train.sh` runs the two.

    python scripts/bench_train_torch.py --rosetta report.json [--threads 2] [--device cpu]
        [--json torch.json]
"""

import argparse
import json
import math
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import torch  # noqa: E402

from rosetta_torch import Seq2Seq, loss_sum, peak_rss_bytes, reset_peak_rss  # noqa: E402


def summary(step_seconds, tokens):
    tps = sorted(tokens / s for s in step_seconds)
    return tps[0], statistics.median(tps), tps[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rosetta", required=True, type=pathlib.Path, help="rosetta bench-train --json report")
    ap.add_argument("--threads", type=int, default=None, help="intra-op threads (default: the report's)")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    ap.add_argument("--json", type=pathlib.Path, help="write this run's report here")
    args = ap.parse_args()

    report = json.loads(args.rosetta.read_text())
    s = report["settings"]
    c = s["model"]
    threads = args.threads or report["threads"]
    torch.set_num_threads(threads)
    torch.manual_seed(s["seed"])
    device = torch.device(args.device)

    model = Seq2Seq(c).to(device).train()
    opt = s["optimizer"]
    adam = torch.optim.Adam(model.parameters(), lr=s["learning_rate"], betas=(opt["beta1"], opt["beta2"]),
                            eps=opt["epsilon"])
    g = torch.Generator().manual_seed(s["seed"])
    n, ls, lt = s["sentences"], s["source_len"], s["target_len"]
    # The same framing as Rosetta's batcher: source + EOS; BOS + target; target + EOS; no padding.
    src = torch.randint(4, c["source_vocab_size"], (n, ls), generator=g)
    src[:, -1] = 3
    tgt = torch.randint(4, c["target_vocab_size"], (n, lt - 1), generator=g)
    tgt_in = torch.cat([torch.full((n, 1), 2), tgt], 1)
    tgt_out = torch.cat([tgt, torch.full((n, 1), 3)], 1)
    src, tgt_in, tgt_out = src.to(device), tgt_in.to(device), tgt_out.to(device)
    tokens = n * (lt - 1)
    clip = s["clip_norm"] if s["clip_norm"] > 0 else math.inf

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    reset_peak_rss()
    step_seconds, losses = [], []
    for step in range(s["warmup"] + s["steps"]):
        start = time.perf_counter()
        adam.zero_grad(set_to_none=True)
        total = loss_sum(model(src, tgt_in), tgt_out, c["pad_id"], s["label_smoothing"])
        (total / tokens).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        adam.step()
        value = total.item()  # a read-back, as Rosetta's step reads its loss
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        if step >= s["warmup"]:
            step_seconds.append(time.perf_counter() - start)
            losses.append(value / tokens)

    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else peak_rss_bytes()
    ours = dict(framework=f"pytorch {torch.__version__}", device=str(device), threads=threads,
                step_seconds=step_seconds, target_tokens_per_step=tokens, peak_bytes=peak, losses=losses)
    if args.json:
        args.json.write_text(json.dumps(ours, indent=1) + "\n")

    r_min, r_med, r_max = summary(report["step_seconds"], report["target_tokens_per_step"])
    t_min, t_med, t_max = summary(step_seconds, tokens)
    mib = lambda b: "n/a" if b is None else f"{b / 2**20:.0f} MiB"  # noqa: E731
    print(f"model: d_model {c['d_model']}, {c['n_encoder_layers']}+{c['n_decoder_layers']} layers, "
          f"vocab {c['source_vocab_size']}/{c['target_vocab_size']}; batch {n}x{ls}->{lt}; "
          f"{s['steps']} timed steps after {s['warmup']} warm-up")
    print("| framework | device | threads | target tok/s median | min | max | peak memory |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print(f"| rosetta | {report['device']} | {report['threads']} | {r_med:.0f} | {r_min:.0f} | {r_max:.0f} "
          f"| {mib(report['peak_rss_bytes'])} RSS |")
    kind = "allocated" if device.type == "cuda" else "RSS"
    print(f"| pytorch {torch.__version__} | {device} | {threads} | {t_med:.0f} | {t_min:.0f} | {t_max:.0f} "
          f"| {mib(peak)} {kind} |")
    print(f"ratio rosetta / pytorch (median tokens/s): {r_med / t_med:.2f}x")


if __name__ == "__main__":
    main()
