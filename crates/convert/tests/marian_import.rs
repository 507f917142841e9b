//! Importing Hugging Face MarianMT directories, checked against `transformers` itself: the
//! fixtures in `tests/fixtures/marian/` were made by `scripts/make_marian_fixture.py` (pinned
//! `torch`, `transformers`, `sentencepiece`) with a tiny MarianMT model trained on the numbers
//! below 50,000 and six random-weight variants of the format, each with the logits, encoder
//! output, tokenization and `generate()` outputs `transformers` computed.

use std::path::{Path, PathBuf};

use rosetta_convert::ConvertError;
use rosetta_convert::marian::{ImportOptions, import_marian};
use rosetta_infer::{BeamStop, LengthNorm, TranslateOptions, Translator};
use rosetta_model::burn::tensor::{Device, Int, Tensor, TensorData};
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/marian")
        .join(name)
}

fn reference(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("reference JSON");
    serde_json::from_str(&text).expect("JSON")
}

fn ids(value: &Value) -> Vec<i64> {
    value
        .as_array()
        .expect("a list of ids")
        .iter()
        .map(|v| v.as_i64().expect("an id"))
        .collect()
}

fn floats(value: &Value) -> Vec<f32> {
    let mut out = Vec::new();
    fn walk(value: &Value, out: &mut Vec<f32>) {
        match value {
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            other => out.push(other.as_f64().expect("a number") as f32),
        }
    }
    walk(value, &mut out);
    out
}

/// Imports `dir` into a temporary run directory and loads it.
fn import(dir: &Path) -> (tempfile::TempDir, Translator) {
    let root = tempfile::tempdir().expect("tempdir");
    let run = root.path().join("run");
    import_marian(dir, &run, &ImportOptions::default()).expect("imports");
    let translator = Translator::load(&run, &Device::flex()).expect("loads");
    (root, translator)
}

fn row(values: &[i64], device: &Device) -> Tensor<2, Int> {
    Tensor::from_data(TensorData::new(values.to_vec(), [1, values.len()]), device)
}

/// The largest difference between the model's teacher-forced logits and `transformers'` for
/// each entry of `cases`.
fn largest_logit_difference(translator: &Translator, cases: &Value) -> f32 {
    let device = translator.device().clone();
    let mut largest = 0.0f32;
    for case in cases.as_array().expect("cases") {
        let source = row(&ids(&case["input_ids"]), &device);
        let target = row(&ids(&case["decoder_input_ids"]), &device);
        let ours = translator
            .model
            .forward(source, target)
            .into_data()
            .try_to_vec::<f32>()
            .expect("f32");
        let theirs = floats(&case["logits"]);
        assert_eq!(ours.len(), theirs.len(), "{}", case["source"]);
        for (a, b) in ours.iter().zip(&theirs) {
            largest = largest.max((a - b).abs());
        }
    }
    largest
}

#[test]
fn the_tiny_model_gives_transformers_logits_and_encoder_output() {
    let (_root, translator) = import(&fixture("tiny"));
    let reference = reference(&fixture("tiny-reference.json"));
    let largest = largest_logit_difference(&translator, &reference["logits"]);
    eprintln!("tiny MarianMT: largest logit difference from transformers {largest:.3e}");
    assert!(largest < 1e-4, "{largest}");

    let encoder = &reference["encoder_output"];
    let device = translator.device().clone();
    let memory = translator
        .model
        .encode(row(&ids(&encoder["input_ids"]), &device))
        .memory
        .into_data()
        .try_to_vec::<f32>()
        .expect("f32");
    let theirs = floats(&encoder["last_hidden_state"]);
    let largest = memory
        .iter()
        .zip(&theirs)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert_eq!(memory.len(), theirs.len());
    assert!(largest < 1e-4, "encoder output differs by {largest}");
}

#[test]
fn the_import_reads_the_generation_settings_and_the_tokenizer() {
    let (_root, translator) = import(&fixture("tiny"));
    let d = &translator.decoding;
    assert_eq!((d.beam, d.max_len_a, d.max_len_b), (4, 0.0, 510));
    assert_eq!(
        (d.length_norm, d.beam_stop, d.alpha),
        (LengthNorm::Power, BeamStop::Transformers, 1.0)
    );
    let tokens = translator.config.special_tokens();
    assert_eq!((tokens.eos, tokens.pad, tokens.bos), (0, 104, 104));
    // Every test line tokenizes to MarianTokenizer's ids (without the EOS the framing adds).
    let reference = reference(&fixture("tiny-reference.json"));
    for case in reference["test"].as_array().expect("test lines") {
        let source = case["source"].as_str().expect("text");
        let ours: Vec<i64> = translator
            .tokenizers
            .source
            .encode(source)
            .expect("encodes")
            .into_iter()
            .map(i64::from)
            .collect();
        let theirs = ids(&case["input_ids"]);
        assert_eq!(ours, theirs[..theirs.len() - 1], "{source}");
    }
}

/// Translates every test line one at a time (as `generate` was called) with `options` and
/// compares the output ids and text with `transformers'` under `key`.
fn check_generate(translator: &Translator, options: &TranslateOptions, key: &str) {
    let reference = reference(&fixture("tiny-reference.json"));
    let cases = reference["test"].as_array().expect("test lines");
    let lines: Vec<String> = cases
        .iter()
        .map(|c| c["source"].as_str().expect("text").to_string())
        .collect();
    let translations = translator
        .translate_lines(&lines, options)
        .expect("translates");
    let mut differ = Vec::new();
    for (case, translation) in cases.iter().zip(&translations) {
        let theirs = ids(&case[format!("{key}_ids")]);
        // generate's output: the decoder start, the tokens, the EOS.
        let tokens: Vec<i64> = theirs[1..theirs.len() - 1].to_vec();
        let ours: Vec<i64> = translation
            .target_tokens
            .iter()
            .map(|&t| i64::from(t))
            .collect();
        if ours != tokens || translation.text != case[format!("{key}_text")] {
            differ.push(format!(
                "{}: ours {:?}, theirs {:?}",
                case["source"],
                translation.text,
                case[format!("{key}_text")]
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} differ: {:#?}",
        differ.len(),
        cases.len(),
        &differ[..differ.len().min(5)]
    );
}

#[test]
fn greedy_search_equals_generate_on_all_500_test_numbers() {
    let (_root, translator) = import(&fixture("tiny"));
    let options = TranslateOptions {
        beam: 1,
        batch_size: 1,
        ..translator.decoding.clone()
    };
    check_generate(&translator, &options, "greedy");
}

#[test]
fn beam_4_under_transformers_rules_equals_generate_on_all_500_test_numbers() {
    let (_root, translator) = import(&fixture("tiny"));
    let options = TranslateOptions {
        batch_size: 1,
        ..translator.decoding.clone()
    };
    assert_eq!(options.beam, 4);
    check_generate(&translator, &options, "beam");
}

#[test]
fn every_variant_of_the_format_imports_with_transformers_logits() {
    for variant in [
        "separate-vocabs",
        "untied-lm-head",
        "old-aliases",
        "no-logits-bias",
        "relu-noscale",
        "gelu",
    ] {
        let dir = fixture(&format!("variants/{variant}"));
        let (_root, translator) = import(&dir);
        let reference = reference(&dir.join("reference.json"));
        let largest = largest_logit_difference(&translator, &reference["logits"]);
        eprintln!("{variant}: largest logit difference {largest:.3e}");
        assert!(largest < 1e-4, "{variant}: {largest}");
    }
}

/// A copy of the tiny fixture in a temporary directory, for damaging.
fn copy_of_tiny() -> tempfile::TempDir {
    let copy = tempfile::tempdir().expect("tempdir");
    for entry in std::fs::read_dir(fixture("tiny")).expect("fixture") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), copy.path().join(entry.file_name())).expect("copy");
    }
    copy
}

/// Imports `dir`, expecting a refusal whose message names `file` and `key`; nothing is written.
fn refused(dir: &Path, file: &str, key: &str) {
    let root = tempfile::tempdir().expect("tempdir");
    let output = root.path().join("run");
    let error = import_marian(dir, &output, &ImportOptions::default()).expect_err("refused");
    let message = error.to_string();
    assert!(message.contains(file), "{message} should name {file}");
    assert!(message.contains(key), "{message} should name {key}");
    assert!(!output.exists(), "nothing written for: {message}");
    assert_eq!(
        std::fs::read_dir(root.path()).expect("list").count(),
        0,
        "no partial directory left"
    );
}

#[test]
fn bad_directories_are_refused_naming_file_and_key_with_nothing_written() {
    // A missing file.
    let copy = copy_of_tiny();
    std::fs::remove_file(copy.path().join("target.spm")).expect("remove");
    refused(copy.path(), "target.spm", "MarianTokenizer");
    let copy = copy_of_tiny();
    std::fs::remove_file(copy.path().join("model.safetensors")).expect("remove");
    refused(copy.path(), "model.safetensors", "weights");

    // Another architecture: a decoder-only model, an unsupported model type.
    let edit_config = |edit: &dyn Fn(&mut serde_json::Map<String, Value>)| {
        let copy = copy_of_tiny();
        let path = copy.path().join("config.json");
        let mut config: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
        edit(config.as_object_mut().expect("object"));
        std::fs::write(&path, config.to_string()).expect("write");
        copy
    };
    let copy = edit_config(&|c| {
        c.insert(
            "architectures".into(),
            serde_json::json!(["MarianForCausalLM"]),
        );
    });
    refused(copy.path(), "config.json", "architectures");
    let copy = edit_config(&|c| {
        c.insert("model_type".into(), serde_json::json!("gpt2"));
    });
    refused(copy.path(), "config.json", "model_type");
    // A tensor of the wrong shape: the configuration says another width.
    let copy = edit_config(&|c| {
        c.insert("encoder_ffn_dim".into(), serde_json::json!(96));
        c.insert("decoder_ffn_dim".into(), serde_json::json!(96));
    });
    refused(copy.path(), "model.safetensors", "fc1");

    // A damaged SentencePiece model.
    let copy = copy_of_tiny();
    let path = copy.path().join("source.spm");
    let mut bytes = std::fs::read(&path).expect("read");
    bytes.truncate(bytes.len() / 3);
    std::fs::write(&path, bytes).expect("write");
    refused(copy.path(), "source.spm", "SentencePiece");

    // A vocab.json that disagrees with the .spm: a piece of the model is missing from it.
    let copy = copy_of_tiny();
    let path = copy.path().join("vocab.json");
    let mut vocab: serde_json::Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
    vocab
        .remove("\u{2581}thousand")
        .expect("a piece of the fixture");
    std::fs::write(&path, Value::Object(vocab).to_string()).expect("write");
    refused(copy.path(), "vocab.json", "thousand");

    // An existing, non-empty output is never touched.
    let root = tempfile::tempdir().expect("tempdir");
    std::fs::write(root.path().join("mine"), "keep").expect("write");
    let error = import_marian(&fixture("tiny"), root.path(), &ImportOptions::default())
        .expect_err("refused");
    assert!(matches!(error, ConvertError::Output { .. }), "{error}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("mine")).expect("kept"),
        "keep"
    );
}

#[test]
fn sentencepiece_models_of_another_kind_are_refused_by_name() {
    for (file, setting) in [("bpe.spm", "BPE"), ("byte-fallback.spm", "byte_fallback")] {
        let copy = copy_of_tiny();
        std::fs::copy(fixture("spm").join(file), copy.path().join("source.spm")).expect("copy");
        refused(copy.path(), "source.spm", setting);
    }
}
