//! Several directions in one run: the configuration's rules, the tags in the joint tokenizer
//! and at the start of every source, temperature sampling, and what is refused before any
//! work.

use std::path::PathBuf;

use rosetta_data::pipeline::{JOINT_TOKENIZER, TOKENIZER_SETTINGS};
use rosetta_data::{CorpusFiles, DataConfig, DataError, LanguagePair, PairSource, prepare};

fn numbers() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/numbers")
}

/// English→French and French→English over the numbers' small splits, as TOML.
fn config_text(extra: &str) -> String {
    let n = numbers();
    let file = |name: &str| n.join(name).display().to_string();
    format!(
        r#"{extra}
tokenizer = {{ vocab_size = 400 }}

[[directions]]
source_lang = "en"
target_lang = "fr"
train = {{ source = "{}", target = "{}" }}
valid = {{ source = "{}", target = "{}" }}

[[directions]]
source_lang = "fr"
target_lang = "en"
train = [{{ source = "{}", target = "{}", weight = 0.5 }}]
valid = {{ source = "{}", target = "{}" }}
"#,
        file("valid.en"),
        file("valid.fr"),
        file("test.en"),
        file("test.fr"),
        file("test.fr"),
        file("test.en"),
        file("valid.fr"),
        file("valid.en"),
    )
}

/// English→French on the numbers' small splits, bilingual, with a 400-subword tokenizer.
fn bilingual() -> DataConfig {
    let n = numbers();
    let mut config = DataConfig::bilingual(
        CorpusFiles::Parallel {
            source: n.join("valid.en"),
            target: n.join("valid.fr"),
        },
        CorpusFiles::Parallel {
            source: n.join("test.en"),
            target: n.join("test.fr"),
        },
    );
    config.tokenizer.vocab_size = 400;
    config
}

fn config(extra: &str) -> DataConfig {
    toml::from_str(&config_text(extra)).expect("multilingual config")
}

fn refusal(config: &DataConfig) -> String {
    let run = tempfile::tempdir().expect("tempdir");
    let err = prepare(config, run.path(), run.path()).expect_err("refused");
    assert!(
        std::fs::read_dir(run.path())
            .expect("run dir")
            .next()
            .is_none(),
        "nothing is written before a refusal: {err}"
    );
    err.to_string()
}

#[test]
fn every_source_starts_with_its_target_languages_tag() {
    let run = tempfile::tempdir().expect("tempdir");
    let config = config("");
    let data = prepare(&config, run.path(), run.path()).expect("prepare");
    let tokenizer = &data.tokenizers.source;
    // The tags are special tokens after Rosetta's four, in the order of first use.
    assert_eq!(tokenizer.language_tag("fr").expect("fr"), 4);
    assert_eq!(tokenizer.language_tag("en").expect("en"), 5);
    assert!(tokenizer.language_tag("de").is_err());
    assert_eq!(
        data.directions,
        vec![
            LanguagePair {
                source: "en".into(),
                target: "fr".into()
            },
            LanguagePair {
                source: "fr".into(),
                target: "en".into()
            },
        ]
    );
    // Typed text that spells a tag is text; decoding skips the tag.
    let typed = tokenizer.encode(">>fr<< un").expect("encode");
    assert!(!typed.contains(&4), "{typed:?}");
    let mut ids = vec![4];
    ids.extend(tokenizer.encode("deux cent un").expect("encode"));
    assert_eq!(tokenizer.decode(&ids).expect("decode"), "deux cent un");

    // Training pairs: the first corpus's sources start with >>fr<<, the second's with >>en<<,
    // and no other position holds a tag.
    let (mut s, mut t) = (Vec::new(), Vec::new());
    let first = data.train_splits[0].corpus.len();
    assert_eq!(
        data.train().len(),
        first + data.train_splits[1].corpus.len()
    );
    for i in 0..data.train().len() {
        data.train().read_pair(i, &mut s, &mut t).expect("read");
        let tag = if i < first { 4 } else { 5 };
        assert_eq!(s[0], tag, "pair {i}");
        assert!(!s[1..].contains(&4) && !s[1..].contains(&5), "pair {i}");
        assert!(!t.contains(&4) && !t.contains(&5), "pair {i}");
    }
    // Validation: both directions, each its range, tagged.
    assert_eq!(data.valid.len(), 2);
    let ranges: Vec<_> = data
        .valid_ranges
        .iter()
        .map(|(l, r)| (l.clone(), r.clone()))
        .collect();
    assert_eq!(ranges[0].0.as_deref(), Some("en-fr"));
    assert_eq!(ranges[1].0.as_deref(), Some("fr-en"));
    assert_eq!(ranges[0].1.end, ranges[1].1.start);
    assert_eq!(ranges[1].1.end, data.valid().len());
    for (label, range) in &data.valid_ranges {
        let tag = if label.as_deref() == Some("en-fr") {
            4
        } else {
            5
        };
        for i in range.clone() {
            assert_eq!(data.valid().source.get(i)[0], tag);
        }
    }
    // The untempered weights are the corpora's own.
    let weights: Vec<f64> = data.train().corpora().map(|(_, w)| w).collect();
    assert_eq!(weights, vec![1.0, 0.5]);
    assert!(data.to_string().contains("train en-fr"), "{data}");

    // Prepared again: the tokenizer and every split from the run directory and the cache.
    let again = prepare(&config, run.path(), run.path()).expect("again");
    assert!(!again.trained_tokenizers);
    assert!(again.train_splits.iter().all(|s| s.from_cache));
    assert!(again.valid.iter().all(|s| s.from_cache));
    assert_eq!(again.valid(), data.valid());
}

#[test]
fn a_temperature_scales_the_directions_weights() {
    let run = tempfile::tempdir().expect("tempdir");
    let data = prepare(&config("temperature = 4.0"), run.path(), run.path()).expect("prepare");
    let pairs: Vec<usize> = data.train_splits.iter().map(|s| s.corpus.len()).collect();
    let expected = rosetta_data::direction::temperature_multipliers(&pairs, 4.0);
    let weights: Vec<f64> = data.train().corpora().map(|(_, w)| w).collect();
    // Each corpus's own weight (1 and 0.5) times its direction's multiplier.
    assert!((weights[0] - expected[0]).abs() < 1e-12, "{weights:?}");
    assert!(
        (weights[1] - 0.5 * expected[1]).abs() < 1e-12,
        "{weights:?}"
    );
}

#[test]
fn impossible_multilingual_settings_are_refused_by_key_before_any_work() {
    // Temperature out of range.
    for t in ["0.0", "-2.0", "0.01"] {
        let err = refusal(&config(&format!("temperature = {t}")));
        assert!(err.contains("data.temperature"), "{err}");
    }
    // A temperature without directions.
    let mut bilingual = bilingual();
    bilingual.temperature = Some(5.0);
    let err = refusal(&bilingual);
    assert!(err.contains("data.temperature"), "{err}");
    // `train` beside directions.
    let mut both = config("");
    both.train = bilingual.train.clone();
    let err = refusal(&both);
    assert!(err.contains("data.train"), "{err}");
    // Neither.
    let mut neither = config("");
    neither.directions.clear();
    let err = refusal(&neither);
    assert!(err.contains("data.train"), "{err}");
    // The same direction twice.
    let mut twice = config("");
    let first = twice.directions[0].clone();
    twice.directions.push(first);
    let err = refusal(&twice);
    assert!(
        err.contains("data.directions") && err.contains("en-fr"),
        "{err}"
    );
    // A weight out of range names its direction.
    let err = refusal(&with_second_weight(config(""), 0.0));
    assert!(
        err.contains("data.train.weight") && err.contains("fr-en"),
        "{err}"
    );
    // A direction whose validation or training split holds no pair (it would count as loss 0,
    // or never be offered): refused once the splits are read, naming the direction.
    let empty = tempfile::tempdir().expect("tempdir");
    for side in ["e.en", "e.fr"] {
        std::fs::write(empty.path().join(side), "").expect("write");
    }
    let nothing = CorpusFiles::Parallel {
        source: empty.path().join("e.en"),
        target: empty.path().join("e.fr"),
    };
    let mut no_valid = config("");
    no_valid.directions[0].valid = nothing.clone();
    let run = tempfile::tempdir().expect("tempdir");
    let err = prepare(&no_valid, run.path(), run.path())
        .expect_err("no validation pairs")
        .to_string();
    assert!(
        err.contains("data.directions.valid") && err.contains("en-fr"),
        "{err}"
    );
    let mut no_train = config("");
    no_train.directions[1].train = nothing.into();
    let run = tempfile::tempdir().expect("tempdir");
    let err = prepare(&no_train, run.path(), run.path())
        .expect_err("no training pairs")
        .to_string();
    assert!(
        err.contains("data.directions.train") && err.contains("fr-en") && err.contains("e.en"),
        "{err}"
    );
    // A code that is not a language code: refused as the configuration is read, naming it.
    let text = config_text("").replacen("target_lang = \"fr\"", "target_lang = \"French\"", 1);
    let err = toml::from_str::<DataConfig>(&text)
        .expect_err("not a code")
        .to_string();
    assert!(err.contains("`French` is not a language code"), "{err}");
    assert!(err.contains("target_lang"), "{err}");
}

/// `config` with the first corpus of its second direction given `weight`.
fn with_second_weight(mut config: DataConfig, weight: f64) -> DataConfig {
    if let rosetta_data::TrainingCorpora::Several(list) = &mut config.directions[1].train
        && let Some(rosetta_data::WeightedCorpus::Parallel { weight: w, .. }) = list.first_mut()
    {
        *w = weight;
    }
    config
}

#[test]
fn a_tokenizer_without_the_tags_is_refused_and_not_saved() {
    // A bilingual run's tokenizer brought to a multilingual run: it has no >>fr<<.
    let brought = tempfile::tempdir().expect("tempdir");
    prepare(&bilingual(), brought.path(), brought.path()).expect("bilingual");
    let mut config = config("");
    config.tokenizer.from = Some(brought.path().join(JOINT_TOKENIZER));
    let run = tempfile::tempdir().expect("tempdir");
    let err = prepare(&config, run.path(), run.path()).expect_err("no tags");
    let message = err.to_string();
    assert!(matches!(err, DataError::InvalidSetting { .. }), "{message}");
    assert!(
        message.contains("data.directions.target_lang")
            && message.contains(">>fr<<")
            && message.contains("en-fr"),
        "{message}"
    );
    assert!(!run.path().join(JOINT_TOKENIZER).exists());
    assert!(!run.path().join(TOKENIZER_SETTINGS).exists());
}

#[test]
fn a_tag_spelt_by_an_ordinary_vocabulary_entry_is_refused() {
    // A tokenizer.json whose vocabulary holds `>>fr<<` as an ordinary subword: text would
    // encode as the tag. Made by editing a trained tokenizer's vocabulary.
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(&bilingual(), dir.path(), dir.path()).expect("bilingual");
    let path = dir.path().join(JOINT_TOKENIZER);
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
    let vocab = json["model"]["vocab"].as_object_mut().expect("vocab");
    let last = vocab.len();
    vocab.insert(">>fr<<".into(), serde_json::json!(last));
    let edited = dir.path().join("edited.json");
    std::fs::write(&edited, json.to_string()).expect("write");
    let tokenizer = rosetta_data::SubwordTokenizer::load(&edited).expect("loads");
    let err = tokenizer
        .language_tag("fr")
        .expect_err("collides")
        .to_string();
    assert!(err.contains(">>fr<<") && err.contains("collides"), "{err}");
}
