//! `rosetta plot`: the training curves of runs, overlaid, in a PNG that decodes, against steps
//! or minutes of training; runs without training times and missing runs are refused by name.

mod common;

use std::path::Path;

use common::{assert_success, rosetta, trained_run};

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// Decodes the PNG at `path`: (width, height, pixels that are not white).
fn decode(path: &Path) -> (u32, u32, usize) {
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(path).expect("open the PNG"),
    ));
    let mut reader = decoder.read_info().expect("a PNG header");
    let mut buffer = vec![0; reader.output_buffer_size().expect("a buffer size")];
    let info = reader.next_frame(&mut buffer).expect("a PNG frame");
    let channels = info.color_type.samples();
    let inked = buffer[..info.buffer_size()]
        .chunks(channels)
        .filter(|pixel| pixel.iter().take(3).any(|&c| c < 250))
        .count();
    (info.width, info.height, inked)
}

#[test]
fn runs_are_plotted_overlaid_against_steps_or_minutes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let other = dir.path().join("other-run");
    std::fs::create_dir_all(&other).expect("create");
    std::fs::copy(
        trained_run().join("metrics.jsonl"),
        other.join("metrics.jsonl"),
    )
    .expect("copy the metrics");

    let png = dir.path().join("curves.png");
    let out = rosetta(&[
        "plot",
        utf8(trained_run()),
        utf8(&other),
        "--output",
        utf8(&png),
    ]);
    assert_success(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Training loss, validation loss and learning rate: the run computed no BLEU.
    assert!(
        stdout.starts_with("plotted 2 run(s), 3 chart(s)"),
        "{stdout}"
    );
    let (width, height, inked) = decode(&png);
    assert_eq!((width, height), (3 * 520, 420));
    assert!(inked > 5_000, "only {inked} pixels drawn");

    let minutes = dir.path().join("minutes.png");
    let out = rosetta(&[
        "plot",
        utf8(trained_run()),
        "--x",
        "minutes",
        "--output",
        utf8(&minutes),
    ]);
    assert_success(&out);
    assert_eq!(decode(&minutes).0, 3 * 520);
}

#[test]
fn runs_without_times_or_metrics_are_refused_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A run from before training times were recorded.
    let old = dir.path().join("old-run");
    std::fs::create_dir_all(&old).expect("create");
    let text = std::fs::read_to_string(trained_run().join("metrics.jsonl")).expect("metrics");
    let mut stripped = String::new();
    for line in text.lines() {
        let mut record: serde_json::Value = serde_json::from_str(line).expect("a JSON record");
        let fields = record.as_object_mut().expect("a record");
        assert!(
            fields.remove("seconds").is_some(),
            "new records carry seconds: {line}"
        );
        stripped.push_str(&record.to_string());
        stripped.push('\n');
    }
    std::fs::write(old.join("metrics.jsonl"), stripped).expect("write");
    let png = dir.path().join("curves.png");
    let out = rosetta(&["plot", utf8(&old), "--x", "minutes", "--output", utf8(&png)]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("old-run") && stderr.contains("--x step"),
        "{stderr}"
    );
    assert!(!png.exists());
    // Against steps it plots.
    assert_success(&rosetta(&["plot", utf8(&old), "--output", utf8(&png)]));

    let missing = dir.path().join("missing-run");
    let out = rosetta(&["plot", utf8(&missing), "--output", utf8(&png)]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("missing-run"), "{stderr}");
}
