//! Property-based tests (fuzzing on stable Rust, with `proptest`) of what reads user input:
//! the corpus reader on arbitrary bytes and the tokenizer on arbitrary text. The case count is
//! fixed for `cargo test` (64) and raised by `ROSETTA_FUZZ_CASES` (`scripts/fuzz.sh`).

mod common;

use std::sync::OnceLock;

use proptest::prelude::*;
use unicode_normalization::UnicodeNormalization;

use rosetta_data::{CorpusFiles, SubwordModel, SubwordTokenizer, TokenizerSettings, read_corpus};

/// Bytes biased towards what breaks line readers: line ends, tabs, invalid UTF-8, spaces.
fn corpus_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            4 => prop::sample::select(b"ab \t\n\r".to_vec()),
            2 => any::<u8>(),
            1 => prop::sample::select(vec![0xC3u8, 0xA9, 0xFF, 0xFE, 0xE2, 0x80]),
        ],
        0..300,
    )
}

/// One BPE and one unigram tokenizer, trained once on a few hundred varied sentences.
fn tokenizers() -> &'static [SubwordTokenizer; 2] {
    static TOKENIZERS: OnceLock<[SubwordTokenizer; 2]> = OnceLock::new();
    TOKENIZERS.get_or_init(|| {
        let texts: Vec<String> = (0..400)
            .map(|i| {
                format!(
                    "sentence {i}: a man rides a horse, ein Mann reitet — café n°{}",
                    i * 7
                )
            })
            .collect();
        let train = |model| {
            let settings = TokenizerSettings {
                model,
                vocab_size: 300,
                ..TokenizerSettings::default()
            };
            SubwordTokenizer::train(&settings, texts.iter()).expect("train")
        };
        [train(SubwordModel::Bpe), train(SubwordModel::Unigram)]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(common::fuzz_cases(64)))]

    #[test]
    fn the_corpus_reader_never_panics_and_names_the_file(
        source in corpus_bytes(),
        target in corpus_bytes(),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let (s, t) = (dir.path().join("fuzz.src"), dir.path().join("fuzz.tgt"));
        std::fs::write(&s, &source).expect("write");
        std::fs::write(&t, &target).expect("write");
        match read_corpus(&CorpusFiles::Parallel { source: s, target: t }) {
            Ok(corpus) => {
                prop_assert_eq!(corpus.source.len(), corpus.target.len());
                prop_assert!(corpus.source.iter().chain(&corpus.target).all(|l| !l.contains('\n')));
            }
            Err(e) => {
                let message = e.to_string();
                prop_assert!(message.contains("fuzz.src") || message.contains("fuzz.tgt"), "{}", message);
            }
        }
    }

    /// Decoding gives back the text up to canonical equivalence: the same NFC form. (Compared
    /// in NFC on both sides: the `tokenizers` crate normalizes with older Unicode tables, so a
    /// combining mark assigned since, such as U+10EAB, keeps its place there where today's
    /// tables reorder it; 10,000 cases found that.)
    #[test]
    fn tokenizers_give_back_the_text(text in any::<String>()) {
        let nfc: String = text.nfc().collect();
        for tokenizer in tokenizers() {
            let ids = tokenizer.encode(&text).expect("encode");
            let back = tokenizer.decode(&ids).expect("decode");
            let back_nfc: String = back.nfc().collect();
            prop_assert_eq!(back_nfc, nfc.clone());
        }
    }

    #[test]
    fn special_token_text_in_input_is_plain_text(
        before in "[a-z ]{0,8}",
        special in prop::sample::select(vec!["<pad>", "<unk>", "<s>", "</s>"]),
        after in "[a-z ]{0,8}",
    ) {
        let text = format!("{before}{special}{after}");
        for tokenizer in tokenizers() {
            let ids = tokenizer.encode(&text).expect("encode");
            prop_assert!(ids.iter().all(|&id| id > 3), "{:?} encoded to special ids {:?}", text, ids);
            prop_assert_eq!(tokenizer.decode(&ids).expect("decode"), text.clone());
        }
    }
}
