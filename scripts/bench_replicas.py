#!/usr/bin/env python3
"""Rosetta replicas behind HAProxy (Debian's `haproxy`), on loopback (issue #40).

Starts two `rosetta serve` replicas of one checkpoint and HAProxy in front of them with
scripts/haproxy/rosetta.cfg, then runs `--clients` clients, each sending one sentence per
request (LibreTranslate's API) in a loop, for `--seconds` each phase:

1. one replica, directly;
2. two replicas through HAProxy;
3. two replicas through HAProxy, one of them killed (SIGKILL) a third of the way in: every
   request must still be answered (HAProxy retries it on the other replica).

It prints, per phase, sentences/s, p50/p99 latency and failed requests, as JSON and a table.

    scripts/bench_replicas.py --rosetta target/debug/rosetta --checkpoint runs/m30k \\
        --input data/multi30k/val.en [--clients 32] [--seconds 20] [--beam 1]

Each replica gets `--threads` compute threads (default: the cores divided between them); the
single replica of phase 1 gets all the cores. Only the Python standard library is needed.
"""

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_replica(rosetta, checkpoint, port, threads, search):
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    process = subprocess.Popen(
        [rosetta, "serve", "--checkpoint", checkpoint, "--host", "127.0.0.1",
         "--port", str(port), *search],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
    )
    line = process.stdout.readline()
    if "http://" not in line:
        process.kill()
        sys.exit(f"a replica did not start: {line!r}")
    threading.Thread(target=lambda: process.stdout.read(), daemon=True).start()
    return process


def start_haproxy(listen_port, replica_ports, directory):
    with open(os.path.join(HERE, "haproxy", "rosetta.cfg")) as f:
        template = f.read()
    servers = "\n".join(
        f"    server replica{i + 1} 127.0.0.1:{port}" for i, port in enumerate(replica_ports)
    )
    config = template.replace("{LISTEN}", f"127.0.0.1:{listen_port}").replace("{SERVERS}", servers)
    path = os.path.join(directory, "haproxy.cfg")
    with open(path, "w") as f:
        f.write(config)
    check = subprocess.run(["haproxy", "-c", "-f", path], capture_output=True, text=True)
    if check.returncode != 0:
        sys.exit(f"haproxy refused {path}:\n{check.stdout}{check.stderr}")
    process = subprocess.Popen(["haproxy", "-db", "-f", path],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{listen_port}/health", timeout=2):
                return process
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.1)
    process.kill()
    sys.exit("haproxy did not answer /health")


def translate(url, sentence):
    body = json.dumps({"q": sentence}).encode()
    request = urllib.request.Request(f"{url}/translate", data=body,
                                     headers={"content-type": "application/json"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as response:
        answer = json.load(response)
    if not isinstance(answer.get("translatedText"), str):
        raise RuntimeError(f"no translation: {answer}")
    return time.perf_counter() - started


def load(url, sentences, clients, seconds, during=None):
    """`clients` clients for `seconds`; `during(elapsed)` is called by a timer thread."""
    latencies, failures = [], []
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def client(offset):
        i = offset
        while time.perf_counter() < deadline:
            try:
                latency = translate(url, sentences[i % len(sentences)])
                with lock:
                    latencies.append(latency)
            except Exception as error:  # noqa: BLE001 - every failure is counted and shown
                with lock:
                    failures.append(repr(error)[:200])
            i += clients

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    if during is not None:
        during()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    ordered = sorted(latencies)
    return {
        "requests": len(latencies),
        "sentences_per_s": len(latencies) / elapsed,
        "p50_ms": 1000 * statistics.median(ordered) if ordered else None,
        "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] if ordered else None,
        "failed": len(failures),
        "first_failures": failures[:3],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rosetta", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--beam", default="1")
    parser.add_argument("--threads", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    args = parser.parse_args()
    with open(args.input) as f:
        sentences = [line.strip() for line in f if line.strip()][:1000]
    search = ["--beam", args.beam]
    cores = os.cpu_count() or 2
    report = {"clients": args.clients, "seconds": args.seconds, "cores": cores,
              "threads_per_replica": args.threads}

    with tempfile.TemporaryDirectory() as directory:
        port = free_port()
        one = start_replica(args.rosetta, args.checkpoint, port, cores, search)
        report["one_replica"] = load(f"http://127.0.0.1:{port}", sentences, args.clients, args.seconds)
        one.terminate()
        one.wait()

        ports = [free_port(), free_port()]
        replicas = [start_replica(args.rosetta, args.checkpoint, p, args.threads, search) for p in ports]
        listen = free_port()
        balancer = start_haproxy(listen, ports, directory)
        url = f"http://127.0.0.1:{listen}"
        try:
            report["two_replicas"] = load(url, sentences, args.clients, args.seconds)

            def kill_one():
                time.sleep(args.seconds / 3)
                replicas[1].send_signal(signal.SIGKILL)

            report["two_replicas_one_killed"] = load(url, sentences, args.clients, args.seconds, kill_one)
        finally:
            balancer.terminate()
            for replica in replicas:
                replica.kill()
                replica.wait()
            balancer.wait()

    print(json.dumps(report, indent=2))
    print(f"\n{args.clients} clients, {args.seconds:.0f} s each, {cores} cores")
    print("| setup | sentences/s | p50 | p99 | failed |")
    print("| --- | --- | --- | --- | --- |")
    for key, name in [("one_replica", "one replica, direct"),
                      ("two_replicas", "two replicas behind HAProxy"),
                      ("two_replicas_one_killed", "two behind HAProxy, one killed at 1/3")]:
        r = report[key]
        print(f"| {name} | {r['sentences_per_s']:.1f} | {r['p50_ms']:.1f} ms | {r['p99_ms']:.1f} ms "
              f"| {r['failed']} of {r['requests'] + r['failed']} |")


if __name__ == "__main__":
    main()
