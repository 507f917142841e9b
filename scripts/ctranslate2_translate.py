"""Translate with a model that `rosetta export --format ctranslate2` wrote, in CTranslate2.

    python3 scripts/ctranslate2_translate.py EXPORT_DIR [--beam N] [--compute-type TYPE] [--target-lang CODE] < in > out

One sentence per line in, one translation per line out, as `rosetta translate` does: the
sentence is tokenized with the tokenizer.json exported beside the model (Hugging Face's
`tokenizers`), decoded by CTranslate2 (EOS appended to the source and the decoder started from
BOS by the exported config.json), and the output subwords are detokenized by the same
tokenizer. With --beam 1 (the default) this is greedy search, which must give Rosetta's own
greedy output (`rosetta translate --beam 1`). Beam search follows the rules of
`rosetta translate --length-norm power --alpha L --beam-stop count` for a --length-penalty L
other than 0 (at 0, those of `--beam-stop bound`), except at the length limit, where
CTranslate2 closes the open hypotheses without scoring an EOS.
A multilingual model's sources start with the target language's tag (`--target-lang de`:
the token `>>de<<`), as `rosetta translate --target-lang de` places it.
Needs `pip install ctranslate2 tokenizers`. An imported MarianMT model's export (its
`source.spm` and `vocab.json` beside `model.bin`) is tokenized with `transformers`'
MarianTokenizer instead (`pip install transformers sentencepiece`), the ids it gives mapped to
their tokens, and the output tokens back to ids and decoded by it.
"""

import argparse
import json
import os
import sys

import ctranslate2
from tokenizers import Tokenizer


class MarianSide:
    """A MarianTokenizer with the two calls this script makes of a `tokenizers` Tokenizer."""

    class Encoding:
        def __init__(self, tokens):
            self.tokens = tokens

    def __init__(self, model_dir):
        from transformers import MarianTokenizer

        self.tokenizer = MarianTokenizer.from_pretrained(model_dir)

    def encode(self, line, add_special_tokens=False):
        ids = self.tokenizer(line)["input_ids"][:-1]  # its </s>: CTranslate2 adds its own
        return self.Encoding(self.tokenizer.convert_ids_to_tokens(ids))

    def token_to_id(self, token):
        return self.tokenizer.convert_tokens_to_ids(token)

    def decode(self, ids, skip_special_tokens=True):
        return self.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="directory written by `rosetta export --format ctranslate2`")
    parser.add_argument("--beam", type=int, default=1, help="beam size (1: greedy)")
    parser.add_argument("--compute-type", default="float32", help="CTranslate2 compute type")
    parser.add_argument("--max-len-a", type=float, default=1.5)
    parser.add_argument("--max-len-b", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--target-lang", default=None,
                        help="a multilingual model's target language: its tag >>CODE<< starts every source")
    parser.add_argument("--length-penalty", type=float, default=1.0,
                        help="CTranslate2's length_penalty: Rosetta's --length-norm power --alpha")
    args = parser.parse_args()

    joint = os.path.join(args.model, "tokenizer.json")
    marian = os.path.exists(os.path.join(args.model, "source.spm"))
    if marian:
        source = target = MarianSide(args.model)
    elif os.path.exists(joint):
        source = target = Tokenizer.from_file(joint)
    else:
        source = Tokenizer.from_file(os.path.join(args.model, "tokenizer.source.json"))
        target = Tokenizer.from_file(os.path.join(args.model, "tokenizer.target.json"))
    translator = ctranslate2.Translator(
        args.model, device="cpu", compute_type=args.compute_type, intra_threads=args.threads
    )

    with open(os.path.join(args.model, "model.json")) as f:
        max_positions = json.load(f)["max_positions"]
    # Lines as `rosetta translate` reads them: split at "\n" only (a "\r" before it dropped);
    # a blank line gives a blank line; a source is cut to max_positions - 1 tokens (its EOS
    # takes the last position).
    text = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    cut = max(max_positions - 1, 1)
    prefix = [f">>{args.target_lang}<<"] if args.target_lang else []
    tokens = [
        (prefix + source.encode(line, add_special_tokens=False).tokens)[:cut] if line.strip() else []
        for line in lines
    ]
    outputs = [""] * len(lines)
    # Rosetta's length limit, per sentence: at most min(floor(a * s + b), max_positions - 1)
    # tokens before EOS, s counting the source's EOS; a hypothesis that reaches it is closed
    # there. CTranslate2 stops after `max_decoding_length` tokens without adding EOS, which
    # gives the same tokens. It takes one limit per call: sentences of one length go together.
    by_length = {}
    for i, t in enumerate(tokens):
        if t:
            by_length.setdefault(len(t), []).append(i)
    for length, work in sorted(by_length.items()):
        limit = min(int(args.max_len_a * (length + 1)) + args.max_len_b, max_positions - 1)
        results = translator.translate_batch(
            [tokens[i] for i in work],
            beam_size=args.beam,
            length_penalty=args.length_penalty,
            max_decoding_length=limit,
            min_decoding_length=0,
        )
        for i, result in zip(work, results):
            ids = [target.token_to_id(t) for t in result.hypotheses[0]]
            outputs[i] = target.decode([t for t in ids if t is not None], skip_special_tokens=True)
    for text in outputs:
        print(text.replace("\n", " ").replace("\r", " "))


if __name__ == "__main__":
    main()
