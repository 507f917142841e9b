#!/usr/bin/env python3
"""Side-by-side figures of a Rosetta run and its PyTorch reference (scripts/train_torch.py).

    python3 scripts/compare_runs.py runs/multi30k-en-de runs/multi30k-en-de-torch

Reads both `metrics.jsonl` files and prints: steps, median (min-max) target tokens/s over the
logging windows, the Rosetta/PyTorch throughput ratio, and the validation loss of both at every
step where both validated (the same recipe should give the same curve, step for step).
Standard library only.
"""

import json
import pathlib
import statistics
import sys


def records(run: pathlib.Path) -> list[dict]:
    path = run / "metrics.jsonl"
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise SystemExit(f"{path}: {e.strerror}")
    out = []
    for number, line in enumerate(lines, 1):
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise SystemExit(f"{path}:{number}: not JSON ({e.msg})")
    return out


def throughput(recs: list[dict]) -> list[float]:
    return [r["target_tokens_per_second"] for r in recs if r.get("kind") == "train"]


def main() -> None:
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    rosetta, torch = (records(pathlib.Path(a)) for a in sys.argv[1:])
    for name, recs in (("Rosetta", rosetta), ("PyTorch", torch)):
        tps = throughput(recs)
        if not tps:
            raise SystemExit(f"{name}: no training records")
        steps = max(r["step"] for r in recs)
        print(f"{name:8} last logged step {steps:6}  target tok/s median {statistics.median(tps):,.0f} "
              f"({min(tps):,.0f}-{max(tps):,.0f})")
    ratio = statistics.median(throughput(rosetta)) / statistics.median(throughput(torch))
    print(f"throughput ratio Rosetta / PyTorch: {ratio:.2f}x")
    valid_r = {r["step"]: r["loss"] for r in rosetta if r.get("kind") == "valid"}
    valid_t = {r["step"]: r["loss"] for r in torch if r.get("kind") == "valid"}
    common = sorted(set(valid_r) & set(valid_t))
    if common:
        print("validation loss at the same step:  step  Rosetta  PyTorch")
        for step in common:
            print(f"{'':34}{step:6}  {valid_r[step]:7.3f}  {valid_t[step]:7.3f}")


if __name__ == "__main__":
    main()
