//! What bad configurations and refused resumes used to break (issue #19): each would fail on
//! the code before its fix.

mod common;

use std::path::Path;

use rosetta_train::{Resume, RunConfig, TrainError, TrainOptions, train};

use common::{serial, tiny_numbers_config};

fn options(resume: Resume) -> TrainOptions {
    TrainOptions {
        resume,
        progress: false,
        ..TrainOptions::default()
    }
}

fn short(run_dir: &Path, training: &str) -> RunConfig {
    tiny_numbers_config(
        run_dir,
        0.0,
        &format!("max_steps = 2\nvalidate_every = 0\n{training}\n[checkpoint]\nevery = 2"),
        "short.toml",
    )
}

#[test]
fn a_filter_that_drops_every_pair_is_an_error_not_an_endless_run() {
    let _turn = serial();
    let run = tempfile::tempdir().expect("tempdir");
    let mut config = short(run.path(), "");
    config.data.filter.max_source_tokens = 1;
    let err = train(&config, &options(Resume::No)).expect_err("nothing to train on");
    let message = err.to_string();
    assert!(
        message.contains("dropped every pair of the training split")
            && message.contains("data.filter"),
        "{message}"
    );
}

#[test]
fn a_tokenizer_trained_with_other_settings_is_not_reused() {
    let _turn = serial();
    let run = tempfile::tempdir().expect("tempdir");
    let mut config = short(run.path(), "max_epochs = 1");
    config.training.max_steps = Some(0);
    // A first run that made a tokenizer and stopped before any checkpoint.
    train(&config, &options(Resume::No)).expect("first run");
    assert!(run.path().join("tokenizer.json").is_file());
    std::fs::remove_dir_all(run.path().join("checkpoints")).ok();
    config.data.tokenizer.vocab_size = 340;
    let err = train(&config, &options(Resume::No)).expect_err("stale tokenizer");
    let message = err.to_string();
    assert!(
        message.contains("tokenizer.json") && message.contains("data.tokenizer"),
        "{message}"
    );
}

#[test]
fn a_resume_under_other_batching_or_seed_is_refused_and_changes_nothing() {
    let _turn = serial();
    let run = tempfile::tempdir().expect("tempdir");
    let config = short(run.path(), "seed = 3");
    train(&config, &options(Resume::No)).expect("first run");
    let written = std::fs::read_to_string(run.path().join("config.toml")).expect("config.toml");

    let mut batch = config.clone();
    batch.data.batch = rosetta_data::BatchSize::Tokens {
        max_tokens: 900,
        bucket: Default::default(),
    };
    batch.training.max_steps = Some(4);
    let err = train(&batch, &options(Resume::Latest)).expect_err("another batch budget");
    assert!(err.to_string().contains("`data.batch`"), "{err}");

    let mut seed = config.clone();
    seed.training.seed = 4;
    seed.training.max_steps = Some(4);
    let err = train(&seed, &options(Resume::Latest)).expect_err("another seed");
    assert!(err.to_string().contains("`training.seed`"), "{err}");

    // The refused resumes left the run directory's configuration as it was.
    assert_eq!(
        std::fs::read_to_string(run.path().join("config.toml")).expect("config.toml"),
        written
    );
    // A longer run with the same settings resumes.
    let mut longer = config.clone();
    longer.training.max_steps = Some(4);
    assert_eq!(
        train(&longer, &options(Resume::Latest))
            .expect("resume")
            .steps,
        4
    );
}

#[test]
fn the_written_config_holds_the_resolved_model_and_parses_back() {
    let _turn = serial();
    let run = tempfile::tempdir().expect("tempdir");
    let config = short(run.path(), "");
    train(&config, &options(Resume::No)).expect("run");
    let path = run.path().join("config.toml");
    let text = std::fs::read_to_string(&path).expect("config.toml");
    for key in [
        "d_ff = 64",
        "layer_norm_eps",
        "norm_position",
        "share_embeddings",
    ] {
        assert!(text.contains(key), "{key} missing from\n{text}");
    }
    let back = RunConfig::parse(&text, &path).expect("the written config parses");
    let state =
        rosetta_infer::checkpoint::read_state(&run.path().join("checkpoints/step-00000002"))
            .expect("state");
    let model = back
        .model_config(state.model.source_vocab_size, state.model.target_vocab_size)
        .expect("model config");
    assert_eq!(model, state.model);
}

#[test]
fn a_padding_id_other_than_the_pipelines_is_refused() {
    let run = tempfile::tempdir().expect("tempdir");
    let config = short(run.path(), "");
    let text = format!(
        "{}\n",
        config
            .to_toml()
            .expect("toml")
            .replace("[model]\n", "[model]\npad_id = 3\n")
    );
    assert!(text.contains("pad_id = 3"), "{text}");
    let err = RunConfig::parse(&text, Path::new("padded.toml")).expect_err("pad_id 3");
    assert!(matches!(err, TrainError::Config { .. }));
    assert!(
        err.to_string().contains("model.pad_id") && err.to_string().contains("padded.toml"),
        "{err}"
    );
    // The pipeline's own id, as resolved configurations written before wrote it, is accepted.
    let zero = text.replace("pad_id = 3", "pad_id = 0");
    assert_eq!(
        RunConfig::parse(&zero, Path::new("padded.toml")).expect("pad_id 0"),
        config
    );
}
