#!/usr/bin/env python3
"""Writes the SentencePiece / MarianTokenizer parity fixtures that
`crates/sentencepiece/tests/marian_parity.rs` checks.

Pinned versions (the truth the Rust crate is checked against):

  sentencepiece==0.2.3
  transformers==5.23.0

Run by hand from the repository root (the fixtures are committed; CI does not need Python):

  /work/venv/bin/python scripts/make_sentencepiece_fixture.py

(any venv with the two pinned packages works: `pip install sentencepiece==0.2.3
transformers==5.23.0`). Deterministic: SentencePiece is trained single-threaded on fixed local
text (data/numbers plus the committed Unicode sample), without shuffling.

What it writes under crates/sentencepiece/tests/fixtures/:

  sample_unicode.txt             (input, committed by hand) Unicode-rich training text
  marian/source.spm              unigram, nmt_nfkc charsmap, user-defined symbols <sep> ﬁx №
  marian/target.spm              unigram, a small hand-written normalisation rule table
                                 (overlapping prefixes, a deletion rule), remove_extra_whitespaces
                                 off
  marian/<variant>/*.json        the MarianTokenizer files of each variant (no .spm: the test
                                 reads marian/source.spm and marian/target.spm):
      shared     vocab.json (both sides, OPUS-MT order: </s> 0, <unk> 1, pieces, >>fr<< >>de<<,
                 <pad> last) + tokenizer_config.json as `save_pretrained` writes it
      separate   vocab.json + target_vocab.json + tokenizer_config.json (separate_vocabs)
      legacy     shared vocab, old-style tokenizer_config.json (languages only) and
                 special_tokens_map.json
      config     shared vocab, a tokenizer_config.json with lstrip/rstrip/single_word added
                 tokens, an extra special token (<sep>) and clean_up_tokenization_spaces
  marian/<variant>/expected.json transformers' output: pieces (`tok.tokenize`), ids
                                 (`tok(text).input_ids`, or `text_target=` for the target side),
                                 `tok.decode(ids, skip_special_tokens=True)` and, for the Unicode
                                 cases, `tok.decode(ids)`; for data/numbers/test.{en,fr} (read by
                                 the test from the repository) pieces are joined with spaces
                                 and a null decode means the line itself
  spm/plain.spm                  unigram, identity normalisation, control and user-defined symbols
                                 and a denormaliser
  spm/expected.json              SentencePiece's own output on plain.spm with each combination of
                                 add_dummy_prefix / remove_extra_whitespaces / escape_whitespaces
                                 (and one piece made UNUSED): normalize, encode (pieces, ids),
                                 decode_pieces, decode_ids
  spm/bpe.spm, spm/byte_fallback.spm, spm/word.spm, spm/char.spm, spm/suffix.spm
                                 models the crate must refuse
  spm/ties.json                  strings of data/numbers' alphabet on which SentencePiece's
                                 arithmetic decides an exact tie (0.2.3 sums in float; 0.2.1
                                 compared a double candidate with the stored float): the Python
                                 simulation below finds them, SentencePiece itself encodes them
  trie_split.json                transformers' `Trie.split` (how text is cut on added tokens) on
                                 seeded random texts over token sets with shared prefixes
"""

import io
import itertools
import json
import pathlib
import random
import shutil
import tempfile
import warnings

import sentencepiece as spm
import transformers
from sentencepiece import sentencepiece_model_pb2 as pb
from transformers import MarianTokenizer

warnings.filterwarnings("ignore")  # "Recommended: pip install sacremoses." (unused by encoding)

assert spm.__version__ == "0.2.3", spm.__version__
assert transformers.__version__ == "5.23.0", transformers.__version__

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "crates/sentencepiece/tests/fixtures"
SAMPLE = (OUT / "sample_unicode.txt").read_text(encoding="utf-8").splitlines()
TRAIN_EN = (ROOT / "data/numbers/train.en").read_text(encoding="utf-8").splitlines()
TRAIN_FR = (ROOT / "data/numbers/train.fr").read_text(encoding="utf-8").splitlines()
TEST_EN = "data/numbers/test.en"
TEST_FR = "data/numbers/test.fr"

# The target model's normalisation rules (source code points -> target code points), written
# as the rule TSV SentencePiece compiles into a precompiled charsmap. Overlapping prefixes
# (ﾊ, ﾊﾟ, ﾊﾞ; a, ab, abc) test longest-prefix matching; U+200B is deleted.
TARGET_RULES = {
    "ﾊ": "ハ", "ﾊﾟ": "パ", "ﾊﾞ": "バ", "ﾟ": "゚", "ﾝ": "ン", "ｶ": "カ", "ﾀ": "タ",
    "ﬁ": "fi", "ﬂ": "fl", "½": "1⁄2", "œ": "oe", "Œ": "OE", "«": "\"", "»": "\"",
    "\u00a0": " ", "\t": " ", "\u3000": " ", "\u200b": "", "\r": " ", "\n": " ",
    "abc": "ABC", "ab": "Ab", "€": "EUR", "№": "No",
}
# The plain model's denormaliser (applied by decode): "_" -> " ", "EUR" -> "€".
DENORM_RULES = {"_": " ", "EUR": "€"}


def rule_tsv(rules, path):
    with open(path, "w", encoding="utf-8") as f:
        for src, trg in rules.items():
            f.write(" ".join(f"{ord(c):X}" for c in src) + "\t" + " ".join(f"{ord(c):X}" for c in trg) + "\n")


def train(lines, **kw):
    writer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=writer,
        num_threads=1,
        shuffle_input_sentence=False,
        minloglevel=2,
        **kw,
    )
    data = writer.getvalue()
    if "normalization_rule_tsv" in kw or "denormalization_rule_tsv" in kw:
        # The trainer records the rule file's (temporary) path; drop it so runs are identical.
        m = proto(data)
        m.normalizer_spec.ClearField("normalization_rule_tsv")
        m.denormalizer_spec.ClearField("normalization_rule_tsv")
        data = m.SerializeToString()
    return data


def proto(data):
    m = pb.ModelProto()
    m.ParseFromString(data)
    return m


def processor(data):
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(data)
    return sp


# --- Unicode / edge cases (each encoded on the source side) ----------------------------------

LONG = " ".join(
    (ROOT / TEST_EN).read_text(encoding="utf-8").splitlines()[:120]
)  # well over 512 pieces

EDGE_CASES = [
    "ﾊﾟﾝ",  # half-width katakana with a (half-width) sound mark
    "ﾊﾞｽ ﾊﾟ ﾊ ﾟ",
    "한",  # a Hangul syllable
    "한국어",
    "ẹ̄́ Z̤̈́",  # stacked combining marks
    "ﬁne ﬁx",  # the ﬁ ligature (and the user-defined ﬁx, kept unnormalised)
    "½ cup",
    "one\u00a0two",  # NBSP
    "one\u3000two",  # ideographic space
    "one\ttwo",
    "one\r\ntwo",
    "one\u200btwo",  # zero-width space
    "one\u200b",
    "\u200b",
    "one</s>two",
    "one </s> two",
    "</s>",
    " </s> ",
    "one <unk> two<unk>",
    "<unk>",
    "<pad> one <pad>",
    "</s><unk><pad>",
    "<</s>>",
    "< /s>",
    ">>fr<< one two",
    ">>fr<<one",
    "one >>fr<< two",
    ">>fr<< >>de<< one",
    ">>fr<<>>de<<",
    ">>xx<< unknown code",
    ">>de<<",
    ">><< empty code",
    ">>fr",
    "</s>>>fr<< after eos",
    " >>fr<< leading space",
    ">>a b<< spaced code",
    "",
    " ",
    "   ",
    "\t",
    "  leading",
    "trailing  ",
    "multiple   spaces   inside",
    "  all   of   them  ",
    "<sep>",
    "one<sep>two <sep> three",
    "№5",
    "emoji 🙂🙂 unknowns 🦀 ⚙️",
    "Ελληνικά: καλημέρα",
    "ＡＢＣ",
    "abc ab abd",
    "€ 5",
    "œuvre « quoted »",
    LONG,
]
UNICODE_CASES = SAMPLE + EDGE_CASES

TARGET_CASES = [
    "ﾊﾟﾝ ﾊﾞ ﾊ",
    "ﬁn ½",
    "un\u00a0deux\u3000trois\tquatre",
    "cinq\u200bsix",
    "  sept   huit  ",
    "œuvre « neuf »",
    "abc ab abd",
    "€ 5 № 3",
    "dix</s>onze",
    ">>fr<< douze",
    "",
    " ",
]

CONFIG_CASES = [
    "one </s> two",
    "one</s>two",
    "one  </s>  two",
    "one <unk> two",
    "one<unk>two",
    "x <unk>y",
    "one <pad> two",
    "one<pad>two",
    "<pad>  two",
    "one <sep> two",
    "one<sep>two",
    "it 's , one . two ! n't",
    "a ' b 'm 've 're 's",
    ">>fr<< one </s> >>de<< two",
    "",
    "  ",
]


def dumps(obj, depth=0):
    """JSON with one line per list item down to depth 2 (compact enough to commit, diffable)."""
    pad = " " * depth
    if depth < 2 and isinstance(obj, dict):
        items = [f"{pad} {json.dumps(k)}: {dumps(v, depth + 1).lstrip()}" for k, v in obj.items()]
        return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if depth < 3 and isinstance(obj, list) and obj and isinstance(obj[0], (dict, list, str)):
        items = [dumps(v, depth + 1) for v in obj]
        return pad + "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return pad + json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def write_json(path, obj):
    path.parent.mkdir(parents=True, exist_ok=True)
    text = dumps(obj) + "\n"
    assert json.loads(text) == obj
    path.write_text(text, encoding="utf-8")


def ensure_no_space(pieces, where):
    for p in pieces:
        assert " " not in p, (where, p)


class Marian:
    """A MarianTokenizer loaded with `from_pretrained` from a temporary directory."""

    def __init__(self, files, src_spm, tgt_spm):
        self.dir = tempfile.mkdtemp()
        d = pathlib.Path(self.dir)
        (d / "source.spm").write_bytes(src_spm)
        (d / "target.spm").write_bytes(tgt_spm)
        for name, text in files.items():
            (d / name).write_text(text, encoding="utf-8")
        self.tok = MarianTokenizer.from_pretrained(self.dir)

    def source(self, text):
        tok = self.tok
        pieces = tok.tokenize(text)
        ids = tok(text).input_ids
        assert ids == tok.convert_tokens_to_ids(pieces) + [tok.eos_token_id], text
        return pieces, ids

    def target(self, text):
        tok = self.tok
        tok._switch_to_target_mode()
        try:
            pieces = tok.tokenize(text)
            conv = tok.convert_tokens_to_ids(pieces) + [tok.eos_token_id]
        finally:
            tok._switch_to_input_mode()
        ids = tok(text_target=text).input_ids
        assert ids == conv, text
        return pieces, ids

    def case(self, text, side, full=True):
        pieces, ids = self.source(text) if side == "source" else self.target(text)
        out = {"text": text, "pieces": pieces, "ids": ids,
               "decoded": self.tok.decode(ids, skip_special_tokens=True)}
        if full:
            out["decoded_with_special"] = self.tok.decode(ids)
        return out

    def file_cases(self, rel, side):
        lines = (ROOT / rel).read_text(encoding="utf-8").splitlines()
        pieces, ids, decoded = [], [], []
        for line in lines:
            c = self.case(line, side, full=False)
            ensure_no_space(c["pieces"], rel)
            pieces.append(" ".join(c["pieces"]))
            ids.append(c["ids"])
            # null: the decode equals the line itself (most lines; keeps the fixture small)
            decoded.append(None if c["decoded"] == line else c["decoded"])
        return {"file": rel, "side": side, "pieces": pieces, "ids": ids, "decoded": decoded}

    def header(self, name):
        tok = self.tok
        return {
            "variant": name,
            "sentencepiece": spm.__version__,
            "transformers": transformers.__version__,
            "vocab_size": tok.vocab_size,
            "eos_id": tok.eos_token_id,
            "unk_id": tok.unk_token_id,
            "pad_id": tok.pad_token_id,
            "all_special_tokens": tok.all_special_tokens,
            "all_special_ids": tok.all_special_ids,
        }

    def close(self):
        shutil.rmtree(self.dir)


def vocab_of(*protos, extra=()):
    vocab = {"</s>": 0, "<unk>": 1}
    for m in protos:
        for p in m.pieces:
            if p.type in (pb.ModelProto.SentencePiece.NORMAL, pb.ModelProto.SentencePiece.USER_DEFINED):
                vocab.setdefault(p.piece, len(vocab))
    for piece in extra:
        vocab.setdefault(piece, len(vocab))
    vocab["<pad>"] = len(vocab)
    return vocab


def saved_files(vocab_files, src_spm, tgt_spm, **init):
    """What `save_pretrained` writes for a MarianTokenizer built from these files."""
    d = pathlib.Path(tempfile.mkdtemp())
    try:
        (d / "source.spm").write_bytes(src_spm)
        (d / "target.spm").write_bytes(tgt_spm)
        for name, obj in vocab_files.items():
            (d / name).write_text(json.dumps(obj, ensure_ascii=False, indent=2), encoding="utf-8")
        tok = MarianTokenizer(
            str(d / "source.spm"), str(d / "target.spm"), str(d / "vocab.json"),
            target_vocab_file=str(d / "target_vocab.json") if "target_vocab.json" in vocab_files else None,
            **init,
        )
        out = d / "saved"
        tok.save_pretrained(str(out))
        return {p.name: p.read_text(encoding="utf-8") for p in out.iterdir() if p.suffix == ".json"}
    finally:
        shutil.rmtree(d)


def marian_fixtures():
    tmp = pathlib.Path(tempfile.mkdtemp())
    rule_tsv(TARGET_RULES, tmp / "target_rules.tsv")
    src_spm = train(
        TRAIN_EN + SAMPLE * 20,
        model_type="unigram",
        vocab_size=500,
        hard_vocab_limit=False,
        character_coverage=0.9995,
        normalization_rule_name="nmt_nfkc",
        user_defined_symbols=["<sep>", "ﬁx", "№"],
    )
    tgt_spm = train(
        TRAIN_FR + SAMPLE * 20,
        model_type="unigram",
        vocab_size=400,
        hard_vocab_limit=False,
        character_coverage=1.0,
        normalization_rule_tsv=str(tmp / "target_rules.tsv"),
        remove_extra_whitespaces=False,
    )
    shutil.rmtree(tmp)
    (OUT / "marian").mkdir(parents=True, exist_ok=True)
    (OUT / "marian/source.spm").write_bytes(src_spm)
    (OUT / "marian/target.spm").write_bytes(tgt_spm)
    src, tgt = proto(src_spm), proto(tgt_spm)
    assert src.trainer_spec.model_type == pb.TrainerSpec.UNIGRAM and not src.trainer_spec.byte_fallback

    codes = [">>fr<<", ">>de<<"]
    shared_vocab = vocab_of(src, tgt, extra=codes)
    source_vocab = vocab_of(src, extra=codes)
    target_vocab = vocab_of(tgt)

    variants = {
        "shared": saved_files({"vocab.json": shared_vocab}, src_spm, tgt_spm,
                              source_lang="en", target_lang="fr"),
        "separate": saved_files({"vocab.json": source_vocab, "target_vocab.json": target_vocab},
                                src_spm, tgt_spm, separate_vocabs=True),
        "legacy": {
            "vocab.json": json.dumps(shared_vocab, ensure_ascii=False, indent=2),
            "tokenizer_config.json": json.dumps({"target_lang": "fr", "source_lang": "en"}),
            "special_tokens_map.json": json.dumps(
                {"eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}),
        },
    }
    pad = shared_vocab["<pad>"]

    def added(content, lstrip=False, rstrip=False, single_word=False):
        return {"content": content, "lstrip": lstrip, "normalized": False, "rstrip": rstrip,
                "single_word": single_word, "special": True}

    variants["config"] = {
        "vocab.json": json.dumps(shared_vocab, ensure_ascii=False, indent=2),
        "tokenizer_config.json": json.dumps({
            "added_tokens_decoder": {
                "0": added("</s>", lstrip=True, rstrip=True),
                "1": added("<unk>", single_word=True),
                str(pad): added("<pad>", rstrip=True),
            },
            "additional_special_tokens": ["<sep>"],
            "clean_up_tokenization_spaces": True,
            "eos_token": "</s>",
            "unk_token": "<unk>",
            "pad_token": "<pad>",
            "model_max_length": 512,
            "separate_vocabs": False,
            "tokenizer_class": "MarianTokenizer",
        }, indent=2),
    }

    for name, files in variants.items():
        d = OUT / "marian" / name
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        for fname, text in files.items():
            (d / fname).write_text(text, encoding="utf-8")
        m = Marian(files, src_spm, tgt_spm)
        exp = m.header(name)
        # Only the vocabularies differ between the variants (the .spm files are the same): the
        # full source side in `shared`, the target side where it differs (`separate`), the edge
        # cases everywhere.
        if name == "shared":
            exp["files"] = [m.file_cases(TEST_EN, "source"), m.file_cases(TEST_FR, "target")]
        elif name == "separate":
            exp["files"] = [m.file_cases(TEST_FR, "target")]
        cases = UNICODE_CASES if name == "shared" else EDGE_CASES[:-1]
        cases = cases + (CONFIG_CASES if name == "config" else [])
        exp["cases"] = [m.case(t, "source") for t in cases]
        exp["target_cases"] = [m.case(t, "target") for t in TARGET_CASES]
        # Decoding id sequences that `encode` never produces: special ids in the middle, the
        # target vocabulary's own <pad> (separate), ids only the spm knows (shared: the spm
        # fallback of `_convert_id_to_token`).
        tok = m.tok
        seqs = [
            [0, 1, 5, 1, 0, tok.pad_token_id, 7, 0],
            [tok.pad_token_id, 5, 6, 0],
            [5, 0, 6, 0, 0],
            [],
        ]
        if name == "separate":
            seqs.append([5, target_vocab["<pad>"], 6, 0])
        exp["decode_ids"] = []
        for ids in seqs:
            exp["decode_ids"].append({
                "ids": ids,
                "decoded": tok.decode(ids, skip_special_tokens=True),
                "decoded_with_special": tok.decode(ids),
            })
        exp["long_source_pieces"] = len(m.source(LONG)[0])
        assert exp["long_source_pieces"] > 512
        write_json(d / "expected.json", exp)
        m.close()


# --- SentencePiece-level fixtures --------------------------------------------------------------

SPM_CASES = SAMPLE + [
    "", " ", "  a  b  ", "one two", "one  two", " one", "two ", "<sep>x<sep>", "@@ at@@",
    "<ctl> control <s> </s> <unk>", "x_y EUR z", "🦀🦀 crab", "\u200b", "a\tb", "ÀÉÎ",
]


def spm_fixtures():
    tmp = pathlib.Path(tempfile.mkdtemp())
    rule_tsv(DENORM_RULES, tmp / "denorm.tsv")
    plain = train(
        TRAIN_EN[:3000] + SAMPLE * 10,
        model_type="unigram",
        vocab_size=320,
        hard_vocab_limit=False,
        character_coverage=0.999,
        normalization_rule_name="identity",
        control_symbols=["<ctl>"],
        user_defined_symbols=["<sep>", "@@"],
        denormalization_rule_tsv=str(tmp / "denorm.tsv"),
    )
    small = TRAIN_EN[:2000]
    refused = {
        "bpe": train(small, model_type="bpe", vocab_size=60, normalization_rule_name="identity"),
        "word": train(small, model_type="word", vocab_size=40, normalization_rule_name="identity"),
        "char": train(small, model_type="char", vocab_size=30, normalization_rule_name="identity"),
        "byte_fallback": train(small, model_type="unigram", vocab_size=300, byte_fallback=True,
                               normalization_rule_name="identity"),
        "suffix": train(small, model_type="unigram", vocab_size=60, treat_whitespace_as_suffix=True,
                        normalization_rule_name="identity"),
    }
    shutil.rmtree(tmp)
    d = OUT / "spm"
    d.mkdir(parents=True, exist_ok=True)
    (d / "plain.spm").write_bytes(plain)
    for name, data in refused.items():
        (d / f"{name}.spm").write_bytes(data)
    assert proto(refused["byte_fallback"]).trainer_spec.byte_fallback
    assert proto(refused["suffix"]).trainer_spec.treat_whitespace_as_suffix

    base = proto(plain)
    assert base.HasField("denormalizer_spec") and base.denormalizer_spec.precompiled_charsmap
    # One piece made UNUSED: it must never be produced by encoding (and decodes as a normal piece).
    unused = next(i for i, p in enumerate(base.pieces) if p.piece == "▁two")
    variants = []
    for adp, rew, esc in itertools.product([True, False], repeat=3):
        variants.append({"add_dummy_prefix": adp, "remove_extra_whitespaces": rew,
                         "escape_whitespaces": esc, "unused": None})
    variants.append({"add_dummy_prefix": True, "remove_extra_whitespaces": True,
                     "escape_whitespaces": True, "unused": unused})
    out = {"sentencepiece": spm.__version__, "model": "plain.spm", "variants": []}
    for v in variants:
        m = proto(plain)
        m.normalizer_spec.add_dummy_prefix = v["add_dummy_prefix"]
        m.normalizer_spec.remove_extra_whitespaces = v["remove_extra_whitespaces"]
        m.normalizer_spec.escape_whitespaces = v["escape_whitespaces"]
        if v["unused"] is not None:
            m.pieces[v["unused"]].type = pb.ModelProto.SentencePiece.UNUSED
        sp = processor(m.SerializeToString())
        cases = []
        # The sample text under the default flags; the edge cases under every combination.
        texts = SPM_CASES if len(out["variants"]) == 0 else SPM_CASES[len(SAMPLE):]
        for text in texts:
            pieces = sp.encode(text, out_type=str)
            ids = sp.encode(text, out_type=int)
            cases.append({
                "text": text,
                "normalized": sp.normalize(text),
                "pieces": pieces,
                "ids": ids,
                "decode_pieces": sp.decode_pieces(pieces),
                "decode_ids": sp.decode_ids(ids),
            })
        out["variants"].append({**v, "cases": cases})
    # Decoding piece sequences encoding never produces (control, unknown, unused, stray ▁).
    sp = processor(plain)
    out["decode_pieces"] = []
    for pieces in [["<s>", "▁one", "</s>"], ["<unk>", "▁one"], ["▁", "▁", "one"], ["zz▁q", "▁one"],
                   ["<ctl>", "▁a"], ["▁x_y"], ["EUR"], ["<sep>", "▁one"], []]:
        out["decode_pieces"].append({"pieces": pieces, "decoded": sp.decode_pieces(pieces)})
    write_json(d / "expected.json", out)


def viterbi(m, normalized, double_candidate):
    """`EncodeOptimized` in Python with numpy floats: with double_candidate, a piece candidate
    is the double sum of the float score and the stored float total, compared in double and
    stored as float (0.2.1's arithmetic); without it everything is float."""
    import numpy as np

    f32, f64 = np.float32, np.float64
    pieces = {p.piece.encode(): i for i, p in enumerate(m.pieces) if p.type in (1, 4, 5)}
    normal = [p.score for p in m.pieces if p.type == 1]
    max_score = f32(max(normal + [np.finfo(np.float32).tiny]))
    unk_score = f32(f32(min(normal)) - f32(10))
    unk_id = next(i for i, p in enumerate(m.pieces) if p.type == 2)
    longest = max(len(k) for k in pieces)
    text = normalized.encode()
    n = len(text)
    best = [[None, f32(0), -1] for _ in range(n + 1)]
    start = 0
    while start < n:
        till = best[start][1]
        lead = text[start]
        mblen = min(1 if lead < 0xC0 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4, n - start)
        single = False
        for length in range(1, min(longest, n - start) + 1):
            i = pieces.get(text[start:start + length])
            if i is None or m.pieces[i].type == 5:
                continue
            user = m.pieces[i].type == 4
            if double_candidate:
                score = f64(f32(length) * max_score) - 0.1 if user else f64(f32(m.pieces[i].score))
                cand = score + f64(till)
                better = best[start + length][2] == -1 or cand > f64(best[start + length][1])
            else:
                score = f32(f32(length) * max_score - f32(0.1)) if user else f32(m.pieces[i].score)
                cand = f32(score + till)
                better = best[start + length][2] == -1 or cand > best[start + length][1]
            if better:
                best[start + length] = [i, f32(cand), start]
            single = single or length == mblen
        if not single:
            cand = f32(unk_score + till)
            if best[start + mblen][2] == -1 or cand > best[start + mblen][1]:
                best[start + mblen] = [unk_id, cand, start]
        start += mblen
    out, end = [], n
    while end > 0:
        _, _, s = best[end]
        out.append(text[s:end].decode())
        end = s
    return out[::-1]


def tie_fixtures():
    data = (OUT / "marian/source.spm").read_bytes()
    m = proto(data)
    sp = processor(data)
    rng = random.Random(7)
    alphabet = list("0145entyhurd ")
    cases, tried = [], 0
    while len(cases) < 24 and tried < 200000:
        tried += 1
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30)))
        norm = sp.normalize(text)
        if viterbi(m, norm, True) != viterbi(m, norm, False):
            pieces = sp.encode(text, out_type=str)
            assert pieces == viterbi(m, norm, False), text  # no unknowns in this alphabet
            cases.append({"text": text, "pieces": pieces, "ids": sp.encode(text, out_type=int)})
    write_json(OUT / "spm/ties.json", {"sentencepiece": spm.__version__, "model": "marian/source.spm",
                                       "tried": tried, "cases": cases})


def trie_fixtures():
    from transformers.tokenization_python import Trie

    rng = random.Random(20240611)
    token_sets = [
        ["</s>", "<unk>", "<pad>"],
        ["ab", "abc", "b", "bcd", "c<", "<c"],
        ["a", "aa", "aaa", "ba"],
        ["extra_id_1", "extra_id_100", "id_10", "0"],
        ["<s>", "</s>", "<", "s>"],
        ["é", "éé", "ü<", "<ü"],
    ]
    cases = []
    for tokens in token_sets:
        alphabet = sorted(set("".join(tokens)) | {" ", "x"})
        for _ in range(40):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
            trie = Trie()
            for t in tokens:
                trie.add(t)
            cases.append({"tokens": tokens, "text": text, "split": trie.split(text)})
    write_json(OUT / "trie_split.json", {"transformers": transformers.__version__, "cases": cases})


if __name__ == "__main__":
    marian_fixtures()
    spm_fixtures()
    tie_fixtures()
    trie_fixtures()
    total = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print(f"fixtures written under {OUT.relative_to(ROOT)}: {total / 1024:.0f} KiB")
