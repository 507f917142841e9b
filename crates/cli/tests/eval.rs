//! `rosetta eval --hyp --ref`, run as a user would, on the sacreBLEU fixtures of rosetta-eval.

use std::path::PathBuf;
use std::process::{Command, Output};

fn rosetta(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rosetta"))
        .args(args)
        .output()
        .expect("run rosetta")
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../eval/tests/fixtures/bleu")
        .join(name)
}

fn expected_lines(case: &str) -> (String, String) {
    let text = std::fs::read_to_string(fixture("cases.json")).expect("cases.json");
    let meta: serde_json::Value = serde_json::from_str(&text).expect("json");
    let case = meta["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["name"] == case)
        .expect("case");
    (
        case["bleu"]["line"].as_str().expect("bleu").to_owned(),
        case["chrf"]["line"].as_str().expect("chrf").to_owned(),
    )
}

fn path(p: &std::path::Path) -> &str {
    p.to_str().expect("utf-8 path")
}

#[test]
fn prints_sacrebleu_lines_for_one_reference() {
    let (hyp, reference) = (fixture("system.hyp"), fixture("system.ref0"));
    let out = rosetta(&["eval", "--hyp", path(&hyp), "--ref", path(&reference)]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (bleu, chrf) = expected_lines("system");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], bleu);
    assert_eq!(lines[1], chrf);
    assert!(
        lines[2].contains("compatible with sacreBLEU 2.6.0"),
        "{stdout}"
    );
}

#[test]
fn repeated_ref_gives_several_reference_streams() {
    let out = rosetta(&[
        "eval",
        "--hyp",
        path(&fixture("multi_ref.hyp")),
        "--ref",
        path(&fixture("multi_ref.ref0")),
        "--ref",
        path(&fixture("multi_ref.ref1")),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (bleu, chrf) = expected_lines("multi_ref");
    assert!(bleu.starts_with("BLEU|nrefs:2|"));
    assert_eq!(stdout.lines().next(), Some(bleu.as_str()));
    assert_eq!(stdout.lines().nth(1), Some(chrf.as_str()));
}

#[test]
fn line_count_mismatch_names_both_files_and_counts() {
    // system.hyp has 150 lines, one_sentence.ref0 has 1.
    let (hyp, reference) = (fixture("system.hyp"), fixture("one_sentence.ref0"));
    let out = rosetta(&["eval", "--hyp", path(&hyp), "--ref", path(&reference)]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("system.hyp has 150 lines"), "{stderr}");
    assert!(stderr.contains("one_sentence.ref0 has 1 lines"), "{stderr}");
}

#[test]
fn unreadable_file_is_named() {
    let out = rosetta(&[
        "eval",
        "--hyp",
        path(&fixture("system.hyp")),
        "--ref",
        "/nonexistent/refs.txt",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/nonexistent/refs.txt"), "{stderr}");
}

/// `rosetta eval … | head -1`: the reader has gone before anything is written (its end of
/// the pipe is closed before the process starts, so every write fails). The process ends
/// quietly with status 0, as with ripgrep, not with a panic.
#[test]
fn a_closed_output_pipe_ends_quietly() {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let (hyp, reference) = (fixture("system.hyp"), fixture("system.ref0"));
    let out = Command::new(env!("CARGO_BIN_EXE_rosetta"))
        .args(["eval", "--hyp", path(&hyp), "--ref", path(&reference)])
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("run rosetta");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(stderr.is_empty(), "{stderr}");
}
