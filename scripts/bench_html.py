#!/usr/bin/env python3
"""`format: "html"` measured on tagged sentences made from a corpus (issue #40).

Wraps one or two spans of 1-3 words of each sentence (deterministically, seed 1) in inline
tags (`<b>`, `<i>`, `<a href=...>` with an entity in the attribute), puts each sentence in a
`<p>`, and sends the plain sentences and the tagged ones to one `rosetta serve`. Reports:

- well-formed outputs (Python's XML parser accepts `<root>OUTPUT</root>`);
- tags kept (the output's tags, with their attributes, are the input's, in order);
- inline elements that still wrap some text;
- BLEU (sacreBLEU) of the outputs' text against the plain-text translations: the tags'
  effect on the translation (100: none), and the same for translating each text node alone
  (what a tag-splitting translator does), for comparison.

    scripts/bench_html.py --rosetta target/debug/rosetta --checkpoint runs/m30k \\
        --input data/multi30k/val.en [--sentences 300]

Needs `sacrebleu` (the repository's Python venv has it).
"""

import argparse
import json
import random
import subprocess
import sys
import threading
import urllib.request
import xml.etree.ElementTree as ET
from html import escape

import sacrebleu

TAGS = [("<b>", "</b>"), ("<i>", "</i>"), ('<a href="https://example.org/?q=1&amp;r=2">', "</a>")]


def tagged(sentence, rng):
    words = sentence.split()
    if len(words) < 3:
        return f"<p>{escape(sentence, quote=False)}</p>"
    spans = []
    for _ in range(rng.choice([1, 2])):
        length = rng.randint(1, min(3, len(words)))
        start = rng.randrange(0, len(words) - length + 1)
        if all(start >= e or start + length <= s for s, e in spans):
            spans.append((start, start + length))
    spans.sort()
    out, i = [], 0
    for s, e in spans:
        out += [escape(w, quote=False) for w in words[i:s]]
        open_tag, close_tag = rng.choice(TAGS)
        inner = " ".join(escape(w, quote=False) for w in words[s:e])
        out.append(f"{open_tag}{inner}{close_tag}")
        i = e
    out += [escape(w, quote=False) for w in words[i:]]
    return "<p>" + " ".join(out) + "</p>"


def post(url, body):
    request = urllib.request.Request(f"{url}/translate", data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.load(response)["translatedText"]


def translate_all(url, texts, fmt, chunk=100):
    out = []
    for i in range(0, len(texts), chunk):
        out += post(url, {"q": texts[i:i + chunk], "format": fmt})
    return out


def tags_of(root):
    return [(e.tag, sorted(e.attrib.items())) for e in root.iter()][1:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rosetta", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--sentences", type=int, default=300)
    parser.add_argument("--beam", default="1")
    args = parser.parse_args()
    with open(args.input) as f:
        sentences = [line.strip() for line in f if line.strip()][: args.sentences]
    rng = random.Random(1)
    documents = [tagged(s, rng) for s in sentences]

    server = subprocess.Popen(
        [args.rosetta, "serve", "--checkpoint", args.checkpoint, "--host", "127.0.0.1",
         "--port", "0", "--beam", args.beam, "--max-sentences", "500"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = server.stdout.readline()
    url = next((w for w in line.split() if w.startswith("http://")), None)
    if url is None:
        server.kill()
        sys.exit(f"the server did not start: {line!r}")
    threading.Thread(target=lambda: server.stdout.read(), daemon=True).start()
    try:
        plain = translate_all(url, sentences, "text")
        html = translate_all(url, documents, "html")
        # Each text node alone, as a translator that splits at tags would do.
        nodes_per_doc = [[t.strip() for t in ET.fromstring(f"<root>{d}</root>").itertext() if t.strip()]
                         for d in documents]
        flat = [n for nodes in nodes_per_doc for n in nodes]
        node_translations = iter(translate_all(url, flat, "text"))
        split = [" ".join(next(node_translations) for _ in nodes) for nodes in nodes_per_doc]
    finally:
        server.terminate()
        server.wait()

    well_formed = kept = 0
    inline_total = inline_with_text = 0
    texts = []
    for document, output in zip(documents, html):
        source_root = ET.fromstring(f"<root>{document}</root>")
        try:
            root = ET.fromstring(f"<root>{output}</root>")
        except ET.ParseError:
            texts.append("")
            continue
        well_formed += 1
        kept += tags_of(root) == tags_of(source_root)
        for element in root.iter():
            if element.tag in ("b", "i", "a"):
                inline_total += 1
                inline_with_text += bool("".join(element.itertext()).strip())
        texts.append(" ".join("".join(root.itertext()).split()))
    n = len(documents)
    metric = sacrebleu.BLEU()
    bleu_html = metric.corpus_score(texts, [plain])
    bleu_split = metric.corpus_score(split, [plain])
    report = {
        "sentences": n,
        "well_formed": well_formed,
        "tags_kept": kept,
        "inline_elements": inline_total,
        "inline_elements_with_text": inline_with_text,
        "bleu_html_text_vs_plain": bleu_html.score,
        "identical_to_plain": sum(t == p for t, p in zip(texts, plain)),
        "bleu_per_text_node_vs_plain": bleu_split.score,
        "signature": str(metric.get_signature()),
        "examples": [{"input": d, "output": o} for d, o in zip(documents[:3], html[:3])],
    }
    print(json.dumps(report, indent=2, ensure_ascii=False))
    print(f"\n{n} tagged sentences: {well_formed} well formed, {kept} with every tag kept in order, "
          f"{inline_with_text} of {inline_total} inline elements wrapping text; text BLEU against the "
          f"plain translation {bleu_html.score:.1f} ({report['identical_to_plain']} identical), "
          f"per-text-node translation {bleu_split.score:.1f}")


if __name__ == "__main__":
    main()
