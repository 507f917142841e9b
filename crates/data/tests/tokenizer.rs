//! Tokenizers on the real corpora: no `<unk>`, exact round trip, and the saved
//! `tokenizer.json` loads unchanged in Hugging Face's Python `tokenizers`.

mod common;

use std::process::Command;

use unicode_normalization::UnicodeNormalization;

use rosetta_data::{
    CorpusFiles, SPECIAL_TOKEN_IDS, SubwordModel, SubwordTokenizer, TokenizerSettings, read_corpus,
};

#[test]
#[ignore = "needs ../shared/data (the shared corpora); .ci/run runs it with --ignored"]
fn multi30k_validation_round_trips_with_bpe_and_unigram() {
    let data = common::shared_data();
    let train = read_corpus(&CorpusFiles::Parallel {
        source: data.join("multi30k/train.en"),
        target: data.join("multi30k/train.de"),
    })
    .expect("multi30k train");
    let valid = read_corpus(&CorpusFiles::Parallel {
        source: data.join("multi30k/val.en"),
        target: data.join("multi30k/val.de"),
    })
    .expect("multi30k val");
    // A slice of training keeps the test quick; validation is checked in full.
    let texts: Vec<&String> = train
        .source
        .iter()
        .take(5000)
        .chain(train.target.iter().take(5000))
        .collect();
    for model in [SubwordModel::Bpe, SubwordModel::Unigram] {
        let settings = TokenizerSettings {
            model,
            vocab_size: 2000,
            ..TokenizerSettings::default()
        };
        let tok = SubwordTokenizer::train(&settings, texts.iter()).expect("train");
        assert!(tok.vocab_size() <= 2000, "{model:?}: {}", tok.vocab_size());
        for line in valid.source.iter().chain(&valid.target) {
            let ids = tok.encode(line).expect("encode");
            assert!(
                !ids.contains(&SPECIAL_TOKEN_IDS.unk),
                "{model:?}: <unk> in {line:?}"
            );
            let expected: String = line.nfc().collect();
            assert_eq!(tok.decode(&ids).expect("decode"), expected, "{model:?}");
        }
    }
}

#[test]
fn decomposed_unicode_comes_back_composed() {
    let tok = SubwordTokenizer::train(
        &TokenizerSettings {
            vocab_size: 300,
            ..TokenizerSettings::default()
        },
        ["Müller läuft", "Straße"].iter(),
    )
    .expect("train");
    let ids = tok.encode("Mu\u{0308}ller").expect("encode");
    assert_eq!(tok.decode(&ids).expect("decode"), "M\u{00fc}ller");
}

/// The Python interpreter to use: `ROSETTA_PYTHON`, else `python3`.
fn python() -> String {
    std::env::var("ROSETTA_PYTHON").unwrap_or_else(|_| "python3".into())
}

#[test]
#[ignore = "needs Python's `tokenizers` package (ROSETTA_PYTHON); .ci/run installs it and runs this test with --ignored"]
fn python_tokenizers_loads_the_saved_file_and_agrees() {
    let probe = Command::new(python())
        .args(["-c", "import tokenizers"])
        .output();
    assert!(
        probe.is_ok_and(|out| out.status.success()),
        "`{} -c 'import tokenizers'` failed: install the Python `tokenizers` package (or set ROSETTA_PYTHON) to run this check",
        python()
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let texts = [
        "a man rides a horse on the beach",
        "ein Mann reitet ein Pferd am Strand",
        "zwei Hunde spielen",
    ];
    let sample = "Zwei Männer — naïve café, 3½ Hunde!";
    for model in [SubwordModel::Bpe, SubwordModel::Unigram] {
        let tok = SubwordTokenizer::train(
            &TokenizerSettings {
                model,
                vocab_size: 400,
                ..TokenizerSettings::default()
            },
            texts.iter().cycle().take(100),
        )
        .expect("train");
        let path = dir.path().join(format!("{model:?}.json"));
        tok.save(&path).expect("save");
        let ours: Vec<String> = tok
            .encode(sample)
            .expect("encode")
            .iter()
            .map(u32::to_string)
            .collect();
        let script = "import sys, tokenizers\nt = tokenizers.Tokenizer.from_file(sys.argv[1])\n\
             ids = t.encode(sys.argv[2], add_special_tokens=False).ids\n\
             print(' '.join(map(str, ids)))\nprint(t.decode(ids))";
        let out = Command::new(python())
            .args(["-c", script, path.to_str().expect("utf-8 path"), sample])
            .output()
            .expect("run python");
        assert!(
            out.status.success(),
            "{model:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).expect("utf-8");
        let mut lines = stdout.lines();
        assert_eq!(
            lines.next(),
            Some(ours.join(" ").as_str()),
            "{model:?}: ids differ"
        );
        assert_eq!(lines.next(), Some(sample), "{model:?}: decode differs");
    }
}
