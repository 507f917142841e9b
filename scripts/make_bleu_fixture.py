#!/usr/bin/env python3
"""Writes the sacreBLEU parity fixtures that `crates/eval/tests/bleu_parity.rs` checks.

For each case, writes the hypothesis and reference files (one segment per line, UTF-8, `\n`
line ends) and records what sacreBLEU's defaults compute for them:
`sacrebleu.metrics.BLEU()` (13a, exp smoothing, max order 4) and `sacrebleu.metrics.CHRF()`
(chrF2: char order 6, word order 0, beta 2, whitespace removed), with their signatures and
printed forms. Also records the 13a tokenizer's output on tricky strings, for the unit tests.

  crates/eval/tests/fixtures/bleu/<case>.hyp          hypotheses
  crates/eval/tests/fixtures/bleu/<case>.ref<i>       reference stream i (0-based)
  crates/eval/tests/fixtures/bleu/cases.json          sacreBLEU's scores for every case
  crates/eval/tests/fixtures/bleu/tokenize_13a.json   13a tokenizer inputs and outputs

Deterministic (seeded `random.Random`). Run by hand; the fixtures are committed and CI does not
need Python:

  python3 -m venv .venv && .venv/bin/pip install sacrebleu
  .venv/bin/python scripts/make_bleu_fixture.py
"""

import json
import pathlib
import random

import sacrebleu
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

OUT = pathlib.Path(__file__).resolve().parent.parent / "crates/eval/tests/fixtures/bleu"

# --- a realistic corpus: template sentences, then a "system" that perturbs them -------------

EN_SUBJECTS = [
    "The committee", "A young woman", "The old man", "Our neighbours", "The government",
    "Two children", "The driver", "My sister", "The teacher", "Several tourists",
]
EN_VERBS = [
    "discussed", "bought", "repaired", "found", "described", "visited", "painted",
    "rejected", "explained", "ordered",
]
EN_OBJECTS = [
    "the new proposal", "a red bicycle", "the broken window", "an old map of the city",
    "the results of the survey", "the museum near the river", "a small wooden boat",
    "the budget for next year", "the rules of the game", "three cups of coffee",
]
EN_TAILS = [
    "yesterday afternoon.", "before the meeting.", "in the market square.",
    "without saying a word.", "after a long discussion.", "on Monday, 3 March.",
    "for 1,250 euros.", "at 7.30 in the morning.", "with great care.", "despite the rain.",
]
DE_SENTENCES = [
    "Der Ausschuss hat den neuen Vorschlag gestern Nachmittag besprochen.",
    "Eine junge Frau kaufte vor dem Treffen ein rotes Fahrrad.",
    "Der alte Mann reparierte das kaputte Fenster mit großer Sorgfalt.",
    "Unsere Nachbarn fanden auf dem Marktplatz eine alte Karte der Stadt.",
    "Die Regierung lehnte den Haushalt für das nächste Jahr ab.",
    "Zwei Kinder besuchten trotz des Regens das Museum am Fluss.",
    "Der Fahrer bestellte um 7.30 Uhr morgens drei Tassen Kaffee.",
    "Meine Schwester malte ein kleines Holzboot für 1.250 Euro.",
    "Die Lehrerin erklärte die Spielregeln nach einer langen Diskussion.",
    "Mehrere Touristen beschrieben die Ergebnisse der Umfrage, ohne ein Wort zu sagen.",
]
FILLERS = ["really", "also", "then", "very", "quite", "indeed", "still", "just", "the", "a"]


def make_references(rng, n):
    refs = []
    for i in range(n):
        if i % 5 == 4:
            refs.append(DE_SENTENCES[rng.randrange(len(DE_SENTENCES))])
        else:
            refs.append(" ".join([
                rng.choice(EN_SUBJECTS), rng.choice(EN_VERBS), rng.choice(EN_OBJECTS),
                rng.choice(EN_TAILS),
            ]))
    return refs


def perturb(rng, sentence):
    """A plausible imperfect translation: drop, replace, swap or insert words."""
    words = sentence.split()
    for _ in range(rng.randint(0, 4)):
        op = rng.random()
        i = rng.randrange(len(words))
        if op < 0.3 and len(words) > 3:
            del words[i]
        elif op < 0.6:
            words[i] = rng.choice(FILLERS)
        elif op < 0.8 and i + 1 < len(words):
            words[i], words[i + 1] = words[i + 1], words[i]
        else:
            words.insert(i, rng.choice(FILLERS))
    return " ".join(words)


def system_case(seed, n):
    rng = random.Random(seed)
    refs = make_references(rng, n)
    hyps = [perturb(rng, r) for r in refs]
    return hyps, refs


# --- hand-written cases ---------------------------------------------------------------------

UNICODE_REFS = [
    "Die Bürger fordern größere Straßen für Fußgänger.",
    "L'élève a reçu « un prix » pour son travail — bravo !",
    "東京は日本の首都です。",
    "Das Café öffnet um 8 Uhr 🙂 und schließt spät.",
    "She said: ‘it’s fine’ – and left…",
    "Ça coûte 3,50 € ; très cher, n’est-ce pas ?",
    "Ελληνικά και русский текст в одной строке.",
]
UNICODE_HYPS = [
    "Die Bürger fordern grössere Strassen für Fussgänger.",
    "L'élève a reçu « un prix » pour son travail !",
    "東京は日本の首都だ。",
    "Das Cafe öffnet um 8 Uhr 🙂 und schliesst spät.",
    "She said: ‘it’s fine’ — and went away…",
    "Ça coûte 3,50 € ; trop cher, n’est-ce pas ?",
    "Греческий and русский текст в одной строке.",
]

TOKENIZATION_REFS = [
    "The price rose from 1,000.50 to 2,300.75 dollars.",
    "Pages 10-12 were missing, e.g. the U.S. section.",
    "He said &quot;no&quot; &amp; left &lt;quietly&gt;.",
    "Well-known state-of-the-art systems (see [3]) score 27.3%.",
    "Really?! Yes... absolutely; no doubt: it's done.",
    "Call 555-0199 or write to info@example.com / visit http://x.y/z.",
    "Trailing punctuation!!!",
    "",
]
TOKENIZATION_HYPS = [
    "The price rose from 1,000.50 to 2,300 dollars .",
    "Pages 10 - 12 were missing, e.g. the US section.",
    "He said \"no\" & left <quietly>.",
    "Well-known state of the art systems (see [3]) score 27.3 %.",
    "Really ?! Yes ... absolutely ; no doubt : it 's done .",
    "Call 555-0199 or write to info@example.com/visit http://x.y/z.",
    "Trailing punctuation!!",
    "an extra line against an empty reference",
]

# Strings for the 13a tokenizer unit tests (not written to text files, so anything goes).
TOKENIZER_INPUTS = [
    "Hello, world!",
    "1,000.50 and 2.5 and 3,5",
    "a.b,c . , .. ,,",
    "end.",
    "3-4 a-b 5- -6 x-y-z",
    "&quot;quoted&quot; &amp;amp; &lt;tag&gt; &apos;",
    "<skipped> text",
    "hyphen-\nated line\nbreak",
    "tabs\tand\u00a0nbsp\u2003em-space\u3000ideographic",
    "file\x1cseparator\x1dgroup",
    "{braces} [brackets] (parens) `tick` ~tilde^ |pipe| \\back\\",
    "it's a dog's life",
    "«Bonjour» — dit-il… «ça va?»",
    "Straße, Größe. Ärger!",
    "東京、日本。",
    "😀, 😀. 😀!",
    "U.S.A. 3.14. .5 5. a. .a",
    "  leading and trailing spaces  ",
    "",
    "x...y,,,z",
    "@user #tag $5 %20 +1 =2 *3 /4 :5 ;6 <7 >8 ?9",
    "٣,٤ ３.５ ²,³",
]


def score_case(name, hyps, ref_streams):
    bleu = BLEU()
    chrf = CHRF()
    b = bleu.corpus_score(hyps, ref_streams)
    c = chrf.corpus_score(hyps, ref_streams)
    bleu_sig = str(bleu.get_signature())
    chrf_sig = str(chrf.get_signature())
    (OUT / f"{name}.hyp").write_text("".join(h + "\n" for h in hyps), encoding="utf-8")
    for i, refs in enumerate(ref_streams):
        (OUT / f"{name}.ref{i}").write_text("".join(r + "\n" for r in refs), encoding="utf-8")
    return {
        "name": name,
        "lines": len(hyps),
        "nrefs": len(ref_streams),
        "bleu": {
            "score": b.score,
            "counts": list(b.counts),
            "totals": list(b.totals),
            "precisions": list(b.precisions),
            "bp": b.bp,
            "ratio": b.ratio,
            "sys_len": b.sys_len,
            "ref_len": b.ref_len,
            "signature": bleu_sig,
            "display": str(b),
            "line": b.format(signature=bleu_sig),
        },
        "chrf": {
            "score": c.score,
            "signature": chrf_sig,
            "display": str(c),
            "line": c.format(signature=chrf_sig),
        },
    }


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.iterdir():
        old.unlink()
    cases = []

    hyps, refs = system_case(seed=5, n=150)
    cases.append(score_case("system", hyps, [refs]))

    hyps, refs = system_case(seed=6, n=80)
    hyps = ["" if i % 7 == 3 else h for i, h in enumerate(hyps)]
    cases.append(score_case("empty_lines", hyps, [refs]))

    hyps, refs = system_case(seed=7, n=20)
    cases.append(score_case("all_empty", [""] * len(refs), [refs]))

    cases.append(score_case("unicode", UNICODE_HYPS, [UNICODE_REFS]))

    cases.append(score_case(
        "one_sentence",
        ["The cat sat quietly on the mat near the door."],
        [["The cat sat on the mat by the door."]],
    ))
    cases.append(score_case("one_word", ["a"], [["a"]]))

    hyps, refs = system_case(seed=8, n=40)
    cases.append(score_case("identical", refs, [refs]))

    cases.append(score_case("tokenization", TOKENIZATION_HYPS, [TOKENIZATION_REFS]))

    # Brevity penalty < 1: the system drops the second half of every other sentence.
    hyps, refs = system_case(seed=9, n=60)
    short = [" ".join(r.split()[: max(1, len(r.split()) // 2)]) if i % 2 == 0 else h
             for i, (h, r) in enumerate(zip(hyps, refs))]
    cases.append(score_case("brevity", short, [refs]))

    # Hypotheses longer than their references (ratio > 1).
    hyps, refs = system_case(seed=10, n=30)
    long = [h + " and then " + refs[(i + 1) % len(refs)] for i, h in enumerate(hyps)]
    cases.append(score_case("long_hyp", long, [refs]))

    # Two reference streams: closest reference length and clipped counts over both.
    rng = random.Random(11)
    hyps, refs = system_case(seed=11, n=50)
    refs2 = [perturb(rng, r) for r in refs]
    cases.append(score_case("multi_ref", hyps, [refs, refs2]))

    tokenized = [{"input": s, "output": Tokenizer13a()(s)} for s in TOKENIZER_INPUTS]

    meta = {
        "generator": "scripts/make_bleu_fixture.py",
        "sacrebleu_version": sacrebleu.__version__,
        "cases": cases,
    }
    (OUT / "cases.json").write_text(
        json.dumps(meta, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    (OUT / "tokenize_13a.json").write_text(
        json.dumps({"sacrebleu_version": sacrebleu.__version__, "cases": tokenized},
                   ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    for c in cases:
        print(f"{c['name']:>14}: {c['bleu']['line']}")
        print(f"{'':>14}  {c['chrf']['line']}")


if __name__ == "__main__":
    main()
