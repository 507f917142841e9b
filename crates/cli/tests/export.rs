//! `rosetta export`: the safetensors export imports back (`rosetta import-torch`), a model
//! bundle (`--web`) translates like its checkpoint and is refused when damaged, a directory that
//! holds files is never written into, and CTranslate2 loads the CTranslate2 export and decodes
//! what Rosetta's greedy search decodes (where Python's `ctranslate2` is installed).

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{assert_success, repo, rosetta, test_sentences, trained_run, translate_lines};

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

#[test]
fn the_safetensors_export_imports_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let export = dir.path().join("export");
    let out = rosetta(&[
        "export",
        "--checkpoint",
        utf8(trained_run()),
        "--format",
        "safetensors",
        "--output",
        utf8(&export),
    ]);
    assert_success(&out);
    for file in ["model.safetensors", "model.json", "tokenizer.json"] {
        assert!(export.join(file).is_file(), "no {file} in the export");
    }
    // Only the export itself is left: no partial directory beside it.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["export"]);

    let imported = dir.path().join("imported");
    let out = rosetta(&[
        "import-torch",
        "--checkpoint",
        utf8(&export.join("model.safetensors")),
        "--model-config",
        utf8(&export.join("model.json")),
        "--output",
        utf8(&imported),
    ]);
    assert_success(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("imported "), "{stdout}");
    assert!(imported.join("model.bpk").is_file());
}

#[test]
fn an_export_never_writes_into_a_directory_that_holds_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let keep = dir.path().join("notes.txt");
    std::fs::write(&keep, "mine").expect("write");
    for format in ["safetensors", "ctranslate2", "web"] {
        let out = rosetta(&[
            "export",
            "--checkpoint",
            utf8(trained_run()),
            "--format",
            format,
            "--output",
            utf8(dir.path()),
        ]);
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("is not empty"), "{stderr}");
        assert_eq!(std::fs::read_to_string(&keep).expect("kept"), "mine");
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 1);
    }
    // A checkpoint that does not exist: refused before anything is written.
    let missing = dir.path().join("missing-run");
    let export = dir.path().join("export");
    let out = rosetta(&[
        "export",
        "--checkpoint",
        utf8(&missing),
        "--format",
        "ctranslate2",
        "--output",
        utf8(&export),
    ]);
    assert!(!out.status.success());
    assert!(!export.exists());
}

fn export_web(dir: &Path, name: &str, precision: &str) -> std::path::PathBuf {
    let bundle = dir.join(name);
    let out = rosetta(&[
        "export",
        "--checkpoint",
        utf8(trained_run()),
        "--web",
        "--precision",
        precision,
        "--output",
        utf8(&bundle),
    ]);
    assert_success(&out);
    for file in ["model.bpk", "bundle.json", "tokenizer.json"] {
        assert!(bundle.join(file).is_file(), "no {file} in the bundle");
    }
    bundle
}

#[test]
fn a_web_bundle_translates_like_its_checkpoint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f32_bundle = export_web(dir.path(), "f32", "f32");
    let f16_bundle = export_web(dir.path(), "f16", "f16");
    // f16 stores two bytes a parameter, f32 four (plus the same small header).
    let size = |b: &Path| std::fs::metadata(b.join("model.bpk")).expect("size").len();
    let (full, half) = (size(&f32_bundle), size(&f16_bundle));
    assert!(
        half < full * 11 / 20 && half > full * 9 / 20,
        "{half} against {full}"
    );

    let lines = test_sentences(60);
    for beam in [1, 4] {
        let expected = translate_lines(trained_run(), &lines, beam);
        assert_success(&expected);
        // f32: the checkpoint's weights bit for bit, so the same translations.
        let got = translate_lines(&f32_bundle, &lines, beam);
        assert_success(&got);
        assert_eq!(
            String::from_utf8_lossy(&got.stdout),
            String::from_utf8_lossy(&expected.stdout),
            "beam {beam}"
        );
        // f16: rounded weights, one translation per line.
        let got = translate_lines(&f16_bundle, &lines, beam);
        assert_success(&got);
        assert_eq!(String::from_utf8_lossy(&got.stdout).lines().count(), 60);
    }
    let config: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(f16_bundle.join("bundle.json")).expect("bundle.json"),
    )
    .expect("JSON");
    assert_eq!(config["format"], "rosetta-bundle");
    assert_eq!(config["precision"], "f16");
    assert_eq!(config["source_lang"], "en");
    assert_eq!(config["target_lang"], "fr");
}

#[test]
fn a_damaged_web_bundle_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bundle = export_web(dir.path(), "bundle", "f16");
    let lines = test_sentences(2);
    let refused = |what: &str, expected: &[&str]| {
        let out = translate_lines(&bundle, &lines, 1);
        assert!(!out.status.success(), "{what}: translated");
        let stderr = String::from_utf8_lossy(&out.stderr);
        for part in expected {
            assert!(stderr.contains(part), "{what}: {stderr}");
        }
    };
    let weights = bundle.join("model.bpk");
    let original = std::fs::read(&weights).expect("read");
    let mut damaged = original.clone();
    damaged[original.len() / 2] ^= 1;
    std::fs::write(&weights, &damaged).expect("write");
    refused("a flipped bit", &["model.bpk", "SHA-256"]);
    std::fs::write(&weights, &original[..original.len() - 10]).expect("write");
    refused("a truncated file", &["model.bpk", "SHA-256"]);
    std::fs::write(&weights, &original).expect("write");

    let config_path = bundle.join("bundle.json");
    let config = std::fs::read_to_string(&config_path).expect("read");
    std::fs::write(&config_path, config.replace("\"step\"", "\"steps\"")).expect("write");
    refused("a misspelt key", &["bundle.json", "steps"]);
    std::fs::write(
        &config_path,
        config.replace("\"version\": 1", "\"version\": 7"),
    )
    .expect("write");
    refused("a later version", &["bundle.json", "version"]);
    std::fs::write(&config_path, &config).expect("write");

    let tokenizer = bundle.join("tokenizer.json");
    let text = std::fs::read_to_string(&tokenizer).expect("read");
    let mut value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    value["normalizer"] = serde_json::Value::Null;
    std::fs::write(&tokenizer, value.to_string()).expect("write");
    refused("another tokenizer", &["tokenizer.json", "fingerprint"]);
    std::fs::write(&tokenizer, &text).expect("write");
    assert_success(&translate_lines(&bundle, &lines, 1));
}

#[test]
fn export_flags_are_checked_before_anything_loads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out_dir = dir.path().join("out");
    let refused = |args: &[&str], expected: &str| {
        let mut all = vec!["export", "--checkpoint", "no-such-run", "--output"];
        all.push(utf8(&out_dir));
        all.extend_from_slice(args);
        let out = rosetta(&all);
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!out_dir.exists());
    };
    refused(&[], "--format");
    refused(&["--web", "--format", "web"], "cannot be used with");
    refused(
        &["--format", "safetensors", "--precision", "f32"],
        "option --precision: only the web format has a precision",
    );
    refused(&["--web", "--precision", "f8"], "f8");
    // Flags in order: the missing checkpoint is what fails.
    refused(&["--web", "--precision", "f32"], "no-such-run");
}

/// The Python interpreter to use: `ROSETTA_PYTHON`, else `python3`.
fn python() -> String {
    std::env::var("ROSETTA_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Fails, saying what to install, unless [`python`] has `ctranslate2` and `tokenizers`.
fn require_ctranslate2() {
    let check = Command::new(python())
        .args(["-c", "import ctranslate2, tokenizers"])
        .output()
        .expect("run python");
    assert!(
        check.status.success(),
        "`{} -c 'import ctranslate2, tokenizers'` failed: install them (or set ROSETTA_PYTHON) to run this check",
        python()
    );
}

/// What `scripts/ctranslate2_translate.py EXPORT ARGS < INPUT` prints (it must succeed).
fn ctranslate2_translate(export: &Path, args: &[&str], input: &Path) -> String {
    let out = Command::new(python())
        .arg(repo().join("scripts/ctranslate2_translate.py"))
        .arg(export)
        .args(args)
        .stdin(std::fs::File::open(input).expect("input"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("run ctranslate2_translate.py");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
#[ignore = "needs Python's `ctranslate2` and `tokenizers` packages (ROSETTA_PYTHON); .ci/run installs them and runs this test with --ignored"]
fn ctranslate2_decodes_the_export_as_rosetta_greedy_search_does() {
    require_ctranslate2();
    let dir = tempfile::tempdir().expect("tempdir");
    let export = dir.path().join("ct2");
    assert_success(&rosetta(&[
        "export",
        "--checkpoint",
        utf8(trained_run()),
        "--format",
        "ctranslate2",
        "--output",
        utf8(&export),
    ]));
    for file in [
        "model.bin",
        "config.json",
        "shared_vocabulary.json",
        "tokenizer.json",
    ] {
        assert!(export.join(file).is_file(), "no {file} in the export");
    }

    // The test numbers, a blank line, a line of spaces and a line too long for the model
    // (cut to its 31 source positions by both).
    let mut sentences = test_sentences(200);
    sentences.insert(10, String::new());
    sentences.insert(20, "   ".into());
    sentences.insert(30, sentences[0].repeat(6));
    let input = dir.path().join("input.en");
    std::fs::write(&input, sentences.join("\n") + "\n").expect("write input");
    let ours = dir.path().join("rosetta.fr");
    assert_success(&rosetta(&[
        "translate",
        "--checkpoint",
        utf8(trained_run()),
        "--beam",
        "1",
        "--input",
        utf8(&input),
        "--output",
        utf8(&ours),
    ]));
    let theirs = ctranslate2_translate(&export, &[], &input);
    let ours = std::fs::read_to_string(&ours).expect("rosetta output");
    let pairs: Vec<(&str, &str)> = ours.lines().zip(theirs.lines()).collect();
    assert_eq!(pairs.len(), sentences.len());
    let differing: Vec<_> = pairs
        .iter()
        .zip(&sentences)
        .filter(|((a, b), _)| a != b)
        .collect();
    assert!(
        differing.is_empty(),
        "{} of {} differ, e.g. {:?}",
        differing.len(),
        sentences.len(),
        &differing[..differing.len().min(3)]
    );
}

#[test]
#[ignore = "needs Python's `ctranslate2` and `tokenizers` packages (ROSETTA_PYTHON); .ci/run installs them and runs this test with --ignored"]
fn ctranslate2_translates_each_direction_of_a_multilingual_export_as_rosetta_does() {
    require_ctranslate2();
    let run = common::trained_multilingual_run();
    let dir = tempfile::tempdir().expect("tempdir");
    let export = dir.path().join("ct2");
    assert_success(&rosetta(&[
        "export",
        "--checkpoint",
        utf8(run),
        "--format",
        "ctranslate2",
        "--output",
        utf8(&export),
    ]));
    let english = test_sentences(100);
    let french: Vec<String> = std::fs::read_to_string(repo().join("data/numbers/test.fr"))
        .expect("test.fr")
        .lines()
        .take(100)
        .map(str::to_string)
        .collect();
    for (target, sentences) in [("fr", &english), ("en", &french)] {
        let input = dir.path().join(format!("input-{target}.txt"));
        std::fs::write(&input, sentences.join("\n") + "\n").expect("write input");
        let ours = rosetta(&[
            "translate",
            "--checkpoint",
            utf8(run),
            "--beam",
            "1",
            "--target-lang",
            target,
            "--input",
            utf8(&input),
        ]);
        assert_success(&ours);
        let theirs = ctranslate2_translate(&export, &["--target-lang", target], &input);
        let ours = String::from_utf8(ours.stdout).expect("utf-8");
        assert_eq!(ours.lines().count(), sentences.len(), "{target}");
        let differing = ours
            .lines()
            .zip(theirs.lines())
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(differing, 0, "{target}: {differing} lines differ");
        assert_eq!(ours.lines().count(), theirs.lines().count(), "{target}");
    }
}

#[test]
#[ignore = "needs Python's `ctranslate2` and `tokenizers` packages (ROSETTA_PYTHON); .ci/run installs them and runs this test with --ignored"]
fn an_int8_ctranslate2_export_translates_as_ctranslate2_quantizes_the_float_one() {
    require_ctranslate2();
    let dir = tempfile::tempdir().expect("tempdir");
    let export = |name: &str, extra: &[&str]| {
        let path = dir.path().join(name);
        let mut args = vec![
            "export",
            "--checkpoint",
            utf8(trained_run()),
            "--format",
            "ctranslate2",
            "--output",
            utf8(&path),
        ];
        args.extend(extra);
        assert_success(&rosetta(&args));
        path
    };
    let float = export("float32", &[]);
    let int8 = export("int8", &["--quantize", "int8"]);
    let size = |path: &Path| {
        std::fs::metadata(path.join("model.bin"))
            .expect("model.bin")
            .len()
    };
    assert!(
        size(&int8) < size(&float),
        "int8 {} bytes, float32 {}",
        size(&int8),
        size(&float)
    );
    let sentences = test_sentences(100);
    let input = dir.path().join("input.en");
    std::fs::write(&input, sentences.join("\n") + "\n").expect("write input");
    let translate =
        |model: &Path| ctranslate2_translate(model, &["--compute-type", "int8"], &input);
    // CTranslate2 quantizes the float32 export at load with the same rule the int8 export
    // was written by: the same int8 weights, the same translations (all but a rounding tie
    // or two).
    let (theirs, ours) = (translate(&float), translate(&int8));
    assert_eq!(ours.lines().count(), sentences.len());
    let same = theirs
        .lines()
        .zip(ours.lines())
        .filter(|(a, b)| a == b)
        .count();
    assert!(
        same * 100 >= sentences.len() * 98,
        "{same} of {} equal",
        sentences.len()
    );
    // Not with the other formats.
    let out = rosetta(&[
        "export",
        "--checkpoint",
        utf8(trained_run()),
        "--format",
        "safetensors",
        "--quantize",
        "int8",
        "--output",
        utf8(&dir.path().join("no")),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("option --quantize"));
}
