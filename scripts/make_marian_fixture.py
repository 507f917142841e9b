#!/usr/bin/env python3
"""Writes the Hugging Face MarianMT (OPUS-MT format) fixtures that the importer in `crates/convert` checks.

No machine here reaches a model hub, so every checkpoint is made locally, in exactly the format
`save_pretrained` writes for OPUS-MT: SentencePiece unigram models trained on data/numbers with
`sentencepiece.SentencePieceTrainer`, a `vocab.json` laid out as OPUS-MT's (`</s>` 0, `<unk>` 1, the
pieces, `<pad>` last), a `MarianConfig` with every key set explicitly (its defaults are not
OPUS-MT's), and a `generation_config.json` like OPUS-MT's.

Subcommands (all deterministic: fixed seeds, one torch thread):

  tiny (default)  A real, trained tiny en->fr MarianMT model (d_model 64, 2+2 layers, 4 heads, FFN 128,
                  swish), trained a few CPU minutes on the data/numbers pairs whose number is below
                  50,000 (so that fine-tuning on the other range has something to improve).
                  Writes crates/convert/tests/fixtures/marian/tiny/ (save_pretrained of the model and
                  the tokenizer) and crates/convert/tests/fixtures/marian/tiny-reference.json
                  (tokenizer pieces and ids, greedy and beam-4 outputs for all 500 test lines,
                  teacher-forced logits of 4 sentences, encoder output, valid BLEU per range).
  variants        Small random-weight models (d_model 16, 1+1 layers, 2 heads, FFN 32) covering the
                  checkpoint variants an importer meets (separate vocabularies, untied lm_head, an
                  old pytorch_model.bin with the tied aliases, no final_logits_bias, relu without
                  embedding scaling, gelu), each with a reference.json (teacher-forced logits of 2
                  inputs, tokenizer outputs of 5 sentences), under
                  crates/convert/tests/fixtures/marian/variants/<name>/. Their SentencePiece models
                  are smaller ones with `identity` normalisation (nmt_nfkc's charsmap is 240 KB a
                  file). Also two SentencePiece models the importer must refuse or handle (BPE;
                  unigram with byte_fallback and a small custom normalisation rule set) with their
                  own encodings, under crates/convert/tests/fixtures/marian/spm/.
  full DIR        Not committed (run at test/benchmark time): an untrained model with OPUS-MT's
                  full dimensions (d_model 512, 6+6 layers, 8 heads, FFN 2048, vocab 58,101) and the
                  tiny model's SentencePiece models with vocab.json padded by filler pieces, saved
                  into DIR with DIR/reference.json (teacher-forced logits of the first 3 positions
                  of 2 short inputs). Needs the tiny fixture to exist.
  all             tiny, then variants.

Pinned versions (the reference values depend on them):

  torch==2.15.0 transformers==5.23.0 sentencepiece==0.2.3   (plus safetensors, numpy, sacrebleu)

Run from the repository root (the fixtures are committed; CI does not need Python):

  python3 -m venv .venv
  .venv/bin/pip install torch==2.15.0 transformers==5.23.0 sentencepiece==0.2.3 safetensors sacrebleu
  nice -n 10 .venv/bin/python scripts/make_marian_fixture.py tiny        # ~4-5 min on a busy 2-core box
  nice -n 10 .venv/bin/python scripts/make_marian_fixture.py variants    # ~15 s, imports included
  nice -n 10 .venv/bin/python scripts/make_marian_fixture.py full /tmp/marian-full   # ~16 s, 300 MB

`full` reads the committed tiny/ (its source.spm and target.spm), so run it from a checkout that has
the fixtures. Every subcommand reloads what it wrote with `MarianMTModel.from_pretrained` and
`MarianTokenizer.from_pretrained` and checks the logits and token ids against its reference.
"""

import argparse
import json
import math
import os
import pathlib
import random
import shutil
import sys
import tempfile
import time
import warnings

import numpy as np
import sentencepiece as spm
import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore", message="Recommended: pip install sacremoses.")

import transformers  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402
from transformers import GenerationConfig, MarianConfig, MarianMTModel, MarianTokenizer  # noqa: E402

transformers.logging.set_verbosity_error()

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "data/numbers"
FIXTURES = ROOT / "crates/convert/tests/fixtures/marian"
TINY_DIR = FIXTURES / "tiny"
TINY_REFERENCE = FIXTURES / "tiny-reference.json"
VARIANTS_DIR = FIXTURES / "variants"
SPM_DIR = FIXTURES / "spm"

# One thread: the reference values then do not depend on the machine's core count, and on a busy
# 2-core machine OpenMP's 2-thread kernels spin and run 5-10x slower than one thread.
THREADS = 1
SPLIT = 50_000  # the tiny model is trained on numbers below this, fine-tuning tests use the rest
FIXTURE_BUDGET = 2 * 1024 * 1024

# Tiny model training recipe (fixed: the number of steps, not a time budget, ends training).
TINY_SEED = 1
TINY_SPM_VOCAB = 150  # an upper bound: unigram keeps fewer pieces on this data (hard_vocab_limit off)
TINY_BATCH = 64
TINY_STEPS = 3000
TINY_PEAK_LR = 3e-3
TINY_WARMUP = 400
LABEL_SMOOTHING = 0.1
FINAL_LOGITS_BIAS_STD = 0.05  # set after training, before every reference value is computed

# Sentences for the teacher-forced logits (different lengths; the last one is over 20 tokens).
LOGITS_SOURCES = [
    "forty-two",
    "seven thousand eight hundred sixty-six",
    "thirty-seven thousand four hundred seventy-nine",
    "seven hundred seventy-seven thousand seven hundred seventy-seven and forty-four thousand four"
    " hundred forty-four",
]

# Extra tokenizer cases (characters outside the training text, NFKC, whitespace, empty input).
EXTRA_TOKENIZER_CASES = [
    "",
    "  forty   two  ",
    "Forty-Two!",
    "ｆｏｒｔｙ－ｔｗｏ",
    "twenty\tthree\nthousand",
    "cinq cent €12",
    "ﬁve",
    ">>fra<< one",
]

VARIANT_SOURCES = ["forty-two", "thirty-seven thousand four hundred seventy-nine"]
VARIANT_TARGETS = ["quarante-deux", "trente-sept mille quatre cent soixante-dix-neuf"]
VARIANT_TOKENIZER_SENTENCES = [
    "one",
    "nine hundred ninety-nine thousand nine hundred ninety-nine",
    "Forty-Two!",
    "  twenty   one  ",
    "ｆｉｖｅ ﬁve",
]


# ----------------------------------------------------------------------------------------------
# Shared helpers


def setup():
    torch.set_num_threads(THREADS)


def versions():
    return {
        "torch": torch.__version__.split("+")[0],
        "transformers": transformers.__version__,
        "sentencepiece": spm.__version__,
        "python": sys.version.split()[0],
    }


UNITS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
        " fifteen sixteen seventeen eighteen nineteen".split()
    )
}
TENS = {w: 10 * (i + 2) for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())}


def english_number(text):
    """The value of English number words as data/numbers writes them ("fifty-six thousand ...")."""
    total, current = 0, 0
    for word in text.split():
        if word == "thousand":
            total += current * 1000
            current = 0
        elif word == "hundred":
            current *= 100
        else:
            for part in word.split("-"):
                if part in UNITS:
                    current += UNITS[part]
                elif part in TENS:
                    current += TENS[part]
                else:
                    raise ValueError(f"not a number word: {part!r} in {text!r}")
    return total + current


def read_lines(path):
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def read_pairs(split):
    src = read_lines(DATA / f"{split}.en")
    tgt = read_lines(DATA / f"{split}.fr")
    assert len(src) == len(tgt)
    return src, tgt


def train_spm(input_path, prefix, vocab_size, **extra):
    """Trains a SentencePiece model deterministically (one thread) and returns its path.

    The model stores its trainer's `input` and `model_prefix`; training from a copy of the input
    inside the work directory, with relative paths, keeps machine paths out of the file's bytes.
    """
    prefix = pathlib.Path(prefix)
    workdir = prefix.parent
    local_input = workdir / input_path.name
    if not local_input.exists():
        shutil.copy(input_path, local_input)
    args = dict(
        input=local_input.name,
        model_prefix=prefix.name,
        vocab_size=vocab_size,
        model_type="unigram",
        hard_vocab_limit=False,
        num_threads=1,
        minloglevel=2,
    )
    args.update(extra)
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        spm.SentencePieceTrainer.train(**args)
    finally:
        os.chdir(cwd)
    return workdir / f"{prefix.name}.model"


def spm_pieces(path):
    """Normal and user-defined pieces of a SentencePiece model, in its id order (no control/unk)."""
    sp = spm.SentencePieceProcessor(model_file=str(path))
    return [
        sp.id_to_piece(i)
        for i in range(sp.get_piece_size())
        if not (sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i))
    ]


def opus_vocab(*piece_lists, extra=()):
    """OPUS-MT's layout: `</s>` 0, `<unk>` 1, the union of the pieces (first seen first), `<pad>` last."""
    vocab = {"</s>": 0, "<unk>": 1}
    for pieces in piece_lists:
        for piece in pieces:
            if piece not in vocab:
                vocab[piece] = len(vocab)
    for piece in extra:
        assert piece not in vocab
        vocab[piece] = len(vocab)
    vocab["<pad>"] = len(vocab)
    return vocab


def write_json_file(path, obj):
    path.write_text(json.dumps(obj, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def marian_config(**kw):
    """A MarianConfig with every key set explicitly (MarianConfig's defaults are not OPUS-MT's)."""
    keys = dict(
        vocab_size=None,
        decoder_vocab_size=None,
        max_position_embeddings=512,
        encoder_layers=None,
        encoder_ffn_dim=None,
        encoder_attention_heads=None,
        decoder_layers=None,
        decoder_ffn_dim=None,
        decoder_attention_heads=None,
        encoder_layerdrop=0.0,
        decoder_layerdrop=0.0,
        use_cache=True,
        is_encoder_decoder=True,
        activation_function="swish",
        d_model=None,
        dropout=0.1,
        attention_dropout=0.0,
        activation_dropout=0.0,
        init_std=0.02,
        decoder_start_token_id=None,
        scale_embedding=True,
        pad_token_id=None,
        eos_token_id=0,
        bos_token_id=0,  # as OPUS-MT's config.json (unused by the encoder-decoder)
        forced_eos_token_id=0,
        share_encoder_decoder_embeddings=True,
        is_decoder=False,
        tie_word_embeddings=True,
        architectures=["MarianMTModel"],
    )
    unknown = set(kw) - set(keys)
    assert not unknown, unknown
    keys.update(kw)
    missing = [k for k, v in keys.items() if v is None]
    assert not missing, missing
    return MarianConfig(**keys)


def opus_generation_config(config, target_pad_id=None):
    """generation_config.json as OPUS-MT's (early_stopping left unset: generate's default, False)."""
    pad = config.pad_token_id
    start = config.decoder_start_token_id
    return GenerationConfig(
        bad_words_ids=[[start if target_pad_id is None else target_pad_id]],
        bos_token_id=config.bos_token_id,
        decoder_start_token_id=start,
        eos_token_id=config.eos_token_id,
        forced_eos_token_id=config.forced_eos_token_id,
        max_length=512,
        num_beams=4,
        pad_token_id=pad,
        renormalize_logits=False,
        length_penalty=1.0,
    )


def f32_list(tensor):
    """A tensor's float32 values as nested lists of plain JSON numbers, each the shortest decimal
    that reads back to the same float32."""
    a = tensor.detach().to(torch.float32).cpu().numpy()
    flat = [float(str(v)) for v in a.ravel()]
    out = np.array(flat, dtype=object).reshape(a.shape)
    return out.tolist()


def dump_reference(path, obj):
    """Compact JSON: one line per top-level key, and one line per element of top-level lists."""
    parts = []
    for key, value in obj.items():
        k = json.dumps(key)
        if isinstance(value, list) and value and isinstance(value[0], dict):
            items = ",\n".join("  " + json.dumps(v, ensure_ascii=False, separators=(",", ":")) for v in value)
            parts.append(f" {k}:[\n{items}\n ]")
        else:
            parts.append(f" {k}:" + json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    path.write_text("{\n" + ",\n".join(parts) + "\n}\n", encoding="utf-8")


@torch.no_grad()
def teacher_forced_logits(model, input_ids, decoder_input_ids):
    model.eval()
    out = model(
        input_ids=torch.tensor([input_ids]),
        attention_mask=torch.ones(1, len(input_ids), dtype=torch.long),
        decoder_input_ids=torch.tensor([decoder_input_ids]),
    )
    return out.logits[0].to(torch.float32)


def source_ids(tok, text):
    return tok(text)["input_ids"]


def tokenizer_case(tok, text):
    enc = tok(text)
    return {"text": text, "pieces": tok.tokenize(text), "input_ids": enc["input_ids"]}


def target_case(tok, text):
    """The target side: pieces of target.spm, ids through the target vocabulary, and the decoding."""
    tok._switch_to_target_mode()
    try:
        pieces = tok.tokenize(text)
    finally:
        tok._switch_to_input_mode()
    ids = tok(text_target=text)["input_ids"]
    return {"target_pieces": pieces, "target_ids": ids, "target_decoded": tok.decode(ids, skip_special_tokens=True)}


def make_readable(path):
    """save_pretrained writes model.safetensors with mode 0600; make the fixture files 0644."""
    for p in pathlib.Path(path).rglob("*"):
        if p.is_file():
            p.chmod(0o644)


def dir_size(path):
    return sum(p.stat().st_size for p in pathlib.Path(path).rglob("*") if p.is_file())


def check_reload(directory, cases, logits_key="logits", tol=1e-5):
    """Reloads a saved directory with transformers and compares teacher-forced logits."""
    model = MarianMTModel.from_pretrained(directory)
    model.eval()
    tok = MarianTokenizer.from_pretrained(directory)
    worst = 0.0
    for case in cases:
        got = teacher_forced_logits(model, case["input_ids"], case["decoder_input_ids"])
        want = torch.tensor(case[logits_key], dtype=torch.float32)
        got = got[: want.shape[0]]
        worst = max(worst, (got - want).abs().max().item())
        if "source" in case:
            assert tok(case["source"])["input_ids"] == case["input_ids"], case["source"]
    assert worst <= tol, f"{directory}: reloaded logits differ by {worst}"
    return worst


# ----------------------------------------------------------------------------------------------
# tiny


def make_tiny_tokenizer(workdir):
    src_spm = train_spm(DATA / "train.en", workdir / "source", TINY_SPM_VOCAB)
    tgt_spm = train_spm(DATA / "train.fr", workdir / "target", TINY_SPM_VOCAB)
    shutil.copy(src_spm, workdir / "source.spm")
    shutil.copy(tgt_spm, workdir / "target.spm")
    vocab = opus_vocab(spm_pieces(src_spm), spm_pieces(tgt_spm))
    write_json_file(workdir / "vocab.json", vocab)
    tok = MarianTokenizer(
        source_spm=str(workdir / "source.spm"),
        target_spm=str(workdir / "target.spm"),
        vocab=str(workdir / "vocab.json"),
        source_lang="en",
        target_lang="fr",
    )
    return tok, vocab


def tiny_config(vocab):
    pad = vocab["<pad>"]
    return marian_config(
        vocab_size=len(vocab),
        decoder_vocab_size=len(vocab),
        d_model=64,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        activation_function="swish",
        pad_token_id=pad,
        decoder_start_token_id=pad,
    )


def pad_batch(seqs, value):
    width = max(len(s) for s in seqs)
    return torch.tensor([s + [value] * (width - len(s)) for s in seqs])


def train_tiny(model, tok, src, tgt, log):
    pad = model.config.pad_token_id
    start = model.config.decoder_start_token_id
    src_ids = [tok(s)["input_ids"] for s in src]
    tgt_ids = [tok(text_target=t)["input_ids"] for t in tgt]
    n = len(src_ids)
    gen = torch.Generator().manual_seed(TINY_SEED)
    opt = torch.optim.Adam(model.parameters(), lr=TINY_PEAK_LR, betas=(0.9, 0.98), eps=1e-9)

    def lr_at(step):  # linear warm-up, then inverse square root
        return TINY_PEAK_LR * min(step / TINY_WARMUP, math.sqrt(TINY_WARMUP / step))

    model.set_attn_implementation("eager")  # faster than sdpa for these tiny shapes on CPU
    model.train()
    order, cursor = torch.randperm(n, generator=gen).tolist(), 0
    t0 = time.time()
    running = 0.0
    for step in range(1, TINY_STEPS + 1):
        if cursor + TINY_BATCH > n:
            order, cursor = torch.randperm(n, generator=gen).tolist(), 0
        idx = order[cursor : cursor + TINY_BATCH]
        cursor += TINY_BATCH
        input_ids = pad_batch([src_ids[i] for i in idx], pad)
        labels = pad_batch([tgt_ids[i] for i in idx], -100)
        decoder_input_ids = torch.cat([torch.full((len(idx), 1), start), labels[:, :-1]], dim=1)
        decoder_input_ids = decoder_input_ids.masked_fill(decoder_input_ids == -100, pad)
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        logits = model(
            input_ids=input_ids,
            attention_mask=(input_ids != pad).long(),
            decoder_input_ids=decoder_input_ids,
        ).logits
        loss = F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]),
            labels.reshape(-1),
            ignore_index=-100,
            label_smoothing=LABEL_SMOOTHING,
        )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running += loss.item()
        if step % 250 == 0:
            log(f"  step {step}/{TINY_STEPS} loss {running / 250:.4f} ({time.time() - t0:.0f} s)")
            running = 0.0
    model.set_attn_implementation("sdpa")  # transformers' default, as from_pretrained loads it
    model.eval()
    return time.time() - t0


@torch.no_grad()
def generate_one(model, input_ids, **kwargs):
    out = model.generate(
        input_ids=torch.tensor([input_ids]),
        attention_mask=torch.ones(1, len(input_ids), dtype=torch.long),
        **kwargs,
    )
    return out[0].tolist()


GREEDY_ARGS = {"num_beams": 1, "do_sample": False}
BEAM_ARGS = {"num_beams": 4, "do_sample": False}


def cmd_tiny(log):
    setup()
    t_start = time.time()
    torch.manual_seed(TINY_SEED)
    random.seed(TINY_SEED)
    np.random.seed(TINY_SEED)

    train_src, train_tgt = read_pairs("train")
    keep = [i for i, s in enumerate(train_src) if english_number(s) < SPLIT]
    log(f"tiny: {len(keep)} of {len(train_src)} training pairs have a number below {SPLIT}")

    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        tok, vocab = make_tiny_tokenizer(tmp)
        config = tiny_config(vocab)
        torch.manual_seed(TINY_SEED)
        model = MarianMTModel(config)
        model.generation_config = opus_generation_config(config)
        log(f"tiny: vocab {len(vocab)}, {sum(p.numel() for p in model.parameters())} parameters")
        train_seconds = train_tiny(model, tok, [train_src[i] for i in keep], [train_tgt[i] for i in keep], log)
        log(f"tiny: trained {TINY_STEPS} steps in {train_seconds:.0f} s")

        # final_logits_bias is a buffer that training leaves at zero: give it small seeded values
        # so that an importer that drops it fails; every reference value below is computed after.
        g = torch.Generator().manual_seed(TINY_SEED + 100)
        with torch.no_grad():
            model.final_logits_bias.copy_(
                torch.randn(model.final_logits_bias.shape, generator=g) * FINAL_LOGITS_BIAS_STD
            )
        assert model.final_logits_bias.abs().sum() > 0
        model.eval()

        if TINY_DIR.exists():
            shutil.rmtree(TINY_DIR)
        TINY_DIR.mkdir(parents=True)
        model.save_pretrained(TINY_DIR)
        tok.save_pretrained(TINY_DIR)
        make_readable(TINY_DIR)

    # Everything below runs on the reloaded directory: what the importer will read.
    model = MarianMTModel.from_pretrained(TINY_DIR)
    model.eval()
    tok = MarianTokenizer.from_pretrained(TINY_DIR)
    assert model.final_logits_bias.abs().sum() > 0, "final_logits_bias did not survive save/load"
    saved_keys = sorted(load_file(str(TINY_DIR / "model.safetensors")).keys())

    test_src, test_tgt = read_pairs("test")
    sentences = []
    counts = {"below": [0, 0], "at_or_above": [0, 0]}
    beam_counts = {"below": [0, 0], "at_or_above": [0, 0]}
    t_gen = time.time()
    for s, r in zip(test_src, test_tgt):
        value = english_number(s)
        ids = source_ids(tok, s)
        greedy = generate_one(model, ids, **GREEDY_ARGS)
        beam = generate_one(model, ids, **BEAM_ARGS)
        greedy_text = tok.decode(greedy, skip_special_tokens=True)
        beam_text = tok.decode(beam, skip_special_tokens=True)
        side = "below" if value < SPLIT else "at_or_above"
        counts[side][0] += greedy_text == r
        counts[side][1] += 1
        beam_counts[side][0] += beam_text == r
        beam_counts[side][1] += 1
        sentences.append(
            {
                "source": s,
                "reference": r,
                "number": value,
                "pieces": tok.tokenize(s),
                "input_ids": ids,
                "greedy_ids": greedy,
                "greedy_text": greedy_text,
                "beam_ids": beam,
                "beam_text": beam_text,
            }
        )
    log(f"tiny: generated test outputs in {time.time() - t_gen:.0f} s")

    logits_cases = []
    for s in LOGITS_SOURCES:
        ids = source_ids(tok, s)
        greedy = generate_one(model, ids, **GREEDY_ARGS)
        logits = teacher_forced_logits(model, ids, greedy)
        logits_cases.append(
            {
                "source": s,
                "pieces": tok.tokenize(s),
                "input_ids": ids,
                "decoder_input_ids": greedy,
                "greedy_text": tok.decode(greedy, skip_special_tokens=True),
                "shape": list(logits.shape),
                "logits": f32_list(logits),
            }
        )
    first = logits_cases[0]
    with torch.no_grad():
        enc = model.get_encoder()(
            input_ids=torch.tensor([first["input_ids"]]),
            attention_mask=torch.ones(1, len(first["input_ids"]), dtype=torch.long),
        ).last_hidden_state[0]

    import sacrebleu

    valid_src, valid_tgt = read_pairs("valid")
    bleu = {}
    for name, pick in (("below_50000", lambda v: v < SPLIT), ("at_or_above_50000", lambda v: v >= SPLIT)):
        idx = [i for i, s in enumerate(valid_src) if pick(english_number(s))]
        hyps = [
            tok.decode(generate_one(model, source_ids(tok, valid_src[i]), **GREEDY_ARGS), skip_special_tokens=True)
            for i in idx
        ]
        refs = [valid_tgt[i] for i in idx]
        metric = sacrebleu.BLEU()
        b = metric.corpus_score(hyps, [refs])
        bleu[name] = {
            "lines": len(idx),
            "bleu": round(b.score, 2),
            "exact": sum(h == r for h, r in zip(hyps, refs)),
            "signature": str(metric.get_signature()),
        }
        log(f"tiny: valid {name}: {len(idx)} lines, greedy BLEU {b.score:.2f}, exact {bleu[name]['exact']}")

    extra = [dict(tokenizer_case(tok, t), **target_case(tok, t)) for t in EXTRA_TOKENIZER_CASES]

    gen_config = json.loads((TINY_DIR / "generation_config.json").read_text())
    reference = {
        "generator": "scripts/make_marian_fixture.py tiny",
        "versions": versions(),
        "training": {
            "pairs": "data/numbers train pairs whose number is below 50000 (parsed from the English words)",
            "range": {"min": 0, "max_exclusive": SPLIT},
            "pairs_used": len(keep),
            "pairs_total": len(train_src),
            "seed": TINY_SEED,
            "steps": TINY_STEPS,
            "batch_sentences": TINY_BATCH,
            "optimizer": "Adam(betas=(0.9, 0.98), eps=1e-9)",
            "schedule": f"linear warm-up {TINY_WARMUP} steps to {TINY_PEAK_LR}, then inverse square root",
            "label_smoothing": LABEL_SMOOTHING,
            "loss": "teacher forcing, cross entropy over non-pad target tokens (EOS included)",
            "threads": THREADS,
        },
        "final_logits_bias": {
            "nonzero": True,
            "how": f"set after training to seeded normal values (std {FINAL_LOGITS_BIAS_STD})",
            "references_computed_after": True,
        },
        "safetensors_keys": saved_keys,
        "generate": {
            "call": "model.generate(input_ids=[[ids]], attention_mask=ones, **args), one sentence at a time",
            "greedy_args": GREEDY_ARGS,
            "beam_args": BEAM_ARGS,
            "generation_config": gen_config,
            "decode": "tok.decode(ids, skip_special_tokens=True)",
        },
        "test_exact_matches": {
            "greedy": {k: {"exact": v[0], "lines": v[1]} for k, v in counts.items()},
            "beam": {k: {"exact": v[0], "lines": v[1]} for k, v in beam_counts.items()},
        },
        "valid_bleu_greedy": bleu,
        "encoder_output": {
            "source": first["source"],
            "input_ids": first["input_ids"],
            "shape": list(enc.shape),
            "last_hidden_state": f32_list(enc),
        },
        "logits": logits_cases,
        "tokenizer_extra": extra,
        "test": sentences,
    }
    dump_reference(TINY_REFERENCE, reference)

    worst = check_reload(TINY_DIR, logits_cases)
    log(f"tiny: reload check: max |logit diff| {worst:.2e}")
    log(f"tiny: greedy exact {counts}, beam exact {beam_counts}")
    log(f"tiny: {TINY_DIR} {dir_size(TINY_DIR)} bytes, {TINY_REFERENCE.name} {TINY_REFERENCE.stat().st_size} bytes")
    log(f"tiny: done in {time.time() - t_start:.0f} s")


# ----------------------------------------------------------------------------------------------
# variants


VARIANT_SEED = 7


def randomize(model, seed):
    """Seeded random values of a useful size for every parameter and final_logits_bias.

    Unlike transformers' own initialisation (std 0.02, zero biases, unit LayerNorms, zero pad
    row), every value here matters to the logits, the `<pad>` (= decoder start) row included.
    """
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("embed_positions.weight"):
                continue
            if "layer_norm" in name:
                base = 1.0 if name.endswith(".weight") else 0.0
                p.copy_(base + 0.2 * torch.randn(p.shape, generator=g))
            elif name.endswith(".bias"):
                p.copy_(0.2 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name or "shared" in name or name == "lm_head.weight":
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[1]))
        model.final_logits_bias.copy_(0.5 * torch.randn(model.final_logits_bias.shape, generator=g))
        if model.config.share_encoder_decoder_embeddings:
            # With tie_word_embeddings=False, transformers 5 ties nothing, not even the encoder and
            # decoder embeddings to model.shared (4.x shared them structurally): give all three the
            # same values, as a real checkpoint with shared embeddings and an untied lm_head has.
            shared = model.model.shared.weight
            for emb in (model.model.encoder.embed_tokens.weight, model.model.decoder.embed_tokens.weight):
                if emb is not shared:
                    emb.copy_(shared)
    model.eval()


def variant_spms(workdir):
    """Small SentencePiece models for the variants (identity normalisation: no 240 KB charsmap)."""
    common = dict(normalization_rule_name="identity")
    src = train_spm(DATA / "train.en", workdir / "vsrc", 40, **common)
    tgt = train_spm(DATA / "train.fr", workdir / "vtgt", 60, **common)
    return src, tgt


def variant_config(vocab_size, pad, decoder_vocab_size=None, decoder_start=None, **kw):
    base = dict(
        vocab_size=vocab_size,
        decoder_vocab_size=decoder_vocab_size or vocab_size,
        d_model=16,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        pad_token_id=pad,
        decoder_start_token_id=pad if decoder_start is None else decoder_start,
    )
    base.update(kw)
    return marian_config(**base)


def make_variant(name, log, tmp, src_spm, tgt_spm, *, separate=False, config_kw=None, save="safetensors"):
    out = VARIANTS_DIR / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    work = tmp / name
    work.mkdir()
    shutil.copy(src_spm, work / "source.spm")
    shutil.copy(tgt_spm, work / "target.spm")
    tok_kw = {}
    if separate:
        src_vocab = opus_vocab(spm_pieces(src_spm))
        tgt_vocab = opus_vocab(spm_pieces(tgt_spm))
        assert len(tgt_vocab) > len(src_vocab)  # the source pad id must be a valid decoder row
        write_json_file(work / "vocab.json", src_vocab)
        write_json_file(work / "target_vocab.json", tgt_vocab)
        tok_kw = dict(target_vocab_file=str(work / "target_vocab.json"), separate_vocabs=True)
        config = variant_config(
            len(src_vocab),
            src_vocab["<pad>"],
            decoder_vocab_size=len(tgt_vocab),
            decoder_start=tgt_vocab["<pad>"],
            share_encoder_decoder_embeddings=False,
            tie_word_embeddings=True,
            **(config_kw or {}),
        )
        target_pad = tgt_vocab["<pad>"]
    else:
        vocab = opus_vocab(spm_pieces(src_spm), spm_pieces(tgt_spm))
        write_json_file(work / "vocab.json", vocab)
        config = variant_config(len(vocab), vocab["<pad>"], **(config_kw or {}))
        target_pad = None
    tok = MarianTokenizer(
        source_spm=str(work / "source.spm"),
        target_spm=str(work / "target.spm"),
        vocab=str(work / "vocab.json"),
        source_lang="en",
        target_lang="fr",
        **tok_kw,
    )
    torch.manual_seed(VARIANT_SEED)
    model = MarianMTModel(config)
    model.generation_config = opus_generation_config(config, target_pad_id=target_pad)
    randomize(model, VARIANT_SEED + sum(map(ord, name)))
    if save == "no-bias":
        with torch.no_grad():
            model.final_logits_bias.zero_()

    start = config.decoder_start_token_id
    cases = []
    for s, t in zip(VARIANT_SOURCES, VARIANT_TARGETS):
        ids = tok(s)["input_ids"]
        dec = [start] + tok(text_target=t)["input_ids"]
        logits = teacher_forced_logits(model, ids, dec)
        cases.append(
            {
                "source": s,
                "target": t,
                "input_ids": ids,
                "decoder_input_ids": dec,
                "shape": list(logits.shape),
                "logits": f32_list(logits),
            }
        )

    model.save_pretrained(out)
    tok.save_pretrained(out)
    notes = []
    if save == "bin":
        # What old save_pretrained wrote: torch.save of the full state dict, the tied aliases and
        # the sinusoidal tables included (tied tensors share one storage in the pickle).
        (out / "model.safetensors").unlink()
        state = model.state_dict()
        for key in (
            "model.shared.weight",
            "model.encoder.embed_tokens.weight",
            "model.decoder.embed_tokens.weight",
            "lm_head.weight",
            "model.encoder.embed_positions.weight",
            "model.decoder.embed_positions.weight",
            "final_logits_bias",
        ):
            assert key in state, key
        torch.save(state, out / "pytorch_model.bin")
        notes.append("pytorch_model.bin = torch.save(model.state_dict()); no model.safetensors")
        keys = sorted(state.keys())
    elif save == "no-bias":
        path = out / "model.safetensors"
        tensors = load_file(str(path))
        assert "final_logits_bias" in tensors
        del tensors["final_logits_bias"]
        save_file(tensors, str(path), metadata={"format": "pt"})
        notes.append("model.safetensors rewritten without final_logits_bias; logits are with a zero bias")
        keys = sorted(tensors.keys())
    else:
        keys = sorted(load_file(str(out / "model.safetensors")).keys())

    tokenizer_cases = []
    for s in VARIANT_TOKENIZER_SENTENCES:
        case = tokenizer_case(tok, s)
        case.update(target_case(tok, s))
        tokenizer_cases.append(case)

    # transformers must read the directory back to the same logits.
    load_kw = {"use_safetensors": False} if save == "bin" else {}
    reloaded = MarianMTModel.from_pretrained(out, **load_kw)
    reloaded.eval()
    worst = 0.0
    for case in cases:
        got = teacher_forced_logits(reloaded, case["input_ids"], case["decoder_input_ids"])
        worst = max(worst, (got - torch.tensor(case["logits"])).abs().max().item())
    assert worst <= 1e-5, f"{name}: reloaded logits differ by {worst}"
    if save == "no-bias":
        assert reloaded.final_logits_bias.abs().sum() == 0
    tok2 = MarianTokenizer.from_pretrained(out)
    for case in tokenizer_cases:
        assert tok2(case["text"])["input_ids"] == case["input_ids"]
        assert tok2(text_target=case["text"])["input_ids"] == case["target_ids"]

    reference = {
        "generator": f"scripts/make_marian_fixture.py variants ({name})",
        "versions": versions(),
        "variant": name,
        "notes": notes,
        "weights": "random (seeded): not trained; pad (= decoder start) row non-zero; final_logits_bias "
        + ("absent (zero)" if save == "no-bias" else "non-zero"),
        "file_keys": keys,
        "config": {
            k: getattr(config, k)
            for k in (
                "vocab_size",
                "decoder_vocab_size",
                "d_model",
                "activation_function",
                "scale_embedding",
                "share_encoder_decoder_embeddings",
                "tie_word_embeddings",
                "pad_token_id",
                "decoder_start_token_id",
                "eos_token_id",
            )
        },
        "reload_max_abs_diff": worst,
        "tokenizer": tokenizer_cases,
        "logits": cases,
    }
    dump_reference(out / "reference.json", reference)
    make_readable(out)
    log(f"variants: {name}: {dir_size(out)} bytes, keys {len(keys)}, reload diff {worst:.1e}")


def make_spm_fixtures(log, tmp):
    if SPM_DIR.exists():
        shutil.rmtree(SPM_DIR)
    SPM_DIR.mkdir(parents=True)
    bpe = train_spm(DATA / "train.en", tmp / "bpe", 60, model_type="bpe", normalization_rule_name="identity")
    # byte_fallback needs the 256 byte pieces in the vocabulary; a tiny custom normaliser (a few
    # NFKC rules, so a small precompiled charsmap) keeps the file small.
    rules = tmp / "rules.tsv"
    rules.write_text(
        "".join(
            f"{' '.join(f'{ord(a):X}' for a in src)}\t{' '.join(f'{ord(b):X}' for b in dst)}\n"
            for src, dst in [("\uff41", "a"), ("\uff45", "e"), ("\ufb01", "fi"), ("\u00a0", " "), ("\u3000", " ")]
        ),
        encoding="utf-8",
    )
    bf = train_spm(
        DATA / "train.en", tmp / "bf", 300, byte_fallback=True, normalization_rule_tsv=rules.name
    )
    shutil.copy(bpe, SPM_DIR / "bpe.spm")
    shutil.copy(bf, SPM_DIR / "byte-fallback.spm")
    sentences = ["forty-two", "Forty-Two!", "ｆｉｖｅ ﬁve", "cinq € 12", "  nine   hundred "]
    models = {}
    for name in ("bpe.spm", "byte-fallback.spm"):
        sp = spm.SentencePieceProcessor(model_file=str(SPM_DIR / name))
        from sentencepiece import sentencepiece_model_pb2 as pb

        proto = pb.ModelProto()
        proto.ParseFromString((SPM_DIR / name).read_bytes())
        models[name] = {
            "model_type": pb.TrainerSpec.ModelType.Name(proto.trainer_spec.model_type),
            "byte_fallback": proto.trainer_spec.byte_fallback,
            "normalizer": proto.normalizer_spec.name,
            "precompiled_charsmap_bytes": len(proto.normalizer_spec.precompiled_charsmap),
            "pieces": sp.get_piece_size(),
            "cases": [
                {
                    "text": s,
                    "pieces": sp.encode(s, out_type=str),
                    "spm_ids": sp.encode(s),
                    "decoded": sp.decode(sp.encode(s)),
                }
                for s in sentences
            ],
        }
    dump_reference(
        SPM_DIR / "reference.json",
        {
            "generator": "scripts/make_marian_fixture.py variants (spm)",
            "versions": versions(),
            "note": "SentencePiece's own encode/decode (spm ids, not a Marian vocab.json)",
            "models": models,
        },
    )
    log(f"variants: spm: {dir_size(SPM_DIR)} bytes")


def cmd_variants(log):
    setup()
    t_start = time.time()
    if VARIANTS_DIR.exists():
        shutil.rmtree(VARIANTS_DIR)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        src_spm, tgt_spm = variant_spms(tmp)
        make_variant("separate-vocabs", log, tmp, src_spm, tgt_spm, separate=True)
        make_variant("untied-lm-head", log, tmp, src_spm, tgt_spm, config_kw=dict(tie_word_embeddings=False))
        make_variant("old-aliases", log, tmp, src_spm, tgt_spm, save="bin")
        make_variant("no-logits-bias", log, tmp, src_spm, tgt_spm, save="no-bias")
        make_variant(
            "relu-noscale", log, tmp, src_spm, tgt_spm, config_kw=dict(activation_function="relu", scale_embedding=False)
        )
        make_variant("gelu", log, tmp, src_spm, tgt_spm, config_kw=dict(activation_function="gelu"))
        make_spm_fixtures(log, tmp)
    total = dir_size(FIXTURES)
    log(f"variants: done in {time.time() - t_start:.0f} s; fixtures/marian total {total} bytes")
    if total > FIXTURE_BUDGET:
        log(f"WARNING: fixtures/marian is over the {FIXTURE_BUDGET}-byte budget")


# ----------------------------------------------------------------------------------------------
# full


FULL_VOCAB = 58_101
FULL_SEED = 3
FULL_SOURCES = ["forty-two", "seven thousand eight hundred sixty-six"]
FULL_TARGETS = ["quarante-deux", "sept mille huit cent soixante-six"]
FULL_POSITIONS = 3


def cmd_full(directory, log):
    setup()
    t_start = time.time()
    out = pathlib.Path(directory)
    if not (TINY_DIR / "source.spm").exists():
        raise SystemExit(f"{TINY_DIR} is missing: run the tiny subcommand first")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        shutil.copy(TINY_DIR / "source.spm", tmp / "source.spm")
        shutil.copy(TINY_DIR / "target.spm", tmp / "target.spm")
        tiny_vocab = json.loads((TINY_DIR / "vocab.json").read_text(encoding="utf-8"))
        pieces = [p for p, _ in sorted(tiny_vocab.items(), key=lambda kv: kv[1]) if p not in ("</s>", "<unk>", "<pad>")]
        n_filler = FULL_VOCAB - (len(pieces) + 3)
        fillers = [f"▁filler{i:05d}" for i in range(1, n_filler + 1)]
        vocab = opus_vocab(pieces, extra=fillers)
        assert len(vocab) == FULL_VOCAB and vocab["<pad>"] == FULL_VOCAB - 1
        write_json_file(tmp / "vocab.json", vocab)
        tok = MarianTokenizer(
            source_spm=str(tmp / "source.spm"),
            target_spm=str(tmp / "target.spm"),
            vocab=str(tmp / "vocab.json"),
            source_lang="en",
            target_lang="fr",
        )
        pad = vocab["<pad>"]
        config = marian_config(
            vocab_size=FULL_VOCAB,
            decoder_vocab_size=FULL_VOCAB,
            d_model=512,
            encoder_layers=6,
            decoder_layers=6,
            encoder_attention_heads=8,
            decoder_attention_heads=8,
            encoder_ffn_dim=2048,
            decoder_ffn_dim=2048,
            activation_function="swish",
            pad_token_id=pad,
            decoder_start_token_id=pad,
        )
        torch.manual_seed(FULL_SEED)
        model = MarianMTModel(config)
        model.generation_config = opus_generation_config(config)
        g = torch.Generator().manual_seed(FULL_SEED)
        with torch.no_grad():  # transformers' init leaves it zero; keep it exercised at full size too
            model.final_logits_bias.copy_(0.05 * torch.randn(model.final_logits_bias.shape, generator=g))
        model.eval()
        t_init = time.time() - t_start
        model.save_pretrained(out)
        tok.save_pretrained(out)
        make_readable(out)
    t_saved = time.time() - t_start

    cases = []
    start = config.decoder_start_token_id
    for s, t in zip(FULL_SOURCES, FULL_TARGETS):
        ids = tok(s)["input_ids"]
        dec = ([start] + tok(text_target=t)["input_ids"])[:FULL_POSITIONS]
        logits = teacher_forced_logits(model, ids, dec)
        cases.append(
            {
                "source": s,
                "target": t,
                "input_ids": ids,
                "decoder_input_ids": dec,
                "positions": FULL_POSITIONS,
                "shape": list(logits.shape),
                "logits": f32_list(logits[:FULL_POSITIONS]),
            }
        )
    dump_reference(
        out / "reference.json",
        {
            "generator": f"scripts/make_marian_fixture.py full {directory}",
            "versions": versions(),
            "weights": "untrained: transformers' own initialisation (seed 3), final_logits_bias seeded normal 0.05",
            "logits": cases,
        },
    )
    worst = check_reload(out, cases, tol=1e-4)
    log(f"full: init {t_init:.1f} s, saved {t_saved:.1f} s, reload check max diff {worst:.1e}")
    log(f"full: {out} {dir_size(out)} bytes; total {time.time() - t_start:.1f} s")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs="?", default="tiny", choices=["tiny", "variants", "full", "all"])
    parser.add_argument("directory", nargs="?", help="output directory of `full`")
    parser.add_argument("--steps", type=int, help="tiny: override the training steps (trials only)")
    args = parser.parse_args()
    if args.steps:
        global TINY_STEPS
        TINY_STEPS = args.steps

    def log(msg):
        print(msg, flush=True)

    if args.command == "full":
        if not args.directory:
            parser.error("full needs an output DIR")
        cmd_full(args.directory, log)
    elif args.command == "tiny":
        cmd_tiny(log)
    elif args.command == "variants":
        cmd_variants(log)
    else:
        cmd_tiny(log)
        cmd_variants(log)


if __name__ == "__main__":
    main()
