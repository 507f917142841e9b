//! Starting from a pretrained translator, as a user would: `rosetta import-hf` on the tiny
//! MarianMT fixture (trained by `scripts/make_marian_fixture.py` on the numbers below 50,000),
//! `translate`, then fine-tuning on numbers it was not trained on (50,000 and above), which
//! improves its BLEU there and resumes bit for bit after an interruption; the run's tokenizer is
//! the imported one, and a configuration that asks to retrain it is refused.

mod common;

use std::path::{Path, PathBuf};

use common::{assert_success, repo, rosetta};

fn tiny() -> PathBuf {
    repo().join("crates/convert/tests/fixtures/marian/tiny")
}

/// Imports the fixture into `dir/opus`.
fn imported(dir: &Path) -> PathBuf {
    let run = dir.join("opus");
    let out = rosetta(&[
        "import-hf",
        tiny().to_str().expect("utf-8"),
        "--output",
        run.to_str().expect("utf-8"),
        "--source-lang",
        "en",
        "--target-lang",
        "fr",
    ]);
    assert_success(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("beam 4") && stdout.contains("swish") || stdout.contains("Swish"),
        "{stdout}"
    );
    run
}

/// The pairs of `split` of `data/numbers` whose number is at least 50,000 (the French side
/// tells: `cinquante mille` and above), written to `dir/split.{en,fr}`; their count.
fn upper_range(dir: &Path, split: &str, limit: usize) -> usize {
    let numbers = repo().join("data/numbers");
    let en = std::fs::read_to_string(numbers.join(format!("{split}.en"))).expect("en");
    let fr = std::fs::read_to_string(numbers.join(format!("{split}.fr"))).expect("fr");
    let starts = ["fifty", "sixty", "seventy", "eighty", "ninety"];
    let (mut source, mut target) = (String::new(), String::new());
    let mut count = 0;
    for (e, f) in en.lines().zip(fr.lines()) {
        if count < limit && e.contains("thousand") && starts.iter().any(|s| e.starts_with(s)) {
            source.push_str(e);
            source.push('\n');
            target.push_str(f);
            target.push('\n');
            count += 1;
        }
    }
    std::fs::write(dir.join(format!("{split}.en")), source).expect("write");
    std::fs::write(dir.join(format!("{split}.fr")), target).expect("write");
    count
}

fn fine_tune_config(dir: &Path, from: &Path, run: &str, extra: &str) -> PathBuf {
    let text = format!(
        r#"output_dir = "{run}"
[model]
from = "{from}"
dropout = 0.1
[data]
train = {{ source = "{d}/train.en", target = "{d}/train.fr" }}
valid = {{ source = "{d}/valid.en", target = "{d}/valid.fr" }}
batch = {{ by = "sentences", sentences = 32 }}
{extra}
[training]
seed = 3
max_steps = 60
label_smoothing = 0.1
schedule = {{ kind = "inverse_sqrt", peak = 0.001, warmup = 10 }}
validate_every = 30
log_every = 10
bleu_sentences = 0
[checkpoint]
every = 30
"#,
        run = dir.join(run).display(),
        from = from.display(),
        d = dir.display(),
    );
    let path = dir.join(format!("{run}.toml"));
    std::fs::write(&path, text).expect("write config");
    path
}

fn bleu(checkpoint: &Path, dir: &Path) -> f64 {
    let out = rosetta(&[
        "eval",
        "--checkpoint",
        checkpoint.to_str().expect("utf-8"),
        "--src",
        dir.join("valid.en").to_str().expect("utf-8"),
        "--ref",
        dir.join("valid.fr").to_str().expect("utf-8"),
        "--beam",
        "1",
    ]);
    assert_success(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("BLEU"))
        .expect("a BLEU line");
    line.split(" = ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|score| score.parse().ok())
        .expect("a score")
}

#[test]
fn an_imported_model_translates_and_fine_tunes_on_numbers_it_did_not_know() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opus = imported(dir.path());

    let out = rosetta(&[
        "translate",
        "--checkpoint",
        opus.to_str().expect("utf-8"),
        "--beam",
        "1",
    ]);
    assert!(out.status.success());
    let translate = |input: &str| {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rosetta"))
            .args(["translate", "--checkpoint", opus.to_str().expect("utf-8")])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        use std::io::Write;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write");
        let out = child.wait_with_output().expect("wait");
        assert_success(&out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(translate("forty-two\n"), "quarante-deux\n");

    assert!(upper_range(dir.path(), "train", 3000) > 1000);
    assert!(upper_range(dir.path(), "valid", 100) > 50);
    let before = bleu(&opus, dir.path());

    // Uninterrupted fine-tuning, and the same stopped at step 30 then resumed.
    let config = fine_tune_config(dir.path(), &opus, "tuned", "");
    assert_success(&rosetta(&[
        "train",
        "--config",
        config.to_str().expect("utf-8"),
    ]));
    let log = std::fs::read_to_string(dir.path().join("tuned/train.log")).expect("log");
    assert!(
        log.contains("starting from") && log.contains("with its tokenizer from"),
        "{log}"
    );
    let after = bleu(&dir.path().join("tuned"), dir.path());
    eprintln!("validation BLEU on numbers >= 50,000: imported {before:.2}, fine-tuned {after:.2}");
    assert!(
        after > before + 5.0,
        "fine-tuning did not help: {before} -> {after}"
    );

    let config = fine_tune_config(dir.path(), &opus, "resumed", "");
    let config = config.to_str().expect("utf-8");
    assert_success(&rosetta(&[
        "train",
        "--config",
        config,
        "--max-steps",
        "30",
    ]));
    assert_success(&rosetta(&["train", "--config", config, "--resume"]));
    let weights = |run: &str| {
        std::fs::read(
            dir.path()
                .join(run)
                .join("checkpoints/step-00000060/model.bpk"),
        )
        .expect("weights")
    };
    assert!(
        weights("tuned") == weights("resumed"),
        "resuming changed the weights"
    );
    // The fine-tuned run keeps the imported tokenizer files and decoding defaults.
    for file in ["source.spm", "target.spm", "vocab.json"] {
        assert_eq!(
            std::fs::read(dir.path().join("tuned").join(file)).expect("copied"),
            std::fs::read(tiny().join(file)).expect("fixture"),
            "{file}"
        );
    }
}

#[test]
fn retraining_an_imported_models_tokenizer_is_refused_by_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opus = imported(dir.path());
    upper_range(dir.path(), "train", 50);
    upper_range(dir.path(), "valid", 10);
    for (extra, key) in [
        (
            "tokenizer = { vocab_size = 300 }",
            "data.tokenizer.vocab_size",
        ),
        (
            "tokenizer = { model = \"unigram\" }",
            "data.tokenizer.model",
        ),
    ] {
        let config = fine_tune_config(dir.path(), &opus, "refused", extra);
        let out = rosetta(&["train", "--config", config.to_str().expect("utf-8")]);
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(key), "{stderr}");
        assert!(!dir.path().join("refused/checkpoints").exists());
    }
    // An architecture key other than the model's is refused too.
    let config = fine_tune_config(dir.path(), &opus, "refused", "")
        .to_string_lossy()
        .into_owned();
    let text = std::fs::read_to_string(&config)
        .expect("read")
        .replace("dropout = 0.1", "d_model = 128");
    std::fs::write(&config, text).expect("write");
    let out = rosetta(&["train", "--config", &config]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("model.d_model"),
        "{stderr}"
    );
}

#[test]
fn a_tokenizer_nothing_explains_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    std::fs::create_dir_all(&run).expect("mkdir");
    // A tokenizer from elsewhere, dropped into a fresh run directory.
    let opus = imported(dir.path());
    let out = rosetta(&[
        "export",
        "--checkpoint",
        opus.to_str().expect("utf-8"),
        "--format",
        "hf",
        "--output",
        dir.path().join("hf").to_str().expect("utf-8"),
    ]);
    assert_success(&out);
    for file in ["source.spm", "target.spm", "vocab.json"] {
        std::fs::copy(dir.path().join("hf").join(file), run.join(file)).expect("copy");
    }
    let numbers = repo().join("data/numbers");
    let config = dir.path().join("run.toml");
    std::fs::write(
        &config,
        format!(
            r#"output_dir = "{run}"
[model]
d_model = 16
n_heads = 2
d_ff = 32
n_encoder_layers = 1
n_decoder_layers = 1
max_positions = 24
[data]
train = {{ source = "{n}/valid.en", target = "{n}/valid.fr" }}
valid = {{ source = "{n}/test.en", target = "{n}/test.fr" }}
filter = {{ max_source_tokens = 24, max_target_tokens = 24 }}
[training]
max_steps = 1
"#,
            run = run.display(),
            n = numbers.display()
        ),
    )
    .expect("write");
    let out = rosetta(&["train", "--config", config.to_str().expect("utf-8")]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("source.spm") && stderr.contains("data.tokenizer.from"),
        "{stderr}"
    );
}

#[test]
fn an_imported_model_is_served_with_its_languages_and_decoding() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opus = imported(dir.path());
    let server = common::ServerProcess::start(&opus, &[]);
    let (status, body) = common::post(
        &format!("{}/translate", server.url),
        &serde_json::json!({"q": ["forty-two", "one hundred twelve"], "source": "en", "target": "fr"}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["translatedText"],
        serde_json::json!(["quarante-deux", "cent douze"])
    );
    let (status, languages) = common::get(&format!("{}/languages", server.url));
    assert_eq!(status, 200);
    assert!(
        languages.contains("\"en\"") && languages.contains("\"fr\""),
        "{languages}"
    );
    // A direction the model does not translate is refused.
    let (status, body) = common::post(
        &format!("{}/translate", server.url),
        &serde_json::json!({"q": "forty-two", "source": "de", "target": "fr"}),
    );
    assert_eq!(status, 400, "{body}");
}

#[test]
fn an_imported_models_web_bundle_translates_as_translate_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opus = imported(dir.path());
    let bundle = dir.path().join("bundle");
    assert_success(&rosetta(&[
        "export",
        "--checkpoint",
        opus.to_str().expect("utf-8"),
        "--web",
        "--precision",
        "f32",
        "--output",
        bundle.to_str().expect("utf-8"),
    ]));
    for file in [
        "model.bpk",
        "bundle.json",
        "source.spm",
        "target.spm",
        "vocab.json",
    ] {
        assert!(bundle.join(file).is_file(), "{file}");
    }
    let lines = common::test_sentences(60);
    let from_run = common::translate_lines(&opus, &lines, 4);
    let from_bundle = common::translate_lines(&bundle, &lines, 4);
    assert_success(&from_run);
    assert_success(&from_bundle);
    assert_eq!(from_run.stdout, from_bundle.stdout);
}
