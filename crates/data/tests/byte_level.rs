//! The browser's tokenizer ([`ByteLevelTokenizer`], no `tokenizers` crate) against the
//! `tokenizers` crate on the same `tokenizer.json`: the same ids for every text, the same text
//! for every id sequence, the same vocabulary, for BPE and Unigram tokenizers Rosetta trains.

mod common;

use proptest::prelude::*;
use serde_json::Value;

use rosetta_data::byte_level::ByteLevelTokenizer;
use rosetta_data::{CorpusFiles, SubwordModel, SubwordTokenizer, TokenizerSettings, read_corpus};

/// Text in several scripts and with what GPT-2's pattern treats specially: contractions,
/// runs of spaces, tabs and newlines, digits, symbols, combining marks.
const TEXTS: &[&str] = &[
    "The cat's on the mat, isn't it? They'll say we've done it; I'm sure he'd agree.",
    "Die Katze saß auf der Matte. Zwei Hunde spielen mit einem Ball im Park.",
    "Le chat est sur le tapis ; l'enfant joue à la balle — c'est l'été !",
    "Kočka sedí na rohožce. Dva psi si hrají s míčem v parku.",
    "猫はマットの上に座っている。犬が二匹、公園でボールで遊んでいる。",
    "Кошка сидит на коврике: 2 собаки играют с мячом.",
    "  leading and   inner   spaces\tand\ttabs\nand\n\nnewlines  ",
    "numbers 3.14159, 1,000,000 and ½ ⅓ ٣ ४; symbols €100 → ∞ 🙂👍🏽 #hash @user",
    "e\u{301}te\u{301} (decomposed) and \u{e9}t\u{e9} (composed); \u{1100}\u{1161}\u{11a8}",
    "</s> <pad> <s> <unk> >>de<< typed as text",
];

fn train(model: SubwordModel, vocab_size: usize, texts: &[&str]) -> SubwordTokenizer {
    let settings = TokenizerSettings {
        model,
        vocab_size,
        min_frequency: 1,
        ..TokenizerSettings::default()
    };
    let tags = [">>de<<".to_string(), ">>fr<<".to_string()];
    SubwordTokenizer::train_with_tags(&settings, texts.iter().cycle().take(200), &tags)
        .expect("train")
}

/// Both readings of `json`.
fn both(json: &str) -> (SubwordTokenizer, ByteLevelTokenizer) {
    (
        SubwordTokenizer::from_json(json, "test").expect("tokenizers"),
        ByteLevelTokenizer::from_json(json, "test").expect("byte level"),
    )
}

fn assert_same_on(json: &str, texts: impl IntoIterator<Item = String>) {
    let (reference, lean) = both(json);
    assert_eq!(lean.vocab_size(), reference.vocab_size());
    for id in 0..reference.vocab_size() as u32 + 2 {
        let token = reference.id_to_token(id);
        assert_eq!(lean.id_to_token(id), token, "id {id}");
        if let Some(token) = token {
            assert_eq!(
                lean.token_to_id(&token),
                reference.token_to_id(&token),
                "{token:?}"
            );
        }
    }
    for text in texts {
        let ids = reference.encode(&text).expect("encode");
        assert_eq!(lean.encode(&text).expect("encode"), ids, "{text:?}");
        assert_eq!(
            lean.decode(&ids),
            reference.decode(&ids).expect("decode"),
            "{text:?}"
        );
    }
}

fn texts() -> impl Iterator<Item = String> {
    TEXTS
        .iter()
        .map(|t| t.to_string())
        .chain(TEXTS.iter().map(|t| t.to_uppercase()))
}

#[test]
fn bpe_and_unigram_encode_and_decode_as_the_tokenizers_crate() {
    for model in [SubwordModel::Bpe, SubwordModel::Unigram] {
        let json = train(model, 700, TEXTS).to_json().expect("json");
        assert_same_on(&json, texts());
    }
}

/// The vocabulary without the byte symbols of `chars`: those characters become `<unk>`
/// (fused in runs for Unigram, one each for BPE), as in `tokenizers`.
fn without_symbols(json: &str, chars: &[char]) -> String {
    let mut file: Value = serde_json::from_str(json).expect("json");
    let model = &mut file["model"];
    let drop = |token: &str| token.chars().any(|c| chars.contains(&c));
    if model["type"] == "BPE" {
        let vocab = model["vocab"].as_object_mut().expect("vocab");
        vocab.retain(|token, _| !drop(token));
        let merges = model["merges"].as_array_mut().expect("merges");
        merges.retain(|pair| {
            let pair: Vec<&str> = pair
                .as_array()
                .expect("pair")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            !pair.iter().any(|t| drop(t))
        });
    } else {
        // Unigram ids are positions: keep the pieces, give the dropped ones text that no input
        // produces (outside the byte alphabet).
        for (index, piece) in model["vocab"]
            .as_array_mut()
            .expect("vocab")
            .iter_mut()
            .enumerate()
        {
            if piece[0].as_str().is_some_and(drop) {
                piece[0] = Value::from(format!("\u{E000}{index}"));
            }
        }
    }
    file.to_string()
}

#[test]
fn characters_outside_the_vocabulary_become_unk_as_in_the_tokenizers_crate() {
    // 'z', 'q' and the byte symbols of 'é' (0xC3 0xA9: 'Ã', '©'); none is in a special token.
    let missing = ['z', 'q', 'Ã', '©'];
    for model in [SubwordModel::Bpe, SubwordModel::Unigram] {
        let json = without_symbols(&train(model, 500, TEXTS).to_json().expect("json"), &missing);
        let extra = ["zzz", "zq", "qzé", "été zébré", "a z b", "zz ee qq"].map(String::from);
        assert_same_on(&json, texts().chain(extra));
    }
}

#[test]
fn settings_rosetta_does_not_write_are_refused_by_key() {
    let json = train(SubwordModel::Bpe, 400, TEXTS)
        .to_json()
        .expect("json");
    let file: Value = serde_json::from_str(&json).expect("json");
    for (pointer, value, key) in [
        (
            "/normalizer",
            serde_json::json!({"type": "NFKC"}),
            "normalizer",
        ),
        (
            "/post_processor",
            serde_json::json!({"type": "ByteLevel"}),
            "post_processor",
        ),
        (
            "/pre_tokenizer/add_prefix_space",
            Value::Bool(true),
            "pre_tokenizer",
        ),
        (
            "/model/continuing_subword_prefix",
            Value::from("##"),
            "continuing_subword_prefix",
        ),
        ("/model/dropout", Value::from(0.1), "dropout"),
        ("/model/type", Value::from("WordPiece"), "model.type"),
        (
            "/added_tokens/0/special",
            Value::Bool(false),
            "added_tokens[0]",
        ),
        ("/added_tokens/1/id", Value::from(9), "added_tokens[1]"),
        (
            "/added_tokens/2/normalized",
            Value::Bool(true),
            "added_tokens[2]",
        ),
    ] {
        let mut changed = file.clone();
        *changed.pointer_mut(pointer).expect(pointer) = value;
        let err = ByteLevelTokenizer::from_json(&changed.to_string(), "tokenizer.json")
            .expect_err(pointer);
        let message = err.to_string();
        assert!(
            message.contains(key) && message.contains("tokenizer.json"),
            "{message}"
        );
    }
    assert!(ByteLevelTokenizer::from_json("{", "x").is_err());
}

/// A Unigram `tokenizer.json` written by hand: duplicate pieces, no unknown piece.
#[test]
fn a_unigram_without_unk_and_with_duplicates_behaves_as_in_the_tokenizers_crate() {
    let json = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
        "post_processor": null,
        "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
        "model": {"type": "Unigram", "unk_id": null, "byte_fallback": false,
                  "vocab": [["a", -1.0], ["ab", -1.5], ["a", -2.0], ["c", -1.0]]}
    })
    .to_string();
    let reference: tokenizers::Tokenizer = json.parse().expect("tokenizers");
    let lean = ByteLevelTokenizer::from_json(&json, "test").expect("byte level");
    assert_eq!(lean.vocab_size(), reference.get_vocab_size(true));
    // "ab": the unknown 'b' loses to the piece "ab", so no unknown piece is needed; "ba" and
    // "ac b" need one and fail in both.
    for text in ["ab", "ca", "caab", "ba", "ac b", ""] {
        let expected = reference.encode(text, false).map(|e| e.get_ids().to_vec());
        match (lean.encode(text), expected) {
            (Ok(ids), Ok(expected)) => assert_eq!(ids, expected, "{text:?}"),
            (Err(_), Err(_)) => {}
            (ours, theirs) => panic!("{text:?}: {ours:?} against {theirs:?}"),
        }
    }
}

fn any_text() -> impl Strategy<Value = String> {
    // Letters, marks, digits, whitespace of several kinds, apostrophes and symbols, from
    // several scripts, so that every branch of the pattern and of NFC is reached.
    let pieces = prop::sample::select(vec![
        "a",
        "e",
        "s",
        "t",
        "re",
        "ll",
        "d",
        "m",
        "'",
        "’",
        " ",
        "  ",
        "\t",
        "\n",
        "\r\n",
        "\u{a0}",
        "\u{2003}",
        "\u{3000}",
        "\u{301}",
        "\u{308}",
        "é",
        "ß",
        "ü",
        "ı",
        "İ",
        "猫",
        "マ",
        "ж",
        "ё",
        "ع",
        "١",
        "३",
        "7",
        "½",
        "Ⅻ",
        ".",
        ",",
        "-",
        "—",
        "€",
        "→",
        "🙂",
        "🏽",
        "\u{200d}",
        "\u{fe0f}",
        "\u{0}",
        "\u{7f}",
        "\u{ad}",
        "<",
        "/s>",
        ">>",
        "de",
        "<<",
        "\u{1100}",
        "\u{1161}",
        "\u{11a8}",
        "\u{e9}",
        "\u{10ffff}",
        "\u{e000}",
    ]);
    prop::collection::vec(pieces, 0..40).prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::fuzz_cases(400), ..ProptestConfig::default() })]

    #[test]
    fn any_text_encodes_and_decodes_as_in_the_tokenizers_crate(
        text in any_text(),
        ids in prop::collection::vec(0u32..720, 0..30),
    ) {
        thread_local! {
            static PAIRS: Vec<(SubwordTokenizer, ByteLevelTokenizer)> =
                [SubwordModel::Bpe, SubwordModel::Unigram]
                    .map(|m| both(&train(m, 700, TEXTS).to_json().expect("json")))
                    .into();
        }
        PAIRS.with(|pairs| -> Result<(), TestCaseError> {
            for (reference, lean) in pairs {
                prop_assert_eq!(lean.encode(&text).expect("encode"), reference.encode(&text).expect("encode"));
                // Any ids, including special ones, ones outside the vocabulary and ones that
                // split a character's bytes.
                prop_assert_eq!(lean.decode(&ids), reference.decode(&ids).expect("decode"));
            }
            Ok(())
        })?;
    }
}

#[test]
#[ignore = "needs ../shared/data (the shared corpora); .ci/run runs it with --ignored"]
fn multi30k_in_four_languages_encodes_as_the_tokenizers_crate() {
    let data = common::shared_data();
    let mut train_texts = Vec::new();
    let mut valid_texts = Vec::new();
    for (source, target) in [("en", "de"), ("fr", "cs")] {
        let read = |split: &str| {
            read_corpus(&CorpusFiles::Parallel {
                source: data.join(format!("multi30k/{split}.{source}")),
                target: data.join(format!("multi30k/{split}.{target}")),
            })
            .expect("multi30k")
        };
        let train = read("train");
        train_texts.extend(train.source.into_iter().take(5000));
        train_texts.extend(train.target.into_iter().take(5000));
        let valid = read("val");
        valid_texts.extend(valid.source);
        valid_texts.extend(valid.target);
    }
    for model in [SubwordModel::Bpe, SubwordModel::Unigram] {
        let settings = TokenizerSettings {
            model,
            vocab_size: 8000,
            ..TokenizerSettings::default()
        };
        let json = SubwordTokenizer::train(&settings, train_texts.iter())
            .expect("train")
            .to_json()
            .expect("json");
        assert_same_on(&json, valid_texts.iter().cloned());
    }
}
