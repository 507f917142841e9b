//! A multilingual run (two directions in one model, target-language tags, a sampling
//! temperature): it resumes bit for bit after an interruption, validates each direction, and
//! its checkpoint translates each direction and refuses the others by name.

use std::path::Path;

use rosetta_infer::checkpoint;
use rosetta_infer::{TranslateOptions, Translator};
use rosetta_model::burn::tensor::Device;
use rosetta_train::run_log::{MetricsRecord, read_metrics};
use rosetta_train::{Resume, RunConfig, TrainOptions, train};

mod common;

use common::{numbers, parameters, serial};

/// English→French and French→English on the numbers' small splits, a tiny model, `steps`
/// optimizer steps at `temperature`.
fn config(run_dir: &Path, steps: u64, temperature: f64) -> RunConfig {
    let text = format!(
        r#"
output_dir = "{run}"
[model]
d_model = 32
n_heads = 2
d_ff = 64
n_encoder_layers = 1
n_decoder_layers = 1
dropout = 0.1
attention_dropout = 0.1
max_positions = 64
[data]
temperature = {temperature:?}
tokenizer = {{ model = "bpe", vocab_size = 300 }}
filter = {{ max_source_tokens = 64, max_target_tokens = 64 }}
batch = {{ by = "tokens", max_tokens = 600 }}
[[data.directions]]
source_lang = "en"
target_lang = "fr"
train = {{ source = "{n}/valid.en", target = "{n}/valid.fr" }}
valid = {{ source = "{n}/test.en", target = "{n}/test.fr" }}
[[data.directions]]
source_lang = "fr"
target_lang = "en"
train = [{{ source = "{n}/test.fr", target = "{n}/test.en", weight = 0.5 }}]
valid = {{ source = "{n}/valid.fr", target = "{n}/valid.en" }}
[training]
seed = 3
max_steps = {steps}
schedule = {{ kind = "noam", factor = 1.0, warmup = 10 }}
validate_every = 10
validate_at_epoch_end = false
bleu_sentences = 20
log_every = 1
[checkpoint]
every = 5
keep_last = 10
"#,
        run = run_dir.display(),
        n = numbers().display(),
    );
    RunConfig::parse(&text, Path::new("multilingual.toml")).expect("multilingual config")
}

fn options(resume: Resume) -> TrainOptions {
    TrainOptions {
        resume,
        ..TrainOptions::default()
    }
}

#[test]
fn a_multilingual_run_resumes_exactly_and_translates_each_direction() {
    let _serial = serial();
    let straight = tempfile::tempdir().expect("tempdir");
    train(&config(straight.path(), 30, 2.0), &options(Resume::No)).expect("straight");

    let split = tempfile::tempdir().expect("tempdir");
    train(&config(split.path(), 15, 2.0), &options(Resume::No)).expect("first part");
    train(&config(split.path(), 30, 2.0), &options(Resume::Latest)).expect("resumed");

    let records = |dir: &Path| read_metrics(&dir.join("metrics.jsonl")).expect("metrics");
    // Every loss, per step and per validated direction (times differ between the runs).
    let losses = |dir: &Path| -> Vec<(u64, f64, Vec<f64>)> {
        records(dir)
            .into_iter()
            .map(|r| match r {
                MetricsRecord::Train { step, loss, .. } => (step, loss, Vec::new()),
                MetricsRecord::Valid {
                    step,
                    loss,
                    directions,
                    ..
                } => (step, loss, directions.into_values().collect()),
            })
            .collect()
    };
    assert_eq!(
        losses(straight.path()),
        losses(split.path()),
        "losses differ after resuming"
    );
    let a = records(straight.path());
    assert_eq!(
        parameters(&checkpoint::step_dir(straight.path(), 30)),
        parameters(&checkpoint::step_dir(split.path(), 30)),
        "final parameters differ"
    );

    // Each validation reports both directions; the loss is their mean.
    let validations: Vec<_> = a
        .iter()
        .filter_map(|r| match r {
            MetricsRecord::Valid {
                loss,
                directions,
                bleu,
                directions_bleu,
                ..
            } => Some((*loss, directions.clone(), *bleu, directions_bleu.clone())),
            MetricsRecord::Train { .. } => None,
        })
        .collect();
    assert_eq!(validations.len(), 3);
    for (loss, directions, bleu, directions_bleu) in &validations {
        let keys: Vec<&str> = directions.keys().map(String::as_str).collect();
        assert_eq!(keys, ["en-fr", "fr-en"]);
        let mean = directions.values().sum::<f64>() / 2.0;
        assert!((loss - mean).abs() < 1e-9, "{loss} against {mean}");
        // BLEU too: each direction's first 20 pairs, their mean.
        let keys: Vec<&str> = directions_bleu.keys().map(String::as_str).collect();
        assert_eq!(keys, ["en-fr", "fr-en"]);
        let mean = directions_bleu.values().sum::<f64>() / 2.0;
        let bleu = bleu.expect("BLEU");
        assert!((bleu - mean).abs() < 1e-9, "{bleu} against {mean}");
    }

    // Another temperature would offer other pairs: resuming under it is refused.
    let err = train(&config(split.path(), 40, 3.0), &options(Resume::Latest))
        .expect_err("another temperature");
    assert!(err.to_string().contains("data.temperature"), "{err}");

    // The checkpoint records the directions and translates each; others are refused by name.
    let translator = Translator::load(straight.path(), &Device::flex()).expect("load");
    assert_eq!(translator.target_languages(), ["en", "fr"]);
    let options = TranslateOptions::default();
    let lines = vec!["twelve".to_string()];
    for (target, tag) in [("fr", 4), ("en", 5)] {
        let out = translator
            .translate_lines_into(&lines, &options, Some(target))
            .expect("translates");
        assert_eq!(out[0].source_tokens[0], tag, "{target}");
    }
    let refused = |target: Option<&str>| {
        translator
            .translate_lines_into(&lines, &options, target)
            .expect_err("refused")
            .to_string()
    };
    let err = refused(Some("de"));
    assert!(
        err.contains("`de`") && err.contains("en, fr") && err.contains("en-fr, fr-en"),
        "{err}"
    );
    let err = refused(None);
    assert!(
        err.contains("target-lang") && err.contains("en, fr"),
        "{err}"
    );
}
