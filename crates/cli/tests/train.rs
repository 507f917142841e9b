//! `rosetta train` as a user runs it: errors name the key and file; a short run writes a
//! resumable run directory.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn write_config(dir: &Path, extra_training: &str) -> PathBuf {
    let numbers = repo().join("data/numbers");
    let text = format!(
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
tokenizer = {{ vocab_size = 300 }}
filter = {{ max_source_tokens = 24, max_target_tokens = 24 }}
batch = {{ by = "tokens", max_tokens = 500 }}
[training]
validate_every = 2
log_every = 1
{extra_training}
[checkpoint]
every = 2
"#,
        run = dir.join("run").display(),
        n = numbers.display()
    );
    let path = dir.join("run.toml");
    std::fs::write(&path, text).expect("write config");
    path
}

/// Fails the test with the command's stderr unless it exited successfully.
fn assert_success(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn rosetta(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rosetta"))
        .args(args)
        .output()
        .expect("run rosetta")
}

#[test]
fn a_typo_in_the_config_names_the_key_and_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), "learning_rat = 0.1");
    let out = rosetta(&["train", "--config", config.to_str().expect("utf-8")]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("learning_rat") && stderr.contains("run.toml"),
        "{stderr}"
    );
}

#[test]
fn train_then_resume_from_the_command_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), "");
    let config = config.to_str().expect("utf-8");
    let out = rosetta(&["train", "--config", config, "--max-steps", "2"]);
    assert_success(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("steps: 2") && stdout.contains("best validation loss"),
        "{stdout}"
    );
    let run = dir.path().join("run");
    for file in [
        "config.toml",
        "tokenizer.json",
        "metrics.jsonl",
        "train.log",
        "best/model.bpk",
    ] {
        assert!(run.join(file).exists(), "{file} missing");
    }
    // Without --resume an existing run is not overwritten.
    let again = rosetta(&["train", "--config", config, "--max-steps", "4"]);
    assert!(!again.status.success());
    let resumed = rosetta(&["train", "--config", config, "--max-steps", "4", "--resume"]);
    assert_success(&resumed);
    assert!(String::from_utf8_lossy(&resumed.stdout).contains("steps: 4"));
    assert!(String::from_utf8_lossy(&resumed.stderr).contains("resumed from"));

    // Translate: one output line per input line, empty stays empty, too long is cut and said.
    let input = dir.path().join("input.en");
    let long = ["seven hundred seventy-seven thousand"; 12].join(" ");
    std::fs::write(&input, format!("twenty-one\n\n{long}\nfour\n")).expect("write input");
    let output = dir.path().join("output.fr");
    let run_dir = run.to_str().expect("utf-8");
    let translated = rosetta(&[
        "translate",
        "--checkpoint",
        run_dir,
        "--input",
        input.to_str().expect("utf-8"),
        "--output",
        output.to_str().expect("utf-8"),
        "--beam",
        "2",
    ]);
    assert_success(&translated);
    let text = std::fs::read_to_string(&output).expect("output");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text:?}");
    assert_eq!(lines[1], "");
    let stderr = String::from_utf8_lossy(&translated.stderr);
    assert!(
        stderr.contains("line 3 is longer than the model's 24 positions"),
        "{stderr}"
    );

    // Evaluate: translate the test split and score it against its references.
    let numbers = repo().join("data/numbers");
    let eval = rosetta(&[
        "eval",
        "--checkpoint",
        run_dir,
        "--src",
        numbers.join("test.en").to_str().expect("utf-8"),
        "--ref",
        numbers.join("test.fr").to_str().expect("utf-8"),
        "--beam",
        "1",
    ]);
    assert_success(&eval);
    let report = String::from_utf8_lossy(&eval.stdout);
    assert!(
        report.contains("BLEU") && report.contains("chrF2") && report.contains("500 segments"),
        "{report}"
    );

    // Eval translates with translate's search options: the same flags give the same output,
    // whether the files are plain or gzip (as the Tatoeba splits are).
    let src = numbers.join("test.en");
    let src = src.to_str().expect("utf-8");
    let gz_src = gzip_copy(Path::new(src), &dir.path().join("test.en.gz"));
    let reference = gzip_copy(&numbers.join("test.fr"), &dir.path().join("test.fr.gz"));
    let reference = reference.to_str().expect("utf-8");
    let search = [
        "--beam",
        "3",
        "--alpha",
        "2.0",
        "--max-len-a",
        "1.2",
        "--max-len-b",
        "4",
    ];
    let via_eval = dir.path().join("eval.fr");
    let eval_base = [
        "eval",
        "--checkpoint",
        run_dir,
        "--src",
        src,
        "--ref",
        reference,
    ];
    let mut eval_args = eval_base.to_vec();
    eval_args.extend(["--output", via_eval.to_str().expect("utf-8")]);
    eval_args.extend(search);
    let eval = rosetta(&eval_args);
    assert_success(&eval);
    let via_translate = dir.path().join("translate.fr");
    let gz_src = gz_src.to_str().expect("utf-8");
    let mut translate_args = vec!["translate", "--checkpoint", run_dir, "--input", gz_src];
    translate_args.extend(["--output", via_translate.to_str().expect("utf-8")]);
    translate_args.extend(search);
    let translated = rosetta(&translate_args);
    assert_success(&translated);
    let from_eval = std::fs::read_to_string(&via_eval).expect("eval output");
    assert_eq!(from_eval.lines().count(), 500);
    assert_eq!(
        from_eval,
        std::fs::read_to_string(&via_translate).expect("translate output")
    );
    // ...and eval hands --alpha to the search, which refuses a non-finite one.
    let refused = rosetta(&[&eval_base[..], &["--alpha", "NaN"]].concat());
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("option --alpha"), "{stderr}");
}

/// Writes a gzip copy of `from` to `to` and returns `to`.
fn gzip_copy(from: &Path, to: &Path) -> PathBuf {
    use std::io::Write;
    let text = std::fs::read(from).expect("read");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&text).expect("compress");
    std::fs::write(to, gz.finish().expect("compress")).expect("write gzip");
    to.to_path_buf()
}
