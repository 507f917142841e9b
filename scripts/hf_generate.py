#!/usr/bin/env python3
"""Translate lines with a Hugging Face MarianMT directory in `transformers` itself.

    python3 scripts/hf_generate.py MODEL_DIR [--beam N] [--target-lang XX] [--ids] < input > output

MODEL_DIR is what `rosetta export --format hf` (or `save_pretrained`) wrote. Each line is
generated alone (no padding), with the directory's `generation_config.json` and `--beam` if
given, and written decoded (`skip_special_tokens=True`), or with `--ids` as the generated ids
(without the decoder's start token) separated by spaces. A line break inside a decoded
translation becomes a space, so that each input line gives one output line (as `rosetta
translate` writes it). `AutoTokenizer` loads the tokenizer, so
a `MarianTokenizer` and a `tokenizer.json` (PreTrainedTokenizerFast) both work. `--target-lang
XX` starts each line with the tag `>>XX<<` and a space, as a multilingual Marian model (OPUS-MT's,
or a multilingual Rosetta model's export) expects.

Needs `pip install torch transformers sentencepiece` (tested with torch 2.15.0, transformers
5.23.0, sentencepiece 0.2.3).
"""

import argparse
import sys

import torch
from transformers import AutoTokenizer, MarianMTModel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--beam", type=int, default=None)
    parser.add_argument("--target-lang", default=None)
    parser.add_argument("--ids", action="store_true")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = MarianMTModel.from_pretrained(args.model).eval()
    # A PreTrainedTokenizerFast of a Rosetta tokenizer.json adds no EOS itself: the model's
    # source ends with one, as Rosetta frames it.
    eos = model.config.eos_token_id
    kwargs = {} if args.beam is None else {"num_beams": args.beam}
    prefix = ""
    if args.target_lang is not None:
        tag = f">>{args.target_lang}<<"
        if tag not in tokenizer.get_vocab():
            sys.exit(f"{args.model}: the tokenizer has no language tag {tag}")
        prefix = tag + " "
    with torch.inference_mode():
        for line in sys.stdin:
            text = prefix + line.rstrip("\n")
            ids = tokenizer(text, add_special_tokens=True)["input_ids"]
            if not ids or ids[-1] != eos:
                ids = ids + [eos]
            output = model.generate(
                input_ids=torch.tensor([ids]),
                attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                **kwargs,
            )[0].tolist()
            if args.ids:
                print(" ".join(str(i) for i in output[1:]))
            else:
                text = tokenizer.decode(output, skip_special_tokens=True)
                print(text.replace("\n", " ").replace("\r", " "))


if __name__ == "__main__":
    main()
