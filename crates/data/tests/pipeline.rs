//! The whole data pipeline on the repository's own numbers corpus.

use std::path::PathBuf;

use rosetta_data::pipeline::JOINT_TOKENIZER;
use rosetta_data::{
    BatchSize, Bucketing, CorpusFiles, DataConfig, LengthFilter, TokenizerSettings, plan_epoch,
    prepare,
};

fn config() -> DataConfig {
    let numbers = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/numbers");
    DataConfig {
        train: CorpusFiles::Parallel {
            source: numbers.join("train.en"),
            target: numbers.join("train.fr"),
        },
        valid: CorpusFiles::Parallel {
            source: numbers.join("valid.en"),
            target: numbers.join("valid.fr"),
        },
        test: None,
        tokenizer: TokenizerSettings {
            vocab_size: 400,
            ..TokenizerSettings::default()
        },
        filter: LengthFilter {
            max_source_tokens: 9,
            max_target_tokens: 11,
            max_length_ratio: None,
        },
        batch: BatchSize::Tokens {
            max_tokens: 1024,
            bucket: Bucketing::BothSides,
        },
        cache_dir: None,
    }
}

#[test]
fn prepare_trains_saves_caches_and_reuses() {
    let run = tempfile::tempdir().expect("tempdir");
    let config = config();
    let first = prepare(&config, run.path(), run.path()).expect("prepare");
    assert!(first.trained_tokenizers);
    assert!(run.path().join(JOINT_TOKENIZER).is_file());
    assert!(!first.train.from_cache);
    assert_eq!(first.train.data.read.read, 20_000);
    let f = first.train.data.filter;
    assert_eq!(f.offered, 20_000);
    assert_eq!(f.kept + f.too_long + f.bad_ratio, f.offered);
    assert!(
        f.too_long > 0,
        "the tight filter should drop the longest numbers: {f:?}"
    );
    let summary = first.to_string();
    assert!(
        summary.contains("train") && summary.contains("too long"),
        "{summary}"
    );

    // Second run: tokenizer reloaded, encoded corpora from the cache, identical content.
    let second = prepare(&config, run.path(), run.path()).expect("prepare again");
    assert!(!second.trained_tokenizers);
    assert!(second.train.from_cache && second.valid.from_cache);
    assert_eq!(second.train(), first.train());
    assert_eq!(
        second.tokenizers.fingerprint().expect("fp"),
        first.tokenizers.fingerprint().expect("fp")
    );

    // A corrupted cache file is not trusted: it is rebuilt.
    let cache = run.path().join("cache");
    for entry in std::fs::read_dir(&cache).expect("cache dir") {
        let path = entry.expect("entry").path();
        let mut bytes = std::fs::read(&path).expect("read");
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x55;
        std::fs::write(&path, bytes).expect("corrupt");
    }
    let third = prepare(&config, run.path(), run.path()).expect("prepare after corruption");
    assert!(!third.train.from_cache);
    assert_eq!(third.train(), first.train());

    // Batches of the prepared corpus respect the filter's lengths.
    let lengths = third.train().framed_lengths();
    assert!(lengths.iter().all(|(s, t)| *s <= 9 && *t <= 11));
    let batches = plan_epoch(&lengths, config.batch, 1, 0).expect("plan");
    assert!(!batches.is_empty());
}

#[test]
fn data_config_refuses_unknown_keys() {
    let text = r#"
        train = { source = "a.en", target = "a.fr" }
        valid = { source = "b.en", target = "b.fr" }
        tokenizer = { model = "unigram", vocab_size = 500, jont = true }
    "#;
    let err = toml::from_str::<DataConfig>(text).expect_err("typo");
    assert!(err.to_string().contains("jont"), "{err}");
    let ok = toml::from_str::<DataConfig>(
        "train = { tsv = \"fra.txt\" }\nvalid = { source = \"b.en\", target = \"b.fr\" }\nbatch = { by = \"sentences\", sentences = 32 }\n",
    )
    .expect("valid config");
    assert_eq!(ok.batch, BatchSize::Sentences { sentences: 32 });
    assert_eq!(
        ok.train,
        CorpusFiles::Tsv {
            tsv: "fra.txt".into()
        }
    );
}
