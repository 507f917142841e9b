//! Rosetta's exports loaded by the tools they are for, in Python: `rosetta export --format hf`
//! in `transformers` (`MarianMTModel` and `AutoTokenizer`), for a fine-tuned imported model, a
//! model Rosetta trained and each direction of a multilingual one, and `--format ctranslate2` of
//! an imported model in CTranslate2, each producing what `rosetta translate` produces.
//!
//! Ignored in the plain test command: they need Python with `torch`, `transformers`,
//! `sentencepiece` and `ctranslate2` (`ROSETTA_PYTHON`); `.ci/run` installs them and runs these
//! with `--ignored`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{
    assert_success, repo, rosetta, test_sentences, trained_multilingual_run, trained_run,
};

fn python() -> String {
    std::env::var("ROSETTA_PYTHON").unwrap_or_else(|_| "python3".into())
}

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

fn require(modules: &str) {
    let check = Command::new(python())
        .args(["-c", &format!("import {modules}")])
        .output()
        .expect("run python");
    assert!(
        check.status.success(),
        "`{} -c 'import {modules}'` failed: install them (or set ROSETTA_PYTHON) to run this check",
        python()
    );
}

/// `rosetta translate` of `input` with `extra` options, one line per input line.
fn ours(checkpoint: &Path, input: &Path, extra: &[&str]) -> Vec<String> {
    let mut args = vec![
        "translate",
        "--checkpoint",
        utf8(checkpoint),
        "--input",
        utf8(input),
    ];
    args.extend_from_slice(extra);
    let out = rosetta(&args);
    assert_success(&out);
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(str::to_string)
        .collect()
}

/// A Python script of `scripts/` over `input`, one line per input line.
fn theirs(script: &str, args: &[&str], input: &Path) -> Vec<String> {
    let out = Command::new(python())
        .arg(repo().join("scripts").join(script))
        .args(args)
        .stdin(std::fs::File::open(input).expect("input"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(str::to_string)
        .collect()
}

fn assert_same(ours: &[String], theirs: &[String], what: &str) {
    assert_eq!(ours.len(), theirs.len(), "{what}: line counts");
    let differ: Vec<_> = ours.iter().zip(theirs).filter(|(a, b)| a != b).collect();
    assert!(
        differ.is_empty(),
        "{what}: {} of {} differ, e.g. {:?}",
        differ.len(),
        ours.len(),
        &differ[..differ.len().min(3)]
    );
}

fn input_file(dir: &Path, lines: usize) -> PathBuf {
    let path = dir.join("input.en");
    std::fs::write(&path, test_sentences(lines).join("\n") + "\n").expect("write input");
    path
}

/// The tiny MarianMT fixture, imported and fine-tuned for 20 steps on the numbers' validation
/// split (so that its weights are Rosetta's, not the fixture's).
fn fine_tuned(dir: &Path) -> PathBuf {
    let opus = dir.join("opus");
    assert_success(&rosetta(&[
        "import-hf",
        utf8(&repo().join("crates/convert/tests/fixtures/marian/tiny")),
        "--output",
        utf8(&opus),
    ]));
    let numbers = repo().join("data/numbers");
    let config = dir.join("tune.toml");
    std::fs::write(
        &config,
        format!(
            r#"output_dir = "{run}"
[model]
from = "{opus}"
[data]
train = {{ source = "{n}/valid.en", target = "{n}/valid.fr" }}
valid = {{ source = "{n}/test.en", target = "{n}/test.fr" }}
batch = {{ by = "sentences", sentences = 32 }}
[training]
max_steps = 20
schedule = {{ kind = "inverse_sqrt", peak = 0.001, warmup = 5 }}
validate_every = 20
bleu_sentences = 0
[checkpoint]
every = 20
"#,
            run = dir.join("tuned").display(),
            opus = opus.display(),
            n = numbers.display()
        ),
    )
    .expect("write config");
    assert_success(&rosetta(&["train", "--config", utf8(&config)]));
    dir.join("tuned")
}

#[test]
#[ignore = "needs Python with torch, transformers and sentencepiece (ROSETTA_PYTHON); .ci/run installs them and runs this test with --ignored"]
fn a_fine_tuned_imported_model_exported_as_hf_generates_in_transformers_what_rosetta_translates() {
    require("torch, transformers, sentencepiece");
    let dir = tempfile::tempdir().expect("tempdir");
    let tuned = fine_tuned(dir.path());
    let hf = dir.path().join("hf");
    assert_success(&rosetta(&[
        "export",
        "--checkpoint",
        utf8(&tuned),
        "--format",
        "hf",
        "--output",
        utf8(&hf),
    ]));
    let input = input_file(dir.path(), 120);
    // Its own decoding (beam 4, transformers' rules), and greedy.
    assert_same(
        &ours(&tuned, &input, &[]),
        &theirs("hf_generate.py", &[utf8(&hf)], &input),
        "beam 4",
    );
    assert_same(
        &ours(&tuned, &input, &["--beam", "1"]),
        &theirs("hf_generate.py", &[utf8(&hf), "--beam", "1"], &input),
        "greedy",
    );
}

#[test]
#[ignore = "needs Python with torch, transformers and sentencepiece (ROSETTA_PYTHON); .ci/run installs them and runs this test with --ignored"]
fn a_model_rosetta_trained_exported_as_hf_generates_in_transformers_what_rosetta_translates() {
    require("torch, transformers, sentencepiece");
    let dir = tempfile::tempdir().expect("tempdir");
    let hf = dir.path().join("hf");
    let out = rosetta(&[
        "export",
        "--checkpoint",
        utf8(trained_run()),
        "--format",
        "hf",
        "--output",
        utf8(&hf),
    ]);
    assert_success(&out);
    assert!(hf.join("tokenizer.json").is_file() && hf.join("tokenizer_config.json").is_file());
    let input = input_file(dir.path(), 120);
    // Greedy: the same tokens whatever the length penalty (the positions permuted into
    // Marian's layout, the tokenizer loaded by AutoTokenizer), with the length limit the export
    // writes (the model's 32 positions; Rosetta's own limit depends on the source).
    assert!(String::from_utf8_lossy(&out.stdout).contains("--max-len-a 0 --max-len-b 30"));
    assert_same(
        &ours(
            trained_run(),
            &input,
            &["--beam", "1", "--max-len-a", "0", "--max-len-b", "30"],
        ),
        &theirs("hf_generate.py", &[utf8(&hf), "--beam", "1"], &input),
        "greedy",
    );
}

#[test]
#[ignore = "needs Python with torch, transformers and sentencepiece (ROSETTA_PYTHON); .ci/run installs them and runs this test with --ignored"]
fn each_direction_of_a_multilingual_hf_export_generates_in_transformers_what_rosetta_translates() {
    require("torch, transformers, sentencepiece");
    let run = trained_multilingual_run();
    let dir = tempfile::tempdir().expect("tempdir");
    let hf = dir.path().join("hf");
    let out = rosetta(&[
        "export",
        "--checkpoint",
        utf8(run),
        "--format",
        "hf",
        "--output",
        utf8(&hf),
    ]);
    assert_success(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("the tags are >>fr<<, >>en<<"));
    let french = dir.path().join("input.fr");
    let lines = std::fs::read_to_string(repo().join("data/numbers/test.fr")).expect("test.fr");
    // Short lines only: transformers refuses a source longer than the model's 32 positions,
    // where Rosetta cuts it (and reports it).
    let lines: Vec<&str> = lines.lines().filter(|l| l.len() <= 30).take(100).collect();
    assert_eq!(lines.len(), 100, "short French test lines");
    std::fs::write(&french, lines.join("\n") + "\n").expect("write input.fr");
    // transformers reads `>>fr<< quatre …` (the tag, a space, the text: Marian's convention) as
    // the tag then the tokens of `quatre …`, as Rosetta frames the source.
    for (target, input) in [("fr", input_file(dir.path(), 100)), ("en", french)] {
        assert_same(
            &ours(
                run,
                &input,
                &[
                    "--beam",
                    "1",
                    "--max-len-a",
                    "0",
                    "--max-len-b",
                    "30",
                    "--target-lang",
                    target,
                ],
            ),
            &theirs(
                "hf_generate.py",
                &[utf8(&hf), "--beam", "1", "--target-lang", target],
                &input,
            ),
            &format!("greedy into {target}"),
        );
    }
}

#[test]
#[ignore = "needs Python's ctranslate2, transformers and sentencepiece (ROSETTA_PYTHON); .ci/run installs them and runs this test with --ignored"]
fn ctranslate2_decodes_an_imported_models_export_as_rosetta_does() {
    require("ctranslate2, transformers, sentencepiece");
    let dir = tempfile::tempdir().expect("tempdir");
    let opus = dir.path().join("opus");
    assert_success(&rosetta(&[
        "import-hf",
        utf8(&repo().join("crates/convert/tests/fixtures/marian/tiny")),
        "--output",
        utf8(&opus),
    ]));
    let ct2 = dir.path().join("ct2");
    assert_success(&rosetta(&[
        "export",
        "--checkpoint",
        utf8(&opus),
        "--format",
        "ctranslate2",
        "--output",
        utf8(&ct2),
    ]));
    let input = input_file(dir.path(), 200);
    assert_same(
        &ours(&opus, &input, &["--beam", "1"]),
        &theirs(
            "ctranslate2_translate.py",
            &[utf8(&ct2), "--max-len-a", "0", "--max-len-b", "510"],
            &input,
        ),
        "greedy in CTranslate2",
    );
}
