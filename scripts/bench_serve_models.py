#!/usr/bin/env python3
"""Several models in one `rosetta serve`: resident memory and fairness (issue #40).

Measures, on this machine, in one invocation:

1. Resident memory (VmRSS, and the peak VmHWM, from /proc) after each model has answered
   requests, for: one server with one model; one server with three; the same three after
   `--unload-after-secs` unloaded them all; and three servers of one model each (summed);
   and the throughput of `--clients` clients spread over the three models (one sentence per
   request), one server of three models against three servers.
2. Fairness: the p50/p90 latency of a single client translating one sentence at a time on
   model B, alone and while `--flood-clients` clients send requests of `--flood-sentences`
   sentences to model A as fast as they are answered. The target of #40: B's p50 under the
   flood within 2x its idle p50.

Usage (the three `--checkpoint`s may name the same run: each is loaded on its own):

    scripts/bench_serve_models.py --rosetta target/debug/rosetta \\
        --checkpoint runs/m30k --input data/multi30k/val.en [--seconds 20] [--beam 1]

Only the Python standard library is needed. Servers listen on loopback, on free ports.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

LABELS = [("en", "de"), ("en", "fr"), ("en", "cs")]


def start(rosetta, args):
    """Starts `rosetta serve` with `args` on a free loopback port: (process, base URL)."""
    process = subprocess.Popen(
        [rosetta, "serve", "--host", "127.0.0.1", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    line = process.stdout.readline()
    url = next((w for w in line.split() if w.startswith("http://")), None)
    if url is None:
        process.kill()
        sys.exit(f"the server did not start: {line!r}")
    # The model lines follow; drain standard output in the background.
    threading.Thread(target=lambda: process.stdout.read(), daemon=True).start()
    return process, url


def stop(process):
    process.terminate()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()


def memory_mib(pid):
    """(VmRSS, VmHWM) of process `pid`, in MiB."""
    values = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, rest = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                values[name] = int(rest.split()[0]) / 1024
    return values["VmRSS"], values["VmHWM"]


def translate(url, sentences, source, target):
    """POSTs LibreTranslate's request; the latency in seconds."""
    body = json.dumps({"q": sentences, "source": source, "target": target}).encode()
    request = urllib.request.Request(
        f"{url}/translate", data=body, headers={"content-type": "application/json"}
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=300) as response:
        answer = json.load(response)
    if "translatedText" not in answer:
        raise RuntimeError(f"no translation: {answer}")
    return time.perf_counter() - started


def models_file(directory, checkpoints, load="start"):
    path = os.path.join(directory, f"serve-{load}.toml")
    with open(path, "w") as out:
        for i, checkpoint in enumerate(checkpoints):
            source, target = LABELS[i]
            out.write(
                f'[[model]]\nid = "{source}-{target}"\ncheckpoint = "{os.path.abspath(checkpoint)}"\n'
                f'source = "{source}"\ntarget = "{target}"\nload = "{load}"\n\n'
            )
    return path


def warm(url, sentences, pairs, n=20):
    for pair in pairs:
        for sentence in sentences[:n]:
            translate(url, sentence, *pair)


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def single_client(url, sentences, pair, seconds):
    latencies = []
    deadline = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < deadline:
        latencies.append(translate(url, sentences[i % len(sentences)], *pair))
        i += 1
    return latencies


def spread_load(targets, sentences, clients, seconds):
    """`clients` clients, client c sending one sentence per request to `targets[c % len]` (a
    (url, source, target) triple) for `seconds`: sentences/s and the number of failures."""
    done, failed = [0], [0]
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def client(c):
        url, source, target = targets[c % len(targets)]
        i = c
        while time.perf_counter() < deadline:
            try:
                translate(url, sentences[i % len(sentences)], source, target)
                with lock:
                    done[0] += 1
            except Exception:  # noqa: BLE001 - counted
                with lock:
                    failed[0] += 1
            i += clients

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"sentences_per_s": done[0] / (time.perf_counter() - started), "failed": failed[0]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rosetta", required=True)
    parser.add_argument("--checkpoint", action="append", required=True)
    parser.add_argument("--input", required=True, help="sentences, one per line")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--flood-clients", type=int, default=8)
    parser.add_argument("--flood-sentences", type=int, default=8)
    parser.add_argument("--beam", default="1")
    parser.add_argument("--clients", type=int, default=16, help="for the throughput phase")
    args = parser.parse_args()
    checkpoints = (args.checkpoint * 3)[:3]
    with open(args.input) as f:
        sentences = [line.strip() for line in f if line.strip()][:500]
    search = ["--beam", args.beam]
    report = {"checkpoints": checkpoints, "beam": args.beam, "cpu": cpu_name()}

    with tempfile.TemporaryDirectory() as directory:
        # 1. Memory.
        process, url = start(args.rosetta, ["--checkpoint", checkpoints[0], *search])
        warm(url, sentences, [(None, None)])
        report["one_model_mib"] = memory_mib(process.pid)
        stop(process)

        process, url = start(args.rosetta, ["--models", models_file(directory, checkpoints), *search])
        warm(url, sentences, LABELS)
        report["three_models_mib"] = memory_mib(process.pid)
        report["three_models_throughput"] = spread_load(
            [(url, *pair) for pair in LABELS], sentences, args.clients, args.seconds
        )
        report["three_models_after_load_mib"] = memory_mib(process.pid)
        stop(process)

        process, url = start(
            args.rosetta,
            ["--models", models_file(directory, checkpoints), "--unload-after-secs", "2", *search],
        )
        warm(url, sentences, LABELS)
        deadline = time.time() + 60
        while time.time() < deadline:
            with urllib.request.urlopen(f"{url}/models") as response:
                if not any(m["loaded"] for m in json.load(response)):
                    break
            time.sleep(0.2)
        report["three_unloaded_mib"] = memory_mib(process.pid)
        stop(process)

        separate = []
        for checkpoint in checkpoints:
            separate.append(start(args.rosetta, ["--checkpoint", checkpoint, *search]))
        for _, url in separate:
            warm(url, sentences, [(None, None)])
        report["three_servers_mib"] = [memory_mib(p.pid) for p, _ in separate]
        report["three_servers_throughput"] = spread_load(
            [(url, None, None) for _, url in separate], sentences, args.clients, args.seconds
        )
        report["three_servers_after_load_mib"] = [memory_mib(p.pid) for p, _ in separate]
        for process, _ in separate:
            stop(process)

        # 2. Fairness: B alone, then B beside a flood on A.
        process, url = start(args.rosetta, ["--models", models_file(directory, checkpoints), *search])
        warm(url, sentences, LABELS[:2])
        a, b = LABELS[0], LABELS[1]
        idle = single_client(url, sentences, b, args.seconds)
        stop_flood = threading.Event()
        flooded = [0]

        def flood(offset):
            i = offset
            while not stop_flood.is_set():
                batch = [sentences[(i + k) % len(sentences)] for k in range(args.flood_sentences)]
                translate(url, batch, *a)
                flooded[0] += len(batch)
                i += args.flood_sentences

        threads = [threading.Thread(target=flood, args=(c * 37,)) for c in range(args.flood_clients)]
        for thread in threads:
            thread.start()
        time.sleep(1.0)
        flood_started = time.perf_counter()
        flooded[0] = 0
        busy = single_client(url, sentences, b, args.seconds)
        flood_seconds = time.perf_counter() - flood_started
        flood_rate = flooded[0] / flood_seconds
        stop_flood.set()
        for thread in threads:
            thread.join()
        stop(process)

    report["fairness"] = {
        "b_idle_p50_ms": 1000 * statistics.median(idle),
        "b_idle_p90_ms": 1000 * percentile(idle, 90),
        "b_idle_requests": len(idle),
        "b_flooded_p50_ms": 1000 * statistics.median(busy),
        "b_flooded_p90_ms": 1000 * percentile(busy, 90),
        "b_flooded_requests": len(busy),
        "a_flood_sentences_per_s": flood_rate,
        "ratio_p50": statistics.median(busy) / statistics.median(idle),
    }
    print(json.dumps(report, indent=2))
    one, three, unloaded = (report[k][0] for k in ("one_model_mib", "three_models_mib", "three_unloaded_mib"))
    servers = sum(rss for rss, _ in report["three_servers_mib"])
    f = report["fairness"]
    print(
        f"\nresident memory (MiB): one model {one:.0f}; three models in one server {three:.0f}; "
        f"the three unloaded {unloaded:.0f}; three servers of one model {servers:.0f}"
    )
    print(
        f"{args.clients} clients spread over the three models, {args.seconds:.0f} s: one server "
        f"{report['three_models_throughput']['sentences_per_s']:.1f} sentences/s "
        f"({report['three_models_throughput']['failed']} failed, "
        f"{report['three_models_after_load_mib'][0]:.0f} MiB after), three servers "
        f"{report['three_servers_throughput']['sentences_per_s']:.1f} sentences/s "
        f"({report['three_servers_throughput']['failed']} failed, "
        f"{sum(r for r, _ in report['three_servers_after_load_mib']):.0f} MiB after)"
    )
    print(
        f"model B, one client: p50 {f['b_idle_p50_ms']:.1f} ms alone, {f['b_flooded_p50_ms']:.1f} ms "
        f"while {args.flood_clients} clients flood model A ({f['a_flood_sentences_per_s']:.1f} sentences/s): "
        f"{f['ratio_p50']:.2f}x (target: at most 2x)"
    )


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    main()
