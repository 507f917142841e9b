//! A MarianMT model of OPUS-MT's full dimensions (d_model 512, 6 + 6 layers, 8 heads, FFN
//! 2,048, 58,101 subwords, swish), untrained and seeded, made at test time by
//! `scripts/make_marian_fixture.py full` (300 MB, not committed), imported, and its logits
//! compared with `transformers'`.
//!
//! Ignored in the plain test command: it needs Python with `torch`, `transformers` and
//! `sentencepiece` (`ROSETTA_PYTHON`); `.ci/run` installs them and runs it with `--ignored`. The
//! model directory can also be given ready-made in `ROSETTA_MARIAN_FULL`.

use std::path::{Path, PathBuf};
use std::process::Command;

use rosetta_convert::marian::{ImportOptions, import_marian};
use rosetta_infer::Translator;
use rosetta_model::burn::tensor::{Device, Int, Tensor, TensorData};
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The full-size model directory: `ROSETTA_MARIAN_FULL`, else made into `scratch`.
fn full_model(scratch: &Path) -> PathBuf {
    if let Some(dir) = std::env::var_os("ROSETTA_MARIAN_FULL") {
        return PathBuf::from(dir);
    }
    let python = std::env::var("ROSETTA_PYTHON").unwrap_or_else(|_| "python3".into());
    let dir = scratch.join("opus-mt-full");
    let out = Command::new(&python)
        .arg(repo().join("scripts/make_marian_fixture.py"))
        .arg("full")
        .arg(&dir)
        .output()
        .expect("run make_marian_fixture.py");
    assert!(
        out.status.success(),
        "{python} scripts/make_marian_fixture.py full failed (it needs torch, transformers and sentencepiece): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

fn ids(value: &Value) -> Vec<i64> {
    value
        .as_array()
        .expect("ids")
        .iter()
        .map(|v| v.as_i64().expect("an id"))
        .collect()
}

#[test]
#[ignore = "needs Python with torch, transformers and sentencepiece (ROSETTA_PYTHON) to make the 300 MB model; .ci/run installs them and runs this test with --ignored"]
fn a_full_size_opus_mt_model_gives_transformers_logits() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let dir = full_model(scratch.path());
    let run = scratch.path().join("run");
    let report = import_marian(&dir, &run, &ImportOptions::default()).expect("imports");
    assert_eq!(
        (
            report.model.d_model,
            report.model.n_encoder_layers,
            report.model.target_vocab_size
        ),
        (512, 6, 58_101)
    );
    let translator = Translator::load(&run, &Device::flex()).expect("loads");
    let reference: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("reference.json")).expect("reference"),
    )
    .expect("JSON");
    let device = translator.device().clone();
    let row = |values: Vec<i64>| {
        let n = values.len();
        Tensor::<2, Int>::from_data(TensorData::new(values, [1, n]), &device)
    };
    let mut largest = 0.0f32;
    for case in reference["logits"].as_array().expect("cases") {
        let source = ids(&case["input_ids"]);
        let target = ids(&case["decoder_input_ids"]);
        // The tokenizer gives transformers' ids for the source text.
        let text = case["source"].as_str().expect("text");
        let encoded: Vec<i64> = translator
            .tokenizers
            .source
            .encode(text)
            .expect("encodes")
            .into_iter()
            .map(i64::from)
            .collect();
        assert_eq!(encoded, source[..source.len() - 1], "{text}");
        let ours = translator
            .model
            .forward(row(source), row(target))
            .into_data()
            .try_to_vec::<f32>()
            .expect("f32");
        let mut theirs = Vec::new();
        for position in case["logits"].as_array().expect("rows") {
            theirs.extend(
                position
                    .as_array()
                    .expect("a row")
                    .iter()
                    .map(|v| v.as_f64().expect("a number") as f32),
            );
        }
        assert_eq!(ours.len(), theirs.len());
        for (a, b) in ours.iter().zip(&theirs) {
            largest = largest.max((a - b).abs());
        }
    }
    eprintln!("full-size MarianMT: largest logit difference from transformers {largest:.3e}");
    assert!(largest < 1e-4, "{largest}");
}
