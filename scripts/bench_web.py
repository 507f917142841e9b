#!/usr/bin/env python3
"""Rosetta in the browser, measured: the page in web/ in headless Chromium (driven over
WebDriver by chromedriver), loading a model bundle made by `rosetta export --web`.

Reports, for one bundle:
  - sizes: the WebAssembly module (web/pkg/rosetta_web_bg.wasm), its JavaScript glue, the bundle;
  - first translation: milliseconds from navigation start to the first translation on the page
    (`?q=` makes the page translate as soon as the model is ready), with the stages before it
    (WebAssembly ready, model downloaded, model built), over --loads fresh page loads;
  - throughput: source words/s and sentences/s translating --sentences lines of --input, greedy
    and beam 5, one sentence per call and in batches of 64;
  - the same lines translated natively by `rosetta translate` on the same bundle, in the same
    run (start-up and model load subtracted): its words/s, the browser-to-native ratio, and
    whether the outputs are identical.

Usage: scripts/bench_web.py --bundle DIR --input FILE [--sentences N] [--loads N] [--rosetta BIN]
                            [--pkg DIR]
Needs web/pkg (scripts/build_web.sh), Debian's chromium and chromium-driver.
"""

import argparse
import functools
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(directory):
    """A static file server on loopback for `directory`; returns (server, base URL)."""
    port = free_port()
    handler = functools.partial(Quiet, directory=directory)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{port}/"


class Browser:
    """Headless Chromium through chromedriver (the W3C WebDriver protocol)."""

    def __init__(self):
        port = free_port()
        self.driver = subprocess.Popen(
            [os.environ.get("CHROMEDRIVER", "chromedriver"), f"--port={port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                urllib.request.urlopen(self.base + "/status", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        else:
            sys.exit("chromedriver did not start")
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": os.environ.get("CHROMIUM", "/usr/bin/chromium"),
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--disable-background-networking",
                         "--disable-component-update", "--no-first-run"],
            }}}}
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def call(self, method, path, body=None):
        url = self.base + path if path == "/session" else f"{self.base}/session/{self.session}{path}"
        data = None if method == "GET" else json.dumps(body or {}).encode()
        request = urllib.request.Request(url, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=600) as response:
            return json.load(response)["value"]

    def script(self, source, *args):
        """Runs async `source` (its last argument is the callback) and returns what it passes."""
        return self.call("POST", "/execute/async", {"script": source, "args": list(args)})

    def close(self):
        try:
            self.call("DELETE", "")
        finally:
            self.driver.kill()


WAIT_FOR_FIRST = """
const done = arguments[arguments.length - 1];
const poll = () => {
  const r = window.rosetta;
  if (r && "firstTranslation" in r.timings) {
    done({ timings: r.timings, output: document.getElementById("output").textContent });
  } else if (document.getElementById("status").className === "error") {
    done({ error: document.getElementById("status").textContent });
  } else {
    setTimeout(poll, 10);
  }
};
poll();
"""

TRANSLATE = """
const [lines, options, oneByOne, done] = arguments;
window.rosetta.ready.then((translator) => {
  const started = performance.now();
  let results = [];
  if (oneByOne) {
    for (const line of lines) results.push(translator.translate(line, options));
  } else {
    for (let i = 0; i < lines.length; i += 64) {
      results = results.concat(translator.translateBatch(lines.slice(i, i + 64), options));
    }
  }
  done({ ms: performance.now() - started, translations: results.map((r) => r.translation) });
}).catch((error) => done({ error: String(error) }));
"""


def run_native(rosetta, bundle, lines, beam, batch):
    """`rosetta translate` on the bundle: (seconds of the whole command, outputs)."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        path = f.name
    try:
        started = time.perf_counter()
        out = subprocess.run(
            [rosetta, "translate", "--checkpoint", bundle, "--beam", str(beam),
             "--batch-size", str(batch), "--input", path],
            check=True, capture_output=True, text=True)
        seconds = time.perf_counter() - started
    finally:
        os.unlink(path)
    return seconds, out.stdout.rstrip("\n").split("\n")


def native(rosetta, bundle, lines, beam, batch):
    """Native translation time of `lines` without the command's start-up and model load (the
    whole command's time less that of translating the first line alone), and the outputs."""
    seconds, outputs = run_native(rosetta, bundle, lines, beam, batch)
    startup, _ = run_native(rosetta, bundle, lines[:1], beam, batch)
    return max(seconds - startup, 1e-6), outputs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bundle", required=True, help="a directory written by `rosetta export --web`")
    parser.add_argument("--input", required=True, help="source sentences, one per line")
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--loads", type=int, default=3)
    parser.add_argument("--pkg", default=os.path.join(ROOT, "web", "pkg"),
                        help="the wasm-bindgen output to load (default: web/pkg)")
    # The release build, as a user would run it (`cargo build --release -p rosetta-cli`).
    parser.add_argument("--rosetta", default=os.path.join(
        os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "rosetta"))
    args = parser.parse_args()

    pkg = args.pkg
    wasm = os.path.join(pkg, "rosetta_web_bg.wasm")
    if not os.path.isfile(wasm):
        sys.exit(f"{wasm} is missing: run scripts/build_web.sh first")
    with open(args.input, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f][: args.sentences]
    words = sum(len(line.split()) for line in lines)

    site = tempfile.mkdtemp(prefix="rosetta-web-")
    for name in ("index.html", "main.js"):
        shutil.copy(os.path.join(ROOT, "web", name), site)
    shutil.copytree(pkg, os.path.join(site, "pkg"))
    shutil.copytree(args.bundle, os.path.join(site, "model"))
    server, url = serve(site)

    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"CPU: {cpu}, {os.cpu_count()} cores; Chromium headless; bundle {args.bundle}")
    size = lambda p: os.path.getsize(p) / 1048576
    print(f"wasm module {size(wasm):.2f} MiB, JS glue {size(os.path.join(pkg, 'rosetta_web.js')) * 1024:.1f} KiB, "
          + ", ".join(f"{n} {size(os.path.join(args.bundle, n)):.2f} MiB" for n in sorted(os.listdir(args.bundle))))

    browser = Browser()
    try:
        firsts = []
        for _ in range(args.loads):
            browser.call("POST", "/url", {"url": url + "?q=" + urllib.request.quote(lines[0])})
            result = browser.script(WAIT_FOR_FIRST)
            if "error" in result:
                sys.exit(f"the page failed: {result['error']}")
            firsts.append(result["timings"])
        print("page load (ms after navigation start; each load a fresh page, files from the HTTP cache after the first):")
        for t in firsts:
            print("  " + ", ".join(f"{k} {v}" for k, v in t.items()))
        rows = []
        for beam in (1, 5):
            for one_by_one in (True, False):
                result = browser.script(TRANSLATE, lines, {"beam": beam}, one_by_one)
                if "error" in result:
                    sys.exit(f"translation failed: {result['error']}")
                batch = 1 if one_by_one else 64
                seconds, native_out = native(args.rosetta, args.bundle, lines, beam, batch)
                web_wps = words / (result["ms"] / 1000)
                native_wps = words / seconds
                same = sum(a == b for a, b in zip(result["translations"], native_out))
                rows.append((beam, batch, web_wps, len(lines) / (result["ms"] / 1000), native_wps, same))
        print(f"{len(lines)} sentences, {words} source words ({args.input}):")
        print("| search | batch | browser words/s | browser sentences/s | native words/s | browser/native | identical |")
        print("|---|---|---|---|---|---|---|")
        for beam, batch, wps, sps, nwps, same in rows:
            print(f"| {'greedy' if beam == 1 else f'beam {beam}'} | {batch} | {wps:.0f} | {sps:.1f} | {nwps:.0f} | "
                  f"{wps / nwps:.2f} | {same}/{len(lines)} |")
    finally:
        browser.close()
        server.shutdown()
        shutil.rmtree(site, ignore_errors=True)


if __name__ == "__main__":
    main()
