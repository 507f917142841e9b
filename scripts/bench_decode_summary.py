#!/usr/bin/env python3
"""The summary table of `scripts/bench_decode_systems.sh`: per (search, batch size), Rosetta's
target tokens/s beside cached PyTorch's and CTranslate2's at its best setting, and the ratios.

    python3 scripts/bench_decode_summary.py --rosetta ROSETTA.txt --pytorch PYTORCH.txt \
        --ctranslate2 CT2.json

ROSETTA.txt is what `rosetta bench-decode` printed, PYTORCH.txt what `scripts/torch_decode.py
--bench` printed (markdown tables with `search`, `batch` and `target tokens/s` columns), CT2.json
what `scripts/bench_ctranslate2.py --json` wrote (every compute type under every backend
setting). "CT2 best" is, per row and compute type, the setting with the most target tokens/s
(the settings and their backends are in bench_ctranslate2.py's own output). All three count
target tokens the same way (each output's tokens plus its EOS). Imports neither torch nor
ctranslate2.
"""

import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import ct2_settings  # noqa: E402  (imports nothing of CTranslate2)


def markdown_rates(path: str) -> dict:
    """{(search, batch): target tokens/s} from the first table with those columns."""
    rates, columns = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line.startswith("|"):
                continue
            cells = [c.strip() for c in line.strip("|").split("|")]
            if "search" in cells and "target tokens/s" in cells:
                columns = {name: i for i, name in enumerate(cells)}
                continue
            if columns is None or set(line) <= set("|- "):
                continue
            try:
                key = (cells[columns["search"]], int(cells[columns["batch"]]))
                rates.setdefault(key, float(cells[columns["target tokens/s"]].replace(",", "")))
            except (ValueError, IndexError):
                continue
    return rates


def ct2_best(report: dict) -> dict:
    """{compute type: {(search, batch): (best tokens/s, setting)}}."""
    best = {}
    for run in report["runs"]:
        table = best.setdefault(run["compute_type"], {})
        for r in run["rows"]:
            key = ("greedy" if r["beam"] == 1 else f"beam {r['beam']}", r["batch"])
            rate = r["tokens"] / r["seconds"]
            if key not in table or rate > table[key][0]:
                table[key] = (rate, run["setting"])
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rosetta", required=True)
    parser.add_argument("--rosetta-int8", help="`rosetta bench-decode --quantize int8`'s table")
    parser.add_argument("--pytorch")
    parser.add_argument("--ctranslate2")
    args = parser.parse_args()
    rosetta = markdown_rates(args.rosetta)
    int8 = markdown_rates(args.rosetta_int8) if args.rosetta_int8 else {}
    pytorch = markdown_rates(args.pytorch) if args.pytorch else {}
    report = {"runs": []}
    if args.ctranslate2:
        with open(args.ctranslate2) as f:
            report = json.load(f)
    ct2 = ct2_best(report)

    def num(x):
        return "n/a" if x is None else f"{x:,.0f}"

    def ratio(a, b):
        return "n/a" if not a or not b else f"{a / b:.2f}x"

    types = list(ct2)
    head = ["search", "batch", "Rosetta"] + (["Rosetta int8"] if int8 else []) + ["PyTorch, cached"]
    head += [f"CT2 {t} best (setting)" for t in types]
    head += ["Rosetta / PyTorch"] + [f"Rosetta / CT2 {t} best" for t in types]
    if int8:
        head += ["Rosetta int8 / Rosetta"] + [
            f"Rosetta int8 / CT2 {t} best" for t in types if t == "int8"
        ]
    print("| " + " | ".join(head) + " |")
    print("| " + " | ".join("---" for _ in head) + " |")
    for key in rosetta:
        r = rosetta[key]
        cells = [key[0], str(key[1]), num(r)]
        cells += [num(int8.get(key))] if int8 else []
        cells += [num(pytorch.get(key))]
        for t in types:
            best = ct2[t].get(key)
            cells.append(f"{num(best[0])} ({best[1]})" if best else "n/a")
        cells.append(ratio(r, pytorch.get(key)))
        cells += [ratio(r, ct2[t].get(key, (None,))[0]) for t in types]
        if int8:
            cells.append(ratio(int8.get(key), r))
            cells += [ratio(int8.get(key), ct2[t].get(key, (None,))[0]) for t in types if t == "int8"]
        print("| " + " | ".join(cells) + " |")
    for t in types:
        note = ct2_settings.same_backend_note(report["runs"], t)
        if note:
            print(f"\nNote: {note}.")


if __name__ == "__main__":
    main()
