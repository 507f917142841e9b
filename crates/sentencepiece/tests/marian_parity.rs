//! Parity with Python `sentencepiece` 0.2.3 and transformers 5.23.0's `MarianTokenizer` on the
//! fixtures of `scripts/make_sentencepiece_fixture.py`, and the refusal and validation errors.

use std::path::{Path, PathBuf};

use rosetta_sentencepiece::{
    Error, MarianFiles, MarianTokenizer, ModelProto, PieceType, SentencePieceModel, TokenTrie,
};
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|s| s.as_str().expect("string").to_owned())
        .collect()
}

fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|i| i.as_u64().expect("id") as u32)
        .collect()
}

fn str_of(v: &Value) -> &str {
    v.as_str().expect("string")
}

/// The files of a fixture variant: the shared .spm models and the variant's JSON files.
struct Variant {
    source_spm: Vec<u8>,
    target_spm: Vec<u8>,
    vocab: Vec<u8>,
    target_vocab: Option<Vec<u8>>,
    tokenizer_config: Option<Vec<u8>>,
    special_tokens_map: Option<Vec<u8>>,
}

impl Variant {
    fn load(name: &str) -> Self {
        let dir = fixtures().join("marian").join(name);
        let optional = |file: &str| std::fs::read(dir.join(file)).ok();
        Variant {
            source_spm: read(&fixtures().join("marian/source.spm")),
            target_spm: read(&fixtures().join("marian/target.spm")),
            vocab: read(&dir.join("vocab.json")),
            target_vocab: optional("target_vocab.json"),
            tokenizer_config: optional("tokenizer_config.json"),
            special_tokens_map: optional("special_tokens_map.json"),
        }
    }

    fn files(&self) -> MarianFiles<'_> {
        MarianFiles {
            source_spm: &self.source_spm,
            target_spm: &self.target_spm,
            vocab: &self.vocab,
            target_vocab: self.target_vocab.as_deref(),
            tokenizer_config: self.tokenizer_config.as_deref(),
            special_tokens_map: self.special_tokens_map.as_deref(),
        }
    }

    fn tokenizer(&self) -> Result<MarianTokenizer, Error> {
        MarianTokenizer::from_files(&self.files())
    }
}

fn expected(name: &str) -> Value {
    json(&fixtures().join("marian").join(name).join("expected.json"))
}

const VARIANTS: [&str; 4] = ["shared", "separate", "legacy", "config"];

#[test]
fn special_tokens_and_sizes_match_transformers() {
    for name in VARIANTS {
        let tok = Variant::load(name)
            .tokenizer()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let exp = expected(name);
        assert_eq!(
            tok.vocab_size() as u64,
            exp["vocab_size"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            tok.eos_id() as u64,
            exp["eos_id"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            tok.unk_id() as u64,
            exp["unk_id"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            tok.pad_id().map(u64::from),
            exp["pad_id"].as_u64(),
            "{name}"
        );
        assert_eq!(
            tok.all_special_tokens(),
            strings(&exp["all_special_tokens"]),
            "{name}"
        );
        assert_eq!(
            tok.all_special_ids(),
            ids(&exp["all_special_ids"]),
            "{name}"
        );
    }
    let shared = Variant::load("shared").tokenizer().unwrap();
    assert_eq!(shared.language_codes(), vec![">>de<<", ">>fr<<"]);
    assert_eq!(shared.token_to_id("<pad>"), shared.pad_id());
    assert_eq!(shared.token_to_id("no such piece"), None);
    assert_eq!(shared.id_to_token(0), Some("</s>"));
    assert!(
        Variant::load("separate")
            .tokenizer()
            .unwrap()
            .language_codes()
            .is_empty()
    );
}

/// Every line of data/numbers/test.en (source) and test.fr (target): pieces, ids, decode.
#[test]
fn test_files_match_transformers() {
    for name in ["shared", "separate"] {
        let tok = Variant::load(name).tokenizer().unwrap();
        let exp = expected(name);
        for file in exp["files"].as_array().unwrap() {
            let path = repo_root().join(str_of(&file["file"]));
            let text = String::from_utf8(read(&path)).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            let target = str_of(&file["side"]) == "target";
            let pieces = file["pieces"].as_array().unwrap();
            let all_ids = file["ids"].as_array().unwrap();
            let decoded = file["decoded"].as_array().unwrap();
            assert_eq!(lines.len(), pieces.len());
            for (i, line) in lines.iter().enumerate() {
                let enc = if target {
                    tok.encode_target(line)
                } else {
                    tok.encode(line)
                };
                let want_pieces = str_of(&pieces[i]);
                let want_pieces: Vec<&str> = if want_pieces.is_empty() {
                    Vec::new()
                } else {
                    want_pieces.split(' ').collect()
                };
                assert_eq!(
                    enc.pieces,
                    want_pieces,
                    "{name} {} line {}: {line:?}",
                    path.display(),
                    i + 1
                );
                assert_eq!(
                    enc.ids,
                    ids(&all_ids[i]),
                    "{name} {} line {}: {line:?}",
                    path.display(),
                    i + 1
                );
                let want = decoded[i].as_str().unwrap_or(line);
                assert_eq!(
                    tok.decode(&enc.ids).expect("decodes"),
                    want,
                    "{name} {} line {}",
                    path.display(),
                    i + 1
                );
            }
        }
    }
}

fn check_case(tok: &MarianTokenizer, case: &Value, target: bool, label: &str) {
    let text = str_of(&case["text"]);
    let enc = if target {
        tok.encode_target(text)
    } else {
        tok.encode(text)
    };
    assert_eq!(
        enc.pieces,
        strings(&case["pieces"]),
        "{label}: pieces of {text:?}"
    );
    assert_eq!(enc.ids, ids(&case["ids"]), "{label}: ids of {text:?}");
    assert_eq!(enc.ids_without_eos(), &enc.ids[..enc.ids.len() - 1]);
    assert_eq!(
        tok.decode(&enc.ids).expect("decodes"),
        str_of(&case["decoded"]),
        "{label}: decode of {text:?}"
    );
    assert_eq!(
        tok.decode_keeping_special_tokens(&enc.ids)
            .expect("decodes"),
        str_of(&case["decoded_with_special"]),
        "{label}: decode (special tokens kept) of {text:?}"
    );
}

/// The Unicode sample and the edge cases (special tokens in the text, language codes, spaces,
/// a source over 512 pieces) in every variant.
#[test]
fn unicode_and_edge_cases_match_transformers() {
    for name in VARIANTS {
        let tok = Variant::load(name).tokenizer().unwrap();
        let exp = expected(name);
        for case in exp["cases"].as_array().unwrap() {
            check_case(&tok, case, false, &format!("{name} source"));
        }
        for case in exp["target_cases"].as_array().unwrap() {
            check_case(&tok, case, true, &format!("{name} target"));
        }
        for case in exp["decode_ids"].as_array().unwrap() {
            let seq = ids(&case["ids"]);
            assert_eq!(
                tok.decode(&seq).unwrap(),
                str_of(&case["decoded"]),
                "{name}: decode {seq:?}"
            );
            assert_eq!(
                tok.decode_keeping_special_tokens(&seq).unwrap(),
                str_of(&case["decoded_with_special"]),
                "{name}: decode {seq:?} keeping special tokens"
            );
        }
    }
    let exp = expected("shared");
    let long = exp["cases"].as_array().unwrap().last().unwrap();
    let tok = Variant::load("shared").tokenizer().unwrap();
    let pieces = tok.tokenize(str_of(&long["text"]));
    assert_eq!(
        pieces.len() as u64,
        exp["long_source_pieces"].as_u64().unwrap()
    );
    assert!(pieces.len() > 512);
}

#[test]
fn decoding_round_trips_the_test_files() {
    for name in ["shared", "separate"] {
        let tok = Variant::load(name).tokenizer().unwrap();
        for (file, target) in [
            ("data/numbers/test.en", false),
            ("data/numbers/test.fr", true),
        ] {
            let text = String::from_utf8(read(&repo_root().join(file))).unwrap();
            for line in text.lines() {
                let enc = if target {
                    tok.encode_target(line)
                } else {
                    tok.encode(line)
                };
                // With separate vocabularies the source ids are not the decoding side's.
                if target || !tok.separate_vocabs() {
                    assert_eq!(
                        tok.decode(&enc.ids).expect("decodes"),
                        line,
                        "{name} {file}"
                    );
                }
                assert_eq!(
                    tok.decode(enc.ids_without_eos()).unwrap(),
                    tok.decode(&enc.ids).unwrap()
                );
            }
        }
    }
}

#[test]
fn unknown_ids_are_errors() {
    let tok = Variant::load("shared").tokenizer().unwrap();
    let err = tok.decode(&[5, 1_000_000]).unwrap_err();
    assert!(
        matches!(err, Error::IdOutOfRange { id: 1_000_000, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("source.spm"), "{err}");
    let err = Variant::load("separate")
        .tokenizer()
        .unwrap()
        .decode(&[1_000_000])
        .unwrap_err();
    assert!(
        err.to_string().contains("target_vocab.json") && err.to_string().contains("target.spm"),
        "{err}"
    );
}

#[test]
fn from_dir_reads_a_saved_directory() {
    let dir = std::env::temp_dir().join(format!("rosetta-spm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let v = Variant::load("shared");
    std::fs::write(dir.join("source.spm"), &v.source_spm).unwrap();
    std::fs::write(dir.join("target.spm"), &v.target_spm).unwrap();
    std::fs::write(dir.join("vocab.json"), &v.vocab).unwrap();
    std::fs::write(
        dir.join("tokenizer_config.json"),
        v.tokenizer_config.as_deref().unwrap(),
    )
    .unwrap();
    let from_dir = MarianTokenizer::from_dir(&dir);
    std::fs::remove_file(dir.join("vocab.json")).unwrap();
    let missing = MarianTokenizer::from_dir(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        from_dir.unwrap().encode("one two").ids,
        v.tokenizer().unwrap().encode("one two").ids
    );
    let err = missing.unwrap_err();
    assert!(
        matches!(err, Error::Io { .. }) && err.to_string().contains("vocab.json"),
        "{err}"
    );
}

// --- SentencePiece itself ------------------------------------------------------------------

#[test]
fn sentencepiece_flag_variants_match_python() {
    let exp = json(&fixtures().join("spm/expected.json"));
    let plain = read(&fixtures().join("spm").join(str_of(&exp["model"])));
    for variant in exp["variants"].as_array().unwrap() {
        let mut proto = ModelProto::from_bytes(&plain, "plain.spm").unwrap();
        let spec = proto.normalizer_spec.get_or_insert_with(Default::default);
        spec.add_dummy_prefix = Some(variant["add_dummy_prefix"].as_bool().unwrap());
        spec.remove_extra_whitespaces =
            Some(variant["remove_extra_whitespaces"].as_bool().unwrap());
        spec.escape_whitespaces = Some(variant["escape_whitespaces"].as_bool().unwrap());
        if let Some(unused) = variant["unused"].as_u64() {
            proto.pieces[unused as usize].r#type = Some(PieceType::Unused as i32);
        }
        let label = format!(
            "add_dummy_prefix={} remove_extra_whitespaces={} escape_whitespaces={} unused={}",
            variant["add_dummy_prefix"],
            variant["remove_extra_whitespaces"],
            variant["escape_whitespaces"],
            variant["unused"]
        );
        let model = SentencePieceModel::from_proto(proto, "plain.spm").unwrap();
        for case in variant["cases"].as_array().unwrap() {
            let text = str_of(&case["text"]);
            assert_eq!(
                model.normalize(text),
                str_of(&case["normalized"]),
                "{label}: normalize {text:?}"
            );
            let pieces = model.encode_as_pieces(text);
            assert_eq!(
                pieces,
                strings(&case["pieces"]),
                "{label}: pieces of {text:?}"
            );
            let got_ids = model.encode_as_ids(text);
            assert_eq!(got_ids, ids(&case["ids"]), "{label}: ids of {text:?}");
            assert_eq!(
                model.decode_pieces(&pieces),
                str_of(&case["decode_pieces"]),
                "{label}: decode_pieces {text:?}"
            );
            assert_eq!(
                model.decode_ids(&got_ids).unwrap(),
                str_of(&case["decode_ids"]),
                "{label}: decode_ids {text:?}"
            );
        }
    }
    let model = SentencePieceModel::from_bytes(&plain, "plain.spm").unwrap();
    for case in exp["decode_pieces"].as_array().unwrap() {
        let pieces = strings(&case["pieces"]);
        assert_eq!(
            model.decode_pieces(&pieces),
            str_of(&case["decoded"]),
            "decode_pieces {pieces:?}"
        );
    }
    let err = model.decode_ids(&[model.len() as u32]).unwrap_err();
    assert!(err.to_string().contains("plain.spm"), "{err}");
}

/// Exact ties (`0`+`00` against `00`+`0`) that SentencePiece 0.2.3's float arithmetic decides
/// differently from 0.2.1's.
#[test]
fn ties_are_broken_as_sentencepiece_does() {
    let exp = json(&fixtures().join("spm/ties.json"));
    let model = SentencePieceModel::from_bytes(
        &read(&fixtures().join(str_of(&exp["model"]))),
        "source.spm",
    )
    .unwrap();
    let cases = exp["cases"].as_array().unwrap();
    assert!(cases.len() >= 10);
    for case in cases {
        let text = str_of(&case["text"]);
        assert_eq!(
            model.encode_as_pieces(text),
            strings(&case["pieces"]),
            "pieces of {text:?}"
        );
        assert_eq!(
            model.encode_as_ids(text),
            ids(&case["ids"]),
            "ids of {text:?}"
        );
    }
}

#[test]
fn precompiled_charsmaps_match_by_longest_prefix() {
    let source =
        SentencePieceModel::from_bytes(&read(&fixtures().join("marian/source.spm")), "source.spm")
            .unwrap();
    // nmt_nfkc: the half-width ﾊﾟ pair is one rule (longest prefix), not ﾊ then ﾟ.
    assert_eq!(source.normalize("ﾊﾟﾝ"), "▁パン");
    assert_eq!(source.normalize("ﬁ ½"), "▁fi▁1⁄2");
    assert_eq!(source.normalize("a\u{3000}b\u{A0}c\td"), "▁a▁b▁c▁d");
    // User-defined symbols are not normalised.
    assert_eq!(source.normalize("ﬁx"), "▁ﬁx");
    let target =
        SentencePieceModel::from_bytes(&read(&fixtures().join("marian/target.spm")), "target.spm")
            .unwrap();
    // The hand-written rules: abc, ab and a deletion.
    assert_eq!(target.normalize("abcd abd x\u{200B}y"), "▁ABCd▁Abd▁xy");
}

#[test]
fn transformers_trie_split_matches() {
    let exp = json(&fixtures().join("trie_split.json"));
    for case in exp["cases"].as_array().unwrap() {
        let tokens = strings(&case["tokens"]);
        let text = str_of(&case["text"]);
        let trie = TokenTrie::new(tokens.iter().map(String::as_str));
        assert_eq!(
            trie.split(text),
            strings(&case["split"]),
            "tokens {tokens:?} text {text:?}"
        );
    }
}

// --- refusals and validation ---------------------------------------------------------------

fn assert_err(result: Result<impl Sized, Error>, needles: &[&str]) -> Error {
    let Err(err) = result else {
        panic!("expected an error mentioning {needles:?}")
    };
    let message = err.to_string();
    for needle in needles {
        assert!(
            message.contains(needle),
            "{message:?} does not mention {needle:?}"
        );
    }
    err
}

#[test]
fn unsupported_models_are_refused_naming_the_setting() {
    for (file, setting) in [
        ("bpe.spm", "model_type BPE"),
        ("word.spm", "model_type WORD"),
        ("char.spm", "model_type CHAR"),
        ("byte_fallback.spm", "byte_fallback = true"),
        ("suffix.spm", "treat_whitespace_as_suffix = true"),
    ] {
        let bytes = read(&fixtures().join("spm").join(file));
        let err = assert_err(
            SentencePieceModel::from_bytes(&bytes, file),
            &[file, setting, "not supported"],
        );
        assert!(matches!(err, Error::Unsupported { .. }), "{err}");
        // Inside a MarianTokenizer the error names source.spm / target.spm.
        let mut v = Variant::load("shared");
        v.target_spm = bytes;
        assert_err(v.tokenizer(), &["target.spm", setting]);
    }
}

#[test]
fn damaged_models_are_errors_naming_the_file() {
    let v = Variant::load("shared");
    for (cut, which) in [
        (v.source_spm.len() / 2, "source"),
        (1000, "source"),
        (v.target_spm.len() - 3, "target"),
    ] {
        let mut d = Variant::load("shared");
        if which == "source" {
            d.source_spm.truncate(cut);
        } else {
            d.target_spm.truncate(cut);
        }
        let err = assert_err(d.tokenizer(), &[&format!("{which}.spm")]);
        assert!(
            matches!(err, Error::Protobuf { .. } | Error::InvalidModel { .. }),
            "{err}"
        );
    }
    let mut d = Variant::load("shared");
    d.source_spm = b"this is not a SentencePiece model".to_vec();
    assert_err(d.tokenizer(), &["source.spm", "not a SentencePiece model"]);
    d.source_spm = Vec::new();
    assert_err(d.tokenizer(), &["source.spm"]);

    // A charsmap whose trie size runs past the blob.
    let mut proto = ModelProto::from_bytes(&v.source_spm, "source.spm").unwrap();
    let map = proto
        .normalizer_spec
        .as_mut()
        .unwrap()
        .precompiled_charsmap
        .as_mut()
        .unwrap();
    map[..4].copy_from_slice(&u32::MAX.to_le_bytes());
    let mut d = Variant::load("shared");
    d.source_spm = proto.to_bytes();
    assert_err(d.tokenizer(), &["source.spm", "precompiled_charsmap"]);

    // What SentencePiece itself refuses: no <unk>, duplicate pieces, an empty piece.
    let base = ModelProto::from_bytes(&v.target_spm, "target.spm").unwrap();
    let mut p = base.clone();
    p.pieces[0].r#type = Some(PieceType::Normal as i32);
    assert_err(
        SentencePieceModel::from_proto(p, "target.spm"),
        &["target.spm", "unknown piece"],
    );
    let mut p = base.clone();
    let dup = p.pieces[5].clone();
    p.pieces.push(dup);
    assert_err(
        SentencePieceModel::from_proto(p, "target.spm"),
        &["target.spm", "already defined"],
    );
    let mut p = base.clone();
    p.pieces[7].piece = Some(String::new());
    assert_err(
        SentencePieceModel::from_proto(p, "target.spm"),
        &["target.spm", "piece 7 is empty"],
    );
    let mut p = base;
    p.pieces[7].r#type = Some(42);
    assert_err(
        SentencePieceModel::from_proto(p, "target.spm"),
        &["target.spm", "unknown type 42"],
    );
}

#[test]
fn self_test_samples_are_checked_on_load() {
    use rosetta_sentencepiece::proto::{SelfTestData, SelfTestSample};
    let bytes = read(&fixtures().join("spm/plain.spm"));
    let model = SentencePieceModel::from_bytes(&bytes, "plain.spm").unwrap();
    let input = "one hundred <sep> two";
    let good = model.encode_as_pieces(input).join(" ");
    let sample = |expected: &str| SelfTestSample {
        input: Some(input.into()),
        expected: Some(expected.into()),
    };
    let mut proto = ModelProto::from_bytes(&bytes, "plain.spm").unwrap();
    proto.self_test_data = Some(SelfTestData {
        samples: vec![sample(&good)],
    });
    assert!(SentencePieceModel::from_proto(proto.clone(), "plain.spm").is_ok());
    proto.self_test_data = Some(SelfTestData {
        samples: vec![sample(&good), sample("▁one ▁hundred")],
    });
    assert_err(
        SentencePieceModel::from_proto(proto, "plain.spm"),
        &["plain.spm", "self-test sample 1"],
    );
}

fn edit_json(bytes: &[u8], edit: impl FnOnce(&mut serde_json::Map<String, Value>)) -> Vec<u8> {
    let mut value: Value = serde_json::from_slice(bytes).expect("JSON");
    edit(value.as_object_mut().expect("an object"));
    serde_json::to_vec(&value).expect("serializes")
}

#[test]
fn vocabularies_that_disagree_are_errors_naming_the_file_and_piece() {
    let v = Variant::load("shared");
    let source = SentencePieceModel::from_bytes(&v.source_spm, "source.spm").unwrap();
    // The first NORMAL piece of source.spm, taken out of vocab.json.
    let first = (0..source.len() as u32)
        .find(|&id| source.piece_type(id) == Some(PieceType::Normal))
        .unwrap();
    let piece = source.id_to_piece(first).unwrap().to_owned();
    let mut d = Variant::load("shared");
    d.vocab = edit_json(&v.vocab, |m| {
        m.remove(&piece);
    });
    let err = assert_err(
        d.tokenizer(),
        &["vocab.json", &format!("{piece:?}"), "source.spm"],
    );
    assert!(matches!(err, Error::Vocab { .. }), "{err}");
    // Accepted when asked to: the piece then encodes as <unk>, as in transformers.
    let lenient = MarianTokenizer::from_files_allowing_missing_pieces(&d.files()).unwrap();
    let enc = lenient.encode(&piece.replace('▁', " "));
    assert_eq!(enc.pieces, vec![piece.clone()]);
    assert_eq!(enc.ids, vec![lenient.unk_id(), lenient.eos_id()]);

    // A target piece missing from target_vocab.json.
    let s = Variant::load("separate");
    let target = SentencePieceModel::from_bytes(&s.target_spm, "target.spm").unwrap();
    let last = (0..target.len() as u32)
        .rev()
        .find(|&id| target.piece_type(id) == Some(PieceType::Normal))
        .unwrap();
    let piece = target.id_to_piece(last).unwrap().to_owned();
    let mut d = Variant::load("separate");
    d.target_vocab = Some(edit_json(s.target_vocab.as_deref().unwrap(), |m| {
        m.remove(&piece);
    }));
    assert_err(
        d.tokenizer(),
        &["target_vocab.json", &format!("{piece:?}"), "target.spm"],
    );
}

#[test]
fn missing_special_tokens_are_errors() {
    for token in ["</s>", "<unk>", "<pad>"] {
        let mut d = Variant::load("legacy");
        d.vocab = edit_json(&d.vocab, |m| {
            m.remove(token);
        });
        assert_err(d.tokenizer(), &["vocab.json", token]);
    }
    // With added_tokens_decoder the id comes from the config; one that disagrees is an error.
    let mut d = Variant::load("shared");
    d.tokenizer_config = Some(edit_json(d.tokenizer_config.as_deref().unwrap(), |m| {
        let added = m["added_tokens_decoder"].as_object_mut().unwrap();
        let eos = added.remove("0").unwrap();
        added.insert("7".into(), eos);
    }));
    assert_err(d.tokenizer(), &["tokenizer_config.json", "</s>"]);
    // separate_vocabs without target_vocab.json.
    let mut d = Variant::load("separate");
    d.target_vocab = None;
    let err = assert_err(d.tokenizer(), &["target_vocab.json", "separate_vocabs"]);
    assert!(matches!(err, Error::MissingFile { .. }), "{err}");
    // The target vocabulary needs <unk> too.
    let mut d = Variant::load("separate");
    d.target_vocab = Some(edit_json(d.target_vocab.as_deref().unwrap(), |m| {
        m.remove("<unk>");
    }));
    assert_err(d.tokenizer(), &["target_vocab.json", "<unk>"]);
}

#[test]
fn malformed_json_files_are_errors_naming_the_file() {
    let cases: [(&str, &[u8], &str); 5] = [
        ("vocab.json", b"not json", "not valid JSON"),
        ("vocab.json", b"[\"a\"]", "not a JSON object"),
        ("vocab.json", br#"{"</s>": 0, "<unk>": "one"}"#, "\"<unk>\""),
        ("vocab.json", br#"{"</s>": 0, "<unk>": 0}"#, "id 0"),
        (
            "tokenizer_config.json",
            b"{\"separate_vocabs\": 1}",
            "separate_vocabs",
        ),
    ];
    for (file, bytes, needle) in cases {
        let mut d = Variant::load("shared");
        match file {
            "vocab.json" => d.vocab = bytes.to_vec(),
            _ => d.tokenizer_config = Some(bytes.to_vec()),
        }
        let err = assert_err(d.tokenizer(), &[file, needle]);
        assert!(matches!(err, Error::Json { .. }), "{err}");
    }
}

// --- the MarianMT fixtures of crates/convert (scripts/make_marian_fixture.py) ---------------

fn convert_fixtures() -> PathBuf {
    repo_root().join("crates/convert/tests/fixtures/marian")
}

fn check_tokenizer_entry(tok: &MarianTokenizer, entry: &Value, label: &str) {
    let text = entry
        .get("text")
        .or_else(|| entry.get("source"))
        .map(str_of)
        .expect("text");
    let enc = tok.encode(text);
    if let Some(pieces) = entry.get("pieces") {
        assert_eq!(enc.pieces, strings(pieces), "{label}: pieces of {text:?}");
    }
    if let Some(input_ids) = entry.get("input_ids") {
        assert_eq!(enc.ids, ids(input_ids), "{label}: ids of {text:?}");
    }
    // (Their `target_pieces` are not compared: in the shared-vocabulary variants they are
    // source pieces, which transformers itself does not give in target mode.)
    let target = tok.encode_target(text);
    if let Some(target_ids) = entry.get("target_ids") {
        assert_eq!(
            target.ids,
            ids(target_ids),
            "{label}: target ids of {text:?}"
        );
        if let Some(decoded) = entry.get("target_decoded") {
            assert_eq!(
                tok.decode(&target.ids).expect("decodes"),
                str_of(decoded),
                "{label}: decode of {text:?}"
            );
        }
    }
    for (ids_key, text_key) in [("greedy_ids", "greedy_text"), ("beam_ids", "beam_text")] {
        if let (Some(out), Some(want)) = (entry.get(ids_key), entry.get(text_key)) {
            assert_eq!(
                tok.decode(&ids(out)).expect("decodes"),
                str_of(want),
                "{label}: decode of {ids_key} for {text:?}"
            );
        }
    }
}

/// The tiny MarianMT checkpoint's tokenizer against its reference (transformers' pieces, ids
/// and decodes of generated ids); the fixture is committed, so its absence is a failure.
#[test]
fn tiny_marian_fixture_tokenizer_matches_its_reference() {
    let dir = convert_fixtures().join("tiny");
    let reference = convert_fixtures().join("tiny-reference.json");
    let tok = MarianTokenizer::from_dir(&dir).unwrap();
    let exp = json(&reference);
    let mut checked = 0;
    for key in ["test", "tokenizer_extra", "logits"] {
        for entry in exp.get(key).and_then(Value::as_array).into_iter().flatten() {
            check_tokenizer_entry(&tok, entry, &format!("tiny {key}"));
            checked += 1;
        }
    }
    assert!(
        checked > 0,
        "no tokenizer entries in {}",
        reference.display()
    );
}

/// The variants of the MarianMT fixture (separate vocabularies among them), each committed with
/// its reference: a missing variant directory or file is a failure.
#[test]
fn marian_fixture_variants_tokenizers_match_their_references() {
    let variants = convert_fixtures().join("variants");
    let entries =
        std::fs::read_dir(&variants).unwrap_or_else(|e| panic!("{}: {e}", variants.display()));
    let mut checked = 0;
    for entry in entries {
        let dir = entry.unwrap().path();
        let tok =
            MarianTokenizer::from_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let exp = json(&dir.join("reference.json"));
        let items = exp
            .get("tokenizer")
            .and_then(Value::as_array)
            .unwrap_or_else(|| panic!("{}: no `tokenizer` entries", dir.display()));
        assert!(!items.is_empty(), "{}: no tokenizer entries", dir.display());
        for item in items {
            check_tokenizer_entry(&tok, item, &dir.display().to_string());
        }
        checked += 1;
    }
    assert!(checked > 0, "no variants in {}", variants.display());
}

/// The MarianMT fixture's BPE and byte-fallback models are refused, naming the setting.
#[test]
fn marian_fixture_unsupported_models_are_refused() {
    let dir = convert_fixtures().join("spm");
    for (file, setting) in [
        ("bpe.spm", "model_type BPE"),
        ("byte-fallback.spm", "byte_fallback = true"),
    ] {
        let Ok(bytes) = std::fs::read(dir.join(file)) else {
            continue;
        };
        assert_err(
            SentencePieceModel::from_bytes(&bytes, file),
            &[file, setting],
        );
    }
}
