// The page's script: loads the WebAssembly translator (pkg/, made by scripts/build_web.sh) and a
// model bundle (made by `rosetta export --web`), then translates what is typed, one sentence
// per line. No bundler, no CDN: any static file server will do.
//
// For tests and benchmarks it exposes `window.rosetta`: `ready` (a promise of the loaded
// Translator) and `timings` (milliseconds since navigation start at each stage).
import init, { Translator } from "./pkg/rosetta_web.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const base = new URL(params.get("model") || "model/", location.href);
const timings = {};
const mark = (name) => { timings[name] = Math.round(performance.now()); };
$("model-url").textContent = base.href;

function setStatus(text, isError = false) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "";
}

async function fetchOk(url) {
  let response;
  try {
    response = await fetch(url);
  } catch (error) {
    throw new Error(`cannot fetch ${url}: ${error.message}`);
  }
  if (!response.ok) throw new Error(`cannot fetch ${url}: HTTP ${response.status} ${response.statusText}`);
  return response;
}

async function fetchText(url) {
  return (await fetchOk(url)).text();
}

// The bytes at `url`, reporting (received, total) as they arrive.
async function fetchBytes(url, onProgress) {
  const response = await fetchOk(url);
  // With a compressed transfer, content-length counts compressed bytes: no total then.
  const total = response.headers.get("content-encoding")
    ? 0
    : Number(response.headers.get("content-length")) || 0;
  if (!response.body) return new Uint8Array(await response.arrayBuffer());
  const reader = response.body.getReader();
  const chunks = [];
  let received = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    received += value.length;
    onProgress(received, total);
  }
  const bytes = new Uint8Array(received);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return bytes;
}

const mib = (bytes) => (bytes / 1048576).toFixed(1);

async function load() {
  $("load-status").textContent = "loading the WebAssembly module…";
  await init();
  mark("wasmReady");
  const configText = await fetchText(new URL("bundle.json", base));
  // Checked by Rosetta before anything else is fetched: ["model.bpk", tokenizer file(s)].
  const [weightsName, ...tokenizerNames] = Translator.bundleFiles(configText);
  const [tokenizers, model] = await Promise.all([
    Promise.all(
      tokenizerNames.map(async (name) => new Uint8Array(await (await fetchOk(new URL(name, base))).arrayBuffer())),
    ),
    fetchBytes(new URL(weightsName, base), (received, total) => {
      const known = total >= received ? total : 0;
      $("progress").max = known || received;
      $("progress").value = received;
      $("load-status").textContent = known
        ? `downloading the model: ${mib(received)} of ${mib(known)} MiB`
        : `downloading the model: ${mib(received)} MiB`;
    }),
  ]);
  mark("downloaded");
  $("load-status").textContent = "building the model…";
  // Let the page paint the status before the (synchronous) load.
  await new Promise((resolve) => setTimeout(resolve, 0));
  const translator = Translator.load(model, configText, tokenizers);
  mark("modelReady");
  const info = translator.info();
  // A multilingual bundle: its directions in a select, each sent as `targetLang`.
  const directions = info.directions || [];
  if (directions.length > 0) {
    for (const { source, target } of directions) {
      const option = document.createElement("option");
      option.value = target;
      option.textContent = `${source} → ${target}`;
      $("direction").append(option);
    }
    $("direction").hidden = false;
    $("direction-label").hidden = false;
  }
  const source = directions.length > 0 ? [...new Set(directions.map((d) => d.source))].join("/") : info.sourceLang || "source";
  const target = directions.length > 0 ? [...new Set(directions.map((d) => d.target))].join("/") : info.targetLang || "target";
  $("source-label").textContent = `Text (${source})`;
  $("output-label").textContent = `Translation (${target})`;
  $("model").textContent =
    `${source} → ${target}: ${(info.parameters / 1e6).toFixed(1)} M parameters, ` +
    `step ${info.step}, ${info.precision} weights (${mib(model.length)} MiB), ` +
    `ready ${timings.modelReady} ms after the page began loading. ` +
    "It runs in this page: nothing you type leaves your computer.";
  $("loading").hidden = true;
  $("translate").disabled = false;
  return translator;
}

const ready = load();
window.rosetta = { ready, timings };

async function translate() {
  // Not while the model loads or another translation runs (Ctrl+Enter bypasses the button).
  if ($("translate").disabled) return;
  const lines = $("source").value.split("\n");
  const words = lines.reduce((n, line) => n + line.split(/\s+/).filter(Boolean).length, 0);
  const beam = Number($("search").value);
  $("translate").disabled = true;
  setStatus("translating…");
  await new Promise((resolve) => setTimeout(resolve, 0));
  try {
    const translator = await ready;
    const started = performance.now();
    const options = $("direction").hidden ? { beam } : { beam, targetLang: $("direction").value };
    const results = translator.translateBatch(lines, options);
    const ms = performance.now() - started;
    $("output").textContent = results.map((r) => r.translation).join("\n");
    setStatus("");
    $("timing").textContent =
      `${lines.length} line(s), ${words} word(s) in ${ms.toFixed(0)} ms` +
      (ms > 0 && words > 0 ? `: ${(words / (ms / 1000)).toFixed(0)} words/s` : "") +
      ` (${beam === 1 ? "greedy" : `beam ${beam}`})`;
    if (!("firstTranslation" in timings)) mark("firstTranslation");
  } catch (error) {
    setStatus(error.message || String(error), true);
  } finally {
    $("translate").disabled = false;
  }
}

$("translate").addEventListener("click", translate);
$("source").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) translate();
});

ready.then(
  () => {
    const q = params.get("q");
    if (q) {
      $("source").value = q;
      translate();
    }
  },
  (error) => {
    $("load-status").textContent = "";
    $("progress").hidden = true;
    setStatus(`The model could not be loaded: ${error.message || error}`, true);
  },
);
