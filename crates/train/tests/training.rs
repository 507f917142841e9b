//! The training loop end to end on the repository's numbers corpus: exact resume, refusals of
//! bad input, non-finite loss, and a tiny model overfitting a tiny corpus.

use std::path::Path;

use rosetta_infer::checkpoint;
use rosetta_infer::{CheckpointFault, InferError};
use rosetta_model::burn::module::Module;
use rosetta_model::burn::tensor::Device;
use rosetta_train::run_log::{MetricsRecord, read_metrics};
use rosetta_train::{
    Resume, ResumeConflict, RunConfig, StopReason, TrainError, TrainOptions, train,
};

mod common;

use common::{Collect, parameters, serial, tiny_numbers_config};

/// A tiny run on the numbers corpus (dropout on, two batches per step, to exercise both).
fn tiny_config(run_dir: &Path) -> RunConfig {
    let training = r#"
seed = 7
max_steps = 12
accumulate = 2
clip_norm = 1.0
schedule = { kind = "noam", factor = 1.0, warmup = 10 }
validate_every = 0
log_every = 1
[checkpoint]
every = 3
keep_last = 10
"#;
    tiny_numbers_config(run_dir, 0.1, training, "tiny.toml")
}

fn options(resume: Resume) -> TrainOptions {
    TrainOptions {
        resume,
        ..TrainOptions::default()
    }
}

fn train_losses(run_dir: &Path) -> Vec<(u64, f64)> {
    read_metrics(&run_dir.join("metrics.jsonl"))
        .expect("metrics")
        .into_iter()
        .filter_map(|r| match r {
            MetricsRecord::Train { step, loss, .. } => Some((step, loss)),
            MetricsRecord::Valid { .. } => None,
        })
        .collect()
}

#[test]
fn resume_continues_exactly_bit_for_bit() {
    let _serial = serial();
    let straight = tempfile::tempdir().expect("tempdir");
    let config = tiny_config(straight.path());
    let summary = train(&config, &options(Resume::No)).expect("straight run");
    assert_eq!((summary.steps, summary.stop), (12, StopReason::MaxSteps));

    let split = tempfile::tempdir().expect("tempdir");
    let mut first = tiny_config(split.path());
    first.training.max_steps = Some(6);
    train(&first, &options(Resume::No)).expect("first half");
    let second = tiny_config(split.path());
    let summary = train(&second, &options(Resume::Latest)).expect("resumed half");
    assert_eq!(summary.steps, 12);

    let a = train_losses(straight.path());
    let b = train_losses(split.path());
    assert_eq!(a.len(), 12);
    assert_eq!(a, b, "per-step losses differ after resuming");
    let last_a = checkpoint::step_dir(straight.path(), 12);
    let last_b = checkpoint::step_dir(split.path(), 12);
    assert_eq!(
        parameters(&last_a),
        parameters(&last_b),
        "final parameters differ"
    );
}

#[test]
fn a_new_run_refuses_a_directory_with_checkpoints() {
    let _serial = serial();
    let run = tempfile::tempdir().expect("tempdir");
    let mut config = tiny_config(run.path());
    config.training.max_steps = Some(3);
    train(&config, &options(Resume::No)).expect("first run");
    let err = train(&config, &options(Resume::No)).expect_err("no --resume");
    assert!(
        matches!(&err, TrainError::Resume { conflict, .. } if matches!(**conflict, ResumeConflict::RunExists)),
        "{err}"
    );
    assert!(err.to_string().contains("--resume"), "{err}");
}

#[test]
fn missing_corpus_file_names_the_file() {
    let _serial = serial();
    let run = tempfile::tempdir().expect("tempdir");
    let mut config = tiny_config(run.path());
    config.data.valid = Some(rosetta_data::CorpusFiles::Parallel {
        source: "/nonexistent/valid.en".into(),
        target: "/nonexistent/valid.fr".into(),
    });
    let err = train(&config, &options(Resume::No)).expect_err("missing file");
    assert!(err.to_string().contains("/nonexistent/valid.en"), "{err}");
}

#[test]
fn resume_with_another_vocabulary_is_refused_and_keeps_checkpoints() {
    let _serial = serial();
    let run = tempfile::tempdir().expect("tempdir");
    let mut config = tiny_config(run.path());
    config.training.max_steps = Some(3);
    train(&config, &options(Resume::No)).expect("first run");
    let mut changed = config.clone();
    changed.data.tokenizer.vocab_size = 350;
    changed.training.max_steps = Some(6);
    let err = train(&changed, &options(Resume::Latest)).expect_err("vocabulary changed");
    match &err {
        TrainError::Resume { conflict, .. } => match conflict.as_ref() {
            ResumeConflict::TokenizerSettings { saved, now } => {
                assert_eq!((saved.vocab_size, now.vocab_size), (300, 350));
            }
            other => panic!("expected other tokenizer settings, got {other}"),
        },
        other => panic!("expected a refused resume, got {other}"),
    }
    assert!(err.to_string().contains("vocabulary"), "{err}");
    checkpoint::read_state(&checkpoint::step_dir(run.path(), 3)).expect("checkpoint intact");
}

#[test]
fn a_model_only_checkpoint_is_refused_for_resume_and_names_itself() {
    let _serial = serial();
    let run = tempfile::tempdir().expect("tempdir");
    let mut config = tiny_config(run.path());
    config.training.max_steps = Some(3);
    train(&config, &options(Resume::No)).expect("three steps");
    let step3 = checkpoint::step_dir(run.path(), 3);
    // What translation reads of a training checkpoint: the same state.json, its own part.
    let state = checkpoint::read_state(&step3).expect("verified");
    assert_eq!(state.step, 3);
    let full = rosetta_train::checkpoint::read_state(&step3).expect("a training checkpoint");
    assert_eq!((full.checkpoint, full.seed), (state.clone(), 7));

    // A model-only copy (what averages and imports write): it translates, but has no training
    // state to resume from.
    let model_only = run.path().join("model-only");
    let model = checkpoint::load_model(&step3, &state, &Device::flex()).expect("model");
    checkpoint::save(&model_only, &model, None, &state).expect("model-only checkpoint");
    let err = train(&config, &options(Resume::From(model_only.clone())))
        .expect_err("no optimizer state to resume from");
    match &err {
        TrainError::Resume { path, conflict } => {
            assert_eq!(path, &model_only);
            assert!(
                matches!(conflict.as_ref(), ResumeConflict::ModelOnly { step: 3 }),
                "{conflict}"
            );
        }
        other => panic!("expected a refused resume, got {other}"),
    }
    assert!(err.to_string().contains("[model] from"), "{err}");
}

#[test]
fn a_truncated_checkpoint_is_refused_and_earlier_ones_stay() {
    let _serial = serial();
    let run = tempfile::tempdir().expect("tempdir");
    let mut config = tiny_config(run.path());
    config.training.max_steps = Some(6);
    train(&config, &options(Resume::No)).expect("first run");
    let latest = checkpoint::step_dir(run.path(), 6);
    let model = latest.join("model.bpk");
    let bytes = std::fs::read(&model).expect("read");
    std::fs::write(&model, &bytes[..bytes.len() / 2]).expect("truncate");
    config.training.max_steps = Some(9);
    let err = train(&config, &options(Resume::Latest)).expect_err("corrupt");
    // Refused as corrupt, the file named, by its kind (its hash disagrees with state.json).
    match &err {
        TrainError::Infer(InferError::Checkpoint {
            path,
            fault: CheckpointFault::Corrupt { recorded_in },
        }) => assert_eq!((path, *recorded_in), (&model, "state.json")),
        other => panic!("expected a corrupt checkpoint, got {other}"),
    }
    assert!(err.to_string().contains("corrupt"), "{err}");
    let earlier = checkpoint::step_dir(run.path(), 3);
    checkpoint::read_state(&earlier).expect("earlier checkpoint still verifies");
    // Resuming explicitly from the earlier one works.
    let summary = train(&config, &options(Resume::From(earlier))).expect("resume from step 3");
    assert_eq!(summary.steps, 9);
}

#[test]
fn a_non_finite_loss_stops_with_the_step_and_keeps_the_last_good_checkpoint() {
    let _serial = serial();
    let run = tempfile::tempdir().expect("tempdir");
    let mut config = tiny_config(run.path());
    config.training.schedule = rosetta_train::LrSchedule::InverseSqrt {
        peak: 1e30,
        warmup: 0,
    };
    config.training.clip_norm = 0.0;
    config.checkpoint.every = 1;
    let err = train(&config, &options(Resume::No)).expect_err("diverges");
    let TrainError::NonFiniteLoss { step, .. } = err else {
        panic!("expected a non-finite loss, got {err}");
    };
    assert!(err.to_string().contains(&format!("step {step}")), "{err}");
    assert!(step >= 2, "step 1 starts from finite weights");
    checkpoint::read_state(&checkpoint::step_dir(run.path(), step - 1))
        .expect("last good checkpoint kept");
}

/// A tiny model (d_model 32, 2 heads, 1 + 1 layers, `dropout`) on six English-French pairs
/// written into `dir`, trained and validated on them in batches of `sentences`, with its run
/// directory `dir/run`; `rest` is the `[training]` section and any after it.
fn six_pairs_config(dir: &Path, dropout: f64, sentences: usize, rest: &str) -> RunConfig {
    let pairs = [
        ("one", "un"),
        ("two", "deux"),
        ("seventy-one", "soixante et onze"),
        ("eighty", "quatre-vingts"),
        ("four hundred seventy-one", "quatre cent soixante et onze"),
        ("two thousand", "deux mille"),
    ];
    let en: String = pairs.iter().map(|p| format!("{}\n", p.0)).collect();
    let fr: String = pairs.iter().map(|p| format!("{}\n", p.1)).collect();
    std::fs::write(dir.join("t.en"), en).expect("write");
    std::fs::write(dir.join("t.fr"), fr).expect("write");
    let text = format!(
        r#"
output_dir = "{run}"
[model]
d_model = 32
n_heads = 2
d_ff = 64
n_encoder_layers = 1
n_decoder_layers = 1
dropout = {dropout:?}
attention_dropout = {dropout:?}
max_positions = 32
[data]
train = {{ source = "{d}/t.en", target = "{d}/t.fr" }}
valid = {{ source = "{d}/t.en", target = "{d}/t.fr" }}
tokenizer = {{ model = "bpe", vocab_size = 300 }}
filter = {{ max_source_tokens = 32, max_target_tokens = 32 }}
batch = {{ by = "sentences", sentences = {sentences} }}
{rest}
"#,
        run = dir.join("run").display(),
        d = dir.display()
    );
    RunConfig::parse(&text, Path::new("six-pairs.toml")).expect("config")
}

/// A run of 10 steps over the six pairs in batches of 2 (3 steps an epoch), validating and
/// saving every 4 steps; `epoch_ends` sets both `validate_at_epoch_end` and
/// `checkpoint.at_epoch_end`. Returns the steps validated at and the steps saved.
fn validated_and_saved(epoch_ends: bool) -> (Vec<u64>, Vec<u64>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let rest = format!(
        "[training]\nmax_steps = 10\nvalidate_every = 4\nvalidate_at_epoch_end = {epoch_ends}\n\
         [checkpoint]\nevery = 4\nat_epoch_end = {epoch_ends}\nkeep_last = 100\nkeep_best = false\n"
    );
    let config = six_pairs_config(dir.path(), 0.1, 2, &rest);
    train(&config, &options(Resume::No)).expect("train");
    let run = &config.output_dir;
    let validated = read_metrics(&run.join("metrics.jsonl"))
        .expect("metrics")
        .into_iter()
        .filter_map(|r| match r {
            MetricsRecord::Valid { step, .. } => Some(step),
            MetricsRecord::Train { .. } => None,
        })
        .collect();
    let mut saved: Vec<u64> = std::fs::read_dir(run.join("checkpoints"))
        .expect("checkpoints")
        .map(|e| {
            let name = e.expect("entry").file_name().to_string_lossy().into_owned();
            let step = name.trim_start_matches("step-").parse();
            step.unwrap_or_else(|_| panic!("checkpoint directory {name}"))
        })
        .collect();
    saved.sort_unstable();
    (validated, saved)
}

#[test]
fn epoch_end_validation_and_saving_can_be_turned_off() {
    let _serial = serial();
    assert_eq!(
        validated_and_saved(true),
        (vec![3, 4, 6, 8, 9], vec![3, 4, 6, 8, 9, 10])
    );
    assert_eq!(validated_and_saved(false), (vec![4, 8], vec![4, 8, 10]));
}

#[test]
fn a_tiny_model_overfits_a_tiny_corpus() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let training = r#"
[training]
max_steps = 300
label_smoothing = 0.0
schedule = { kind = "inverse_sqrt", peak = 0.003, warmup = 30 }
validate_every = 300
log_every = 10
bleu_sentences = 6
best_by = "bleu"
[checkpoint]
every = 0
"#;
    let config = six_pairs_config(dir.path(), 0.0, 6, training);
    let run = config.output_dir.clone();
    let summary = train(&config, &options(Resume::No)).expect("train");
    let loss = summary.best_valid_loss.expect("validated");
    assert!(
        loss < 0.05,
        "a tiny model should memorise six pairs, validation loss {loss}"
    );
    let losses = train_losses(&run);
    assert!(
        losses.first().map(|l| l.1).unwrap_or(0.0) > 2.0,
        "{losses:?}"
    );
}

#[test]
fn averaging_gives_the_element_wise_mean_and_refuses_other_runs() {
    let _serial = serial();
    let run = tempfile::tempdir().expect("tempdir");
    let mut config = tiny_config(run.path());
    config.training.max_steps = Some(6);
    train(&config, &options(Resume::No)).expect("train");
    let dirs = rosetta_infer::average::last_checkpoints(run.path(), 2).expect("two checkpoints");
    assert_eq!(
        dirs,
        vec![
            checkpoint::step_dir(run.path(), 3),
            checkpoint::step_dir(run.path(), 6)
        ]
    );
    let (model, state) = rosetta_infer::average::average(&dirs, &Device::flex()).expect("average");
    assert_eq!(state.step, 6);
    let mut collect = Collect(Vec::new());
    model.visit(&mut collect);
    let (a, b) = (parameters(&dirs[0]), parameters(&dirs[1]));
    for ((mean, x), y) in collect.0.iter().zip(&a).zip(&b) {
        for ((m, x), y) in mean.iter().zip(x).zip(y) {
            assert!(
                (m - (x + y) / 2.0).abs() <= 1e-6 * (1.0 + m.abs()),
                "{m} vs {x}, {y}"
            );
        }
    }
    assert_ne!(
        a, b,
        "the two checkpoints differ, so the test means something"
    );

    let other = tempfile::tempdir().expect("tempdir");
    let mut other_config = tiny_config(other.path());
    other_config.training.max_steps = Some(3);
    other_config.model.d_ff = 48;
    train(&other_config, &options(Resume::No)).expect("other run");
    let mixed = vec![dirs[1].clone(), checkpoint::step_dir(other.path(), 3)];
    let err = rosetta_infer::average::average(&mixed, &Device::flex()).expect_err("different runs");
    assert!(
        matches!(
            err,
            InferError::Checkpoint {
                fault: CheckpointFault::OtherRun { .. },
                ..
            }
        ) && err.to_string().contains("only checkpoints of one run"),
        "{err}"
    );
    let err = rosetta_infer::average::last_checkpoints(run.path(), 5).expect_err("two, not five");
    assert!(
        matches!(
            err,
            InferError::Checkpoint {
                fault: CheckpointFault::TooFewCheckpoints { found: 2, asked: 5 },
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_stop_request_saves_a_checkpoint_and_resumes() {
    let _serial = serial();
    let run = tempfile::tempdir().expect("tempdir");
    let config = tiny_config(run.path());
    let interrupted = TrainOptions {
        stop: std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true)),
        ..options(Resume::No)
    };
    let summary = train(&config, &interrupted).expect("interrupted run");
    assert_eq!((summary.steps, summary.stop), (1, StopReason::Interrupted));
    checkpoint::read_state(&checkpoint::step_dir(run.path(), 1))
        .expect("checkpoint saved on interrupt");
    let resumed = train(&config, &options(Resume::Latest)).expect("resume");
    assert_eq!((resumed.steps, resumed.stop), (12, StopReason::MaxSteps));
}

#[test]
fn a_time_budget_stops_with_a_checkpoint_and_a_resume_continues_it() {
    let _serial = serial();
    // A budget every step outlasts: the run stops after its first step, with a checkpoint.
    let tiny = tempfile::tempdir().expect("tempdir");
    let mut config = tiny_config(tiny.path());
    config.training.max_minutes = Some(1e-9);
    let summary = train(&config, &options(Resume::No)).expect("run");
    assert_eq!((summary.steps, summary.stop), (1, StopReason::TimeBudget));
    checkpoint::read_state(&checkpoint::step_dir(tiny.path(), 1)).expect("step 1 saved");
    // Resumed without the budget, it ends as an uninterrupted run does, bit for bit.
    let summary = train(&tiny_config(tiny.path()), &options(Resume::Latest)).expect("resume");
    assert_eq!((summary.steps, summary.stop), (12, StopReason::MaxSteps));
    let straight = tempfile::tempdir().expect("tempdir");
    train(&tiny_config(straight.path()), &options(Resume::No)).expect("straight run");
    assert_eq!(train_losses(tiny.path()), train_losses(straight.path()));
    assert_eq!(
        parameters(&checkpoint::step_dir(tiny.path(), 12)),
        parameters(&checkpoint::step_dir(straight.path(), 12)),
        "a run stopped by its budget resumes exactly"
    );

    let run = tempfile::tempdir().expect("tempdir");
    let mut first = tiny_config(run.path());
    first.training.max_steps = Some(6);
    train(&first, &options(Resume::No)).expect("six steps");
    let spent = rosetta_train::checkpoint::read_state(&checkpoint::step_dir(run.path(), 6))
        .expect("step 6")
        .training_seconds;
    assert!(spent > 0.0, "{spent}");

    // A budget the first session already spent: the resumed run takes no step (a budget that
    // restarted at 0 would train on).
    let mut resumed = tiny_config(run.path());
    resumed.training.max_minutes = Some(spent / 60.0 / 2.0);
    let summary = train(&resumed, &options(Resume::Latest)).expect("resume");
    assert_eq!((summary.steps, summary.stop), (6, StopReason::TimeBudget));

    // A larger budget: two more steps, and the time of the first session carried over.
    resumed.training.max_minutes = Some(spent / 60.0 + 10.0);
    resumed.training.max_steps = Some(8);
    let started = std::time::Instant::now();
    let summary = train(&resumed, &options(Resume::Latest)).expect("resume");
    let session = started.elapsed().as_secs_f64();
    assert_eq!((summary.steps, summary.stop), (8, StopReason::MaxSteps));
    let state = rosetta_train::checkpoint::read_state(&checkpoint::step_dir(run.path(), 8))
        .expect("step 8");
    assert!(
        state.training_seconds > spent && state.training_seconds <= spent + session,
        "{} after {spent} + {session}",
        state.training_seconds
    );
}

/// One protocol-buffer field: its number and value (varint, fixed 32/64 bits, or bytes).
#[derive(Debug)]
enum Field {
    Varint(u64),
    Fixed64([u8; 8]),
    Fixed32([u8; 4]),
    Bytes(Vec<u8>),
}

/// Decodes protocol-buffer wire format by hand (independently of the writer's `prost`).
fn fields(mut data: &[u8]) -> Vec<(u64, Field)> {
    fn varint(data: &mut &[u8]) -> u64 {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = data[0];
            *data = &data[1..];
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                break;
            }
        }
        value
    }
    let mut out = Vec::new();
    while !data.is_empty() {
        let key = varint(&mut data);
        let field = match key & 7 {
            0 => Field::Varint(varint(&mut data)),
            1 => {
                let (head, rest) = data.split_at(8);
                data = rest;
                Field::Fixed64(head.try_into().expect("8 bytes"))
            }
            2 => {
                let len = varint(&mut data) as usize;
                let (head, rest) = data.split_at(len);
                data = rest;
                Field::Bytes(head.to_vec())
            }
            5 => {
                let (head, rest) = data.split_at(4);
                data = rest;
                Field::Fixed32(head.try_into().expect("4 bytes"))
            }
            other => panic!("wire type {other}"),
        };
        out.push((key >> 3, field));
    }
    out
}

#[test]
fn tensorboard_event_files_hold_the_metrics() {
    let _serial = serial();
    let run = tempfile::tempdir().expect("tempdir");
    let mut config = tiny_config(run.path());
    config.training.max_steps = Some(4);
    config.training.validate_every = 2;
    config.training.tensorboard = true;
    train(&config, &options(Resume::No)).expect("run");

    let files: Vec<_> = std::fs::read_dir(run.path().join("tensorboard"))
        .expect("the event directory")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0]
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert!(name.starts_with("events.out.tfevents."), "{name}");
    let bytes = std::fs::read(&files[0]).expect("read the event file");

    // TFRecord framing, checked record by record.
    let mut events = Vec::new();
    let mut rest = bytes.as_slice();
    while !rest.is_empty() {
        let len = u64::from_le_bytes(rest[..8].try_into().expect("8 bytes")) as usize;
        let mask = |data: &[u8]| {
            crc32c::crc32c(data)
                .rotate_right(15)
                .wrapping_add(0xa282_ead8)
        };
        assert_eq!(rest[8..12], mask(&rest[..8]).to_le_bytes(), "length CRC");
        let data = &rest[12..12 + len];
        assert_eq!(
            rest[12 + len..16 + len],
            mask(data).to_le_bytes(),
            "data CRC"
        );
        events.push(fields(data));
        rest = &rest[16 + len..];
    }
    // The first event names the file version.
    assert!(
        events[0]
            .iter()
            .any(|(n, f)| *n == 3
                && matches!(f, Field::Bytes(b) if b.as_slice() == b"brain.Event:2"))
    );

    // The others: (step, tag, value) for every scalar, as metrics.jsonl has them.
    let mut scalars = Vec::new();
    for event in &events[1..] {
        let step = event
            .iter()
            .find_map(|(n, f)| match (n, f) {
                (2, Field::Varint(step)) => Some(*step),
                _ => None,
            })
            .expect("a step");
        assert!(
            event
                .iter()
                // The wall time: seconds since 1970, later than this code was written.
                .any(|(n, f)| *n == 1
                    && matches!(f, Field::Fixed64(bits) if f64::from_le_bytes(*bits) > 1.7e9))
        );
        for (number, field) in event {
            let (5, Field::Bytes(summary)) = (number, field) else {
                continue;
            };
            for (number, value) in fields(summary) {
                let (1, Field::Bytes(value)) = (number, value) else {
                    panic!("a Summary holds only values");
                };
                let mut tag = String::new();
                let mut simple = None;
                for (number, field) in fields(&value) {
                    match (number, field) {
                        (1, Field::Bytes(text)) => tag = String::from_utf8(text).expect("utf-8"),
                        (2, Field::Fixed32(bits)) => simple = Some(f32::from_le_bytes(bits)),
                        other => panic!("unexpected field {other:?}"),
                    }
                }
                scalars.push((step, tag, simple.expect("a simple value")));
            }
        }
    }
    let mut expected = Vec::new();
    let (mut trains, mut valids) = (0, 0);
    for record in read_metrics(&run.path().join("metrics.jsonl")).expect("metrics") {
        match record {
            MetricsRecord::Train {
                step,
                loss,
                learning_rate,
                ..
            } => {
                trains += 1;
                expected.push((step, "train/loss".to_string(), loss as f32));
                expected.push((
                    step,
                    "train/learning_rate".to_string(),
                    learning_rate as f32,
                ));
            }
            MetricsRecord::Valid { step, loss, .. } => {
                valids += 1;
                expected.push((step, "valid/loss".to_string(), loss as f32));
            }
        }
    }
    assert!(
        trains == 4 && valids >= 2,
        "{trains} training records, {valids} validations"
    );
    for wanted in &expected {
        assert!(scalars.contains(wanted), "{wanted:?} not in {scalars:?}");
    }
    // Six scalars per training record, three per validation (no BLEU in this run).
    assert_eq!(scalars.len(), trains * 6 + valids * 3);
}

fn ema_parameters(checkpoint_dir: &Path) -> Vec<Vec<f32>> {
    let state = checkpoint::read_state(checkpoint_dir).expect("state");
    let model = checkpoint::load_ema(checkpoint_dir, &state, &Device::flex())
        .expect("readable")
        .expect("the checkpoint has a moving average");
    let mut collect = Collect(Vec::new());
    model.visit(&mut collect);
    collect.0
}

#[test]
fn the_moving_average_follows_the_weights_translates_and_resumes_exactly() {
    let _serial = serial();
    let decay = 0.75f32;
    let with_ema = |dir: &Path, steps: u64| {
        let mut config = tiny_config(dir);
        config.training.max_steps = Some(steps);
        config.training.ema_decay = Some(f64::from(decay));
        config.checkpoint.every = 1;
        config
    };
    let straight = tempfile::tempdir().expect("tempdir");
    train(&with_ema(straight.path(), 4), &options(Resume::No)).expect("straight run");
    let step = |k: u64| checkpoint::step_dir(straight.path(), k);

    // Each step: ema_k = d_k · ema_(k-1) + (1 − d_k) · weights_k, computed here by hand, with
    // the warmed-up decay d_k = min(decay, (1 + k) / (10 + k)).
    for k in 2..=4u64 {
        let decay = decay.min((1 + k) as f32 / (10 + k) as f32);
        let (before, weights, after) = (
            ema_parameters(&step(k - 1)),
            parameters(&step(k)),
            ema_parameters(&step(k)),
        );
        for ((before, weights), after) in before.iter().zip(&weights).zip(&after) {
            for ((&e, &w), &got) in before.iter().zip(weights).zip(after) {
                let expected = decay * e + (1.0 - decay) * w;
                assert!(
                    (got - expected).abs() <= 1e-6 * (1.0 + expected.abs()),
                    "step {k}: {got} vs {expected}"
                );
            }
        }
        assert_ne!(
            weights, after,
            "step {k}: the average differs from the weights"
        );
    }

    // Translation uses the average.
    let translator = rosetta_infer::Translator::load(&step(4), &Device::flex()).expect("load");
    let mut collect = Collect(Vec::new());
    translator.model.visit(&mut collect);
    assert_eq!(collect.0, ema_parameters(&step(4)));

    // A resumed run ends with the same average, bit for bit.
    let split = tempfile::tempdir().expect("tempdir");
    train(&with_ema(split.path(), 2), &options(Resume::No)).expect("first half");
    train(&with_ema(split.path(), 4), &options(Resume::Latest)).expect("second half");
    assert!(
        ema_parameters(&checkpoint::step_dir(split.path(), 4)) == ema_parameters(&step(4)),
        "the resumed average differs"
    );

    // Resuming under another decay is refused, naming the key.
    let mut other = with_ema(split.path(), 6);
    other.training.ema_decay = Some(0.5);
    let error = train(&other, &options(Resume::Latest)).expect_err("another decay");
    match &error {
        TrainError::Resume { conflict, .. } => match conflict.as_ref() {
            ResumeConflict::RunSetting { key, before, now } => {
                assert_eq!(key, "training.ema_decay");
                assert_eq!((before.as_f64(), now.as_f64()), (Some(0.75), Some(0.5)));
            }
            other => panic!("expected another setting, got {other}"),
        },
        other => panic!("expected a refused resume, got {other}"),
    }
    assert!(error.to_string().contains("training.ema_decay"), "{error}");
}

/// The word vectors of a text file written by `scripts/make_vectors.py`.
fn word_vectors(path: &Path) -> std::collections::HashMap<String, Vec<f32>> {
    std::fs::read_to_string(path)
        .expect("the vectors file")
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let word = fields.next()?.to_string();
            let values: Vec<f32> = fields.map(|v| v.parse().expect("a number")).collect();
            (values.len() > 1).then_some((word, values))
        })
        .collect()
}

/// The source embedding table of a checkpoint, row by row.
fn source_table(checkpoint_dir: &Path) -> Vec<Vec<f32>> {
    let state = checkpoint::read_state(checkpoint_dir).expect("state");
    let model = checkpoint::load_model(checkpoint_dir, &state, &Device::flex()).expect("model");
    let weight = model.source_embedding.embedding.weight.val();
    let [_, d] = weight.dims();
    weight
        .into_data()
        .try_to_vec::<f32>()
        .expect("f32")
        .chunks(d)
        .map(<[f32]>::to_vec)
        .collect()
}

#[test]
fn pretrained_vectors_start_the_embeddings_and_freeze_keeps_them() {
    let _serial = serial();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let vectors_32 = fixtures.join("numbers-32.vec");
    let with_vectors = |dir: &Path, embeddings: serde_json::Value| {
        let mut config = tiny_config(dir);
        config.training.max_steps = Some(3);
        config.checkpoint.every = 1;
        config.model.embeddings = Some(serde_json::from_value(embeddings).expect("embeddings"));
        config
    };
    let run = tempfile::tempdir().expect("tempdir");
    let config = with_vectors(
        run.path(),
        serde_json::json!({ "source": vectors_32, "target": vectors_32, "freeze": true }),
    );
    train(&config, &options(Resume::No)).expect("run");
    let log = std::fs::read_to_string(run.path().join("train.log")).expect("train.log");
    assert!(
        log.contains("embeddings: source table, ") && log.contains("numbers-32.vec"),
        "{log}"
    );
    assert!(log.contains("embeddings: frozen"), "{log}");

    // Every subword that spells a word of the file starts from its vector, all rescaled by
    // one factor; frozen, the table is the same after three steps.
    let tokenizers = rosetta_data::Tokenizers::load(run.path())
        .expect("readable")
        .expect("the run's tokenizer");
    let vectors = word_vectors(&vectors_32);
    let table = source_table(&checkpoint::step_dir(run.path(), 3));
    assert_eq!(table, source_table(&checkpoint::step_dir(run.path(), 1)));
    let mut factor = None;
    let mut covered = 0;
    for (id, row) in table.iter().enumerate() {
        let word = tokenizers.source.decode(&[id as u32]).expect("decodes");
        let Some(vector) = vectors.get(word.trim()) else {
            continue;
        };
        covered += 1;
        let c = *factor.get_or_insert(row[0] / vector[0]);
        for (&got, &v) in row.iter().zip(vector) {
            assert!(
                (got - c * v).abs() <= 1e-5 * (1.0 + got.abs()),
                "{word}: {got} vs {}",
                c * v
            );
        }
    }
    // A 300-subword BPE holds few whole words: a handful is what there is to check.
    assert!(
        covered >= 5,
        "only {covered} subwords are words of the file"
    );
    assert!(log.contains(&format!("{covered} of ")), "{log}");

    // Frozen it stays across a resume too.
    let mut longer = config.clone();
    longer.training.max_steps = Some(5);
    train(&longer, &options(Resume::Latest)).expect("resume");
    assert_eq!(table, source_table(&checkpoint::step_dir(run.path(), 5)));

    // Not frozen, the table trains.
    let trained = tempfile::tempdir().expect("tempdir");
    let config = with_vectors(trained.path(), serde_json::json!({ "source": vectors_32 }));
    train(&config, &options(Resume::No)).expect("run");
    assert_ne!(
        source_table(&checkpoint::step_dir(trained.path(), 1)),
        source_table(&checkpoint::step_dir(trained.path(), 3))
    );

    // Another dimension: refused, naming the file, unless projected.
    let vectors_48 = fixtures.join("numbers-48.txt");
    let other = tempfile::tempdir().expect("tempdir");
    let message = train(
        &with_vectors(other.path(), serde_json::json!({ "source": vectors_48 })),
        &options(Resume::No),
    )
    .expect_err("dimension 48 for d_model 32")
    .to_string();
    assert!(
        message.contains("numbers-48.txt") && message.contains("project = true"),
        "{message}"
    );
    let projected = tempfile::tempdir().expect("tempdir");
    train(
        &with_vectors(
            projected.path(),
            serde_json::json!({ "source": vectors_48, "project": true }),
        ),
        &options(Resume::No),
    )
    .expect("projected vectors");
    // A misspelt key is named.
    let text = format!(
        "{}\n[model.embeddings]\nsorce = \"x.vec\"\n",
        tiny_config(other.path()).to_toml().expect("toml")
    );
    let message = RunConfig::parse(&text, Path::new("bad.toml"))
        .expect_err("unknown key")
        .to_string();
    assert!(
        message.contains("model.embeddings") && message.contains("`sorce`"),
        "{message}"
    );
}

#[test]
fn a_run_on_weighted_corpora_resumes_exactly_and_refuses_other_weights() {
    use rosetta_data::{TrainingCorpora, WeightedCorpus};
    let _serial = serial();
    // Two small corpora, one offered 1.5 times per epoch and one half: about 1,000 pairs per
    // epoch; the run is split in the second epoch (whose halves are drawn anew).
    let mixed = |dir: &Path, steps: u64| {
        let mut config = tiny_config(dir);
        let n = common::numbers();
        config.data.train = Some(TrainingCorpora::Several(vec![
            WeightedCorpus::Parallel {
                source: n.join("valid.en"),
                target: n.join("valid.fr"),
                weight: 1.5,
            },
            WeightedCorpus::Parallel {
                source: n.join("test.en"),
                target: n.join("test.fr"),
                weight: 0.5,
            },
        ]));
        config.training.max_steps = Some(steps);
        config
    };
    let straight = tempfile::tempdir().expect("tempdir");
    let summary = train(&mixed(straight.path(), 36), &options(Resume::No)).expect("straight");
    assert!(
        summary.data_summary.contains("weight 1.5"),
        "{}",
        summary.data_summary
    );

    let split = tempfile::tempdir().expect("tempdir");
    let first = train(&mixed(split.path(), 20), &options(Resume::No)).expect("first part");
    assert!(
        first.epoch >= 1,
        "the split should fall after an epoch: {first:?}"
    );
    train(&mixed(split.path(), 36), &options(Resume::Latest)).expect("resumed");
    let a = train_losses(straight.path());
    assert_eq!(a.len(), 36);
    assert_eq!(
        a,
        train_losses(split.path()),
        "per-step losses differ after resuming"
    );
    assert_eq!(
        parameters(&checkpoint::step_dir(straight.path(), 36)),
        parameters(&checkpoint::step_dir(split.path(), 36)),
        "final parameters differ"
    );

    // Other weights would offer other pairs: resuming under them is refused.
    let mut other = mixed(split.path(), 40);
    if let Some(TrainingCorpora::Several(list)) = &mut other.data.train
        && let Some(WeightedCorpus::Parallel { weight, .. }) = list.get_mut(1)
    {
        *weight = 0.75;
    }
    let err = train(&other, &options(Resume::Latest)).expect_err("other weights");
    assert!(err.to_string().contains("data.train.weights"), "{err}");
}

#[test]
fn bpe_dropout_resegments_every_epoch_and_resumes_exactly() {
    let _serial = serial();
    // The small numbers splits as training corpus: about 20 steps per epoch, so the split
    // falls in the second epoch and each run re-segments at least twice.
    let config_in = |dir: &Path, steps: u64| {
        let mut config = tiny_config(dir);
        let n = common::numbers();
        config.data.train = Some(
            rosetta_data::CorpusFiles::Parallel {
                source: n.join("valid.en"),
                target: n.join("valid.fr"),
            }
            .into(),
        );
        config.data.tokenizer.dropout = 0.1;
        config.training.max_steps = Some(steps);
        config
    };
    let straight = tempfile::tempdir().expect("tempdir");
    let summary = train(&config_in(straight.path(), 30), &options(Resume::No)).expect("straight");
    assert!(summary.epoch >= 1, "{summary:?}");
    let split = tempfile::tempdir().expect("tempdir");
    let first = train(&config_in(split.path(), 17), &options(Resume::No)).expect("first part");
    assert!(
        first.epoch >= 1,
        "the split should fall after an epoch: {first:?}"
    );
    // The epoch's segmentation is made again after the interruption, not read from the cache.
    for entry in std::fs::read_dir(split.path().join("cache")).expect("cache") {
        let path = entry.expect("entry").path();
        if path.to_string_lossy().contains("dropout") {
            std::fs::remove_dir_all(&path).expect("remove");
        }
    }
    train(&config_in(split.path(), 30), &options(Resume::Latest)).expect("resumed");
    let a = train_losses(straight.path());
    assert_eq!(a.len(), 30);
    assert_eq!(
        a,
        train_losses(split.path()),
        "per-step losses differ after resuming"
    );
    assert_eq!(
        parameters(&checkpoint::step_dir(straight.path(), 30)),
        parameters(&checkpoint::step_dir(split.path(), 30)),
        "final parameters differ"
    );
    // One segmentation is kept: the current epoch's.
    let kept = std::fs::read_dir(straight.path().join("cache"))
        .expect("cache")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().contains("dropout"))
        })
        .count();
    assert_eq!(kept, 1);

    // Without dropout the run trains on other (plain) segmentations: other losses.
    let plain = tempfile::tempdir().expect("tempdir");
    let mut config = config_in(plain.path(), 30);
    config.data.tokenizer.dropout = 0.0;
    train(&config, &options(Resume::No)).expect("plain");
    assert_ne!(train_losses(plain.path()), a);
}

#[test]
fn reading_ahead_trains_on_the_same_batches() {
    let _serial = serial();
    let direct = tempfile::tempdir().expect("tempdir");
    train(&tiny_config(direct.path()), &options(Resume::No)).expect("direct");
    let ahead = tempfile::tempdir().expect("tempdir");
    let mut config = tiny_config(ahead.path());
    config.data.prefetch = 3;
    train(&config, &options(Resume::No)).expect("read ahead");
    let losses = train_losses(direct.path());
    assert_eq!(losses.len(), 12);
    assert_eq!(train_losses(ahead.path()), losses);
    assert_eq!(
        parameters(&checkpoint::step_dir(ahead.path(), 12)),
        parameters(&checkpoint::step_dir(direct.path(), 12))
    );
}
