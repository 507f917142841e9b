#!/usr/bin/env python3
"""PyTorch (and NumPy) on the matrix products of `cargo bench -p rosetta-model --bench matmul`.

    python scripts/bench_matmul_torch.py [--threads 2] [--shapes 64x256x8000,...] [--repeats 10]

`--shapes` takes the same `MxKxN` list as `scripts/gemm_direct`'s `SHAPES`, for the decoding
shapes (64 rows) beside the training ones.
"""

import argparse
import time

import numpy as np
import torch

SHAPES = [(1536, 256, 1024), (1536, 1024, 256), (1536, 256, 8000), (256, 1536, 8000)]
REPEATS = 10


def parse_shapes(text: str) -> list:
    """`MxKxN,...` as a list of (m, k, n); a malformed entry is refused."""
    shapes = []
    for entry in text.split(","):
        parts = entry.strip().split("x")
        if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
            raise argparse.ArgumentTypeError(f"shape {entry!r} is not MxKxN with positive sizes")
        shapes.append(tuple(int(p) for p in parts))
    return shapes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--shapes", type=parse_shapes, default=SHAPES, help="MxKxN,... (default: the training shapes)")
    ap.add_argument("--repeats", type=int, default=REPEATS)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"| backend | m x k x n | ms | GFLOP/s |  ({args.threads} threads)")
    print("| --- | --- | --- | --- |")
    for name, make, mul in [
        (f"pytorch {torch.__version__}", lambda r, c: torch.rand(r, c), lambda a, b: (a @ b)[0, 0].item()),
        (f"numpy {np.__version__}", lambda r, c: np.random.rand(r, c).astype(np.float32), lambda a, b: (a @ b)[0, 0]),
    ]:
        for m, k, n in args.shapes:
            a, b = make(m, k), make(k, n)
            mul(a, b)
            start = time.perf_counter()
            for _ in range(args.repeats):
                mul(a, b)
            seconds = (time.perf_counter() - start) / args.repeats
            print(f"| {name} | {m} x {k} x {n} | {seconds * 1e3:.3f} | {2 * m * k * n / seconds / 1e9:.1f} |")


if __name__ == "__main__":
    main()
