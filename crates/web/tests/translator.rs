//! The browser build's Rust side, natively: a bundle loaded from its bytes through
//! `WebTranslator` translates as `rosetta_infer::Translator` does with the same weights, the
//! result carries what the page shows, and bad bundles and options are refused with the command
//! line's messages.

use rosetta_data::{SubwordTokenizer, TokenizerSettings, Tokenizers};
use rosetta_infer::bundle::{self, Precision};
use rosetta_infer::rosetta_model::TransformerConfig;
use rosetta_infer::rosetta_model::burn::tensor::Device;
use rosetta_infer::{LanguagePair, TranslateOptions, Translator};
use rosetta_web::WebTranslator;

const SENTENCES: [&str; 6] = [
    "one hundred twelve",
    "forty-two",
    "seven thousand three",
    "un cent douze",
    "quarante-deux",
    "sept mille trois",
];

/// A random-weight model with a small tokenizer, and its bundle: (translator, weights, tokenizer
/// JSON, bundle.json text).
fn bundle(precision: Precision) -> (Translator, Vec<u8>, String, String) {
    let settings = TokenizerSettings {
        vocab_size: 280,
        min_frequency: 1,
        ..TokenizerSettings::default()
    };
    let tokenizer = SubwordTokenizer::train(&settings, SENTENCES.iter().copied()).expect("trains");
    let tokenizer_json = tokenizer.to_json().expect("JSON");
    let tokenizers = Tokenizers::from_json(&tokenizer_json, None).expect("loads");
    let vocab = tokenizers.source.vocab_size();
    let config = TransformerConfig::new(vocab, vocab)
        .with_d_model(32)
        .with_n_heads(2)
        .with_d_ff(64)
        .with_n_encoder_layers(1)
        .with_n_decoder_layers(1)
        .with_max_positions(32);
    let device = Device::flex();
    let model = config.init(&device).expect("model");
    let mut translator = Translator::new(model, tokenizers, config, &device);
    translator.step = 7;
    translator.source_lang = Some("en".into());
    translator.target_lang = Some("fr".into());
    let (description, weights) = bundle::describe(&translator, precision).expect("describes");
    let description = serde_json::to_string(&description).expect("JSON");
    (translator, weights, tokenizer_json, description)
}

#[test]
fn a_bundle_from_bytes_translates_as_the_model_it_was_made_from() {
    let (translator, weights, tokenizer, config) = bundle(Precision::F32);
    let web =
        WebTranslator::load(weights, &config, vec![tokenizer.as_bytes().to_vec()]).expect("loads");
    let lines: Vec<String> = SENTENCES.iter().map(|s| s.to_string()).collect();
    for (json, beam) in [
        (r#"{"beam": 1, "maxLen": 12}"#, 1),
        (r#"{"beam": 3, "nbest": 2, "maxLen": 12}"#, 3),
    ] {
        let options = TranslateOptions {
            beam,
            nbest: if beam == 1 { 1 } else { 2 },
            max_len_a: 0.0,
            max_len_b: 12,
            ..TranslateOptions::default()
        };
        let expected = translator
            .translate_lines(&lines, &options)
            .expect("translates");
        let got = web.translate(&lines, Some(json)).expect("translates");
        assert_eq!(got.len(), expected.len());
        for (got, expected) in got.iter().zip(&expected) {
            assert_eq!(got.translation, expected.text);
            assert_eq!(got.target_tokens, expected.target_tokens);
            assert_eq!(got.source_tokens, expected.source_tokens);
            assert_eq!(got.nbest.len(), expected.n_best.len());
            assert_eq!(got.score, expected.n_best[0].1);
            assert!(got.target_tokens.len() <= 12);
        }
    }
    let info = web.info();
    assert_eq!(info.source_lang.as_deref(), Some("en"));
    assert_eq!(info.target_lang.as_deref(), Some("fr"));
    assert_eq!(info.step, 7);
    assert_eq!(info.precision, "f32");
    assert!(info.parameters > 10_000, "{}", info.parameters);
}

#[test]
fn f16_weights_are_half_the_bytes_and_load_as_f32() {
    let (_, full, _, _) = bundle(Precision::F32);
    let (_, weights, tokenizer, config) = bundle(Precision::F16);
    assert!(
        weights.len() < full.len() * 11 / 20,
        "{} against {}",
        weights.len(),
        full.len()
    );
    let web =
        WebTranslator::load(weights, &config, vec![tokenizer.as_bytes().to_vec()]).expect("loads");
    assert_eq!(web.info().precision, "f16");
    let got = web
        .translate(
            &["forty-two".to_string(), String::new()],
            Some(r#"{"beam": 2}"#),
        )
        .expect("translates");
    assert_eq!(got.len(), 2);
    assert_eq!(
        got[1].translation, "",
        "an empty line gives an empty translation"
    );
}

#[test]
fn bad_bundles_and_options_are_refused_with_the_command_lines_messages() {
    let (_, weights, tokenizer, config) = bundle(Precision::F16);
    let message = |result: Result<WebTranslator, rosetta_web::WebError>| match result {
        Ok(_) => panic!("loaded"),
        Err(error) => error.to_string(),
    };
    let mut damaged = weights.clone();
    damaged[10] ^= 1;
    let error = message(WebTranslator::load(
        damaged,
        &config,
        vec![tokenizer.as_bytes().to_vec()],
    ));
    assert!(
        error.starts_with("model bundle model.bpk: its SHA-256"),
        "{error}"
    );
    let error = message(WebTranslator::load(
        weights.clone(),
        "{",
        vec![tokenizer.as_bytes().to_vec()],
    ));
    assert!(
        error.starts_with("model bundle bundle.json: not JSON"),
        "{error}"
    );
    // Weights too small for the model described: refused before the model is built.
    let huge = config.replace("\"d_model\":32", "\"d_model\":4096");
    assert_ne!(huge, config);
    let error = message(WebTranslator::load(
        weights.clone(),
        &huge,
        vec![tokenizer.as_bytes().to_vec()],
    ));
    assert!(
        error.contains("cannot hold the model bundle.json describes"),
        "{error}"
    );
    let misspelt = config.replace("\"d_model\":32", "\"d_model\":32,\"activaton\":\"gelu\"");
    let error = message(WebTranslator::load(
        weights.clone(),
        &misspelt,
        vec![tokenizer.as_bytes().to_vec()],
    ));
    assert!(
        error.contains("key `model.activaton`: unknown field"),
        "{error}"
    );
    let error = message(WebTranslator::load(
        weights.clone(),
        &config,
        vec!["not a tokenizer".as_bytes().to_vec()],
    ));
    assert!(error.contains("tokenizer.json"), "{error}");
    let error = message(WebTranslator::load(
        weights.clone(),
        &config,
        vec![tokenizer.as_bytes().to_vec(), tokenizer.as_bytes().to_vec()],
    ));
    assert!(
        error.contains("2 tokenizer files given, the bundle has 1"),
        "{error}"
    );

    assert_eq!(
        WebTranslator::bundle_files(&config).expect("a bundle description"),
        vec!["model.bpk", "tokenizer.json"]
    );
    let error = WebTranslator::bundle_files(r#"{"format": "ctranslate2"}"#)
        .unwrap_err()
        .to_string();
    assert!(error.contains("not a Rosetta model bundle"), "{error}");

    let web =
        WebTranslator::load(weights, &config, vec![tokenizer.as_bytes().to_vec()]).expect("loads");
    let error = web
        .translate(&["forty-two".to_string()], Some(r#"{"beam": 0}"#))
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "option --beam: is 0; the beam size must be at least 1 (1 is greedy search)"
    );
}

/// A multilingual bundle (two directions, tags in its tokenizer) translates into the language
/// `targetLang` names, as the native translator does with that target, and refuses a language
/// it was not trained for, or none, naming those it was.
#[test]
fn a_multilingual_bundle_translates_into_target_lang_and_names_the_trained_ones() {
    let settings = TokenizerSettings {
        vocab_size: 290,
        min_frequency: 1,
        ..TokenizerSettings::default()
    };
    let tags = vec![">>fr<<".to_string(), ">>en<<".to_string()];
    let tokenizer = SubwordTokenizer::train_with_tags(&settings, SENTENCES.iter().copied(), &tags)
        .expect("trains");
    let tokenizer_json = tokenizer.to_json().expect("JSON");
    let tokenizers = Tokenizers::from_json(&tokenizer_json, None).expect("loads");
    let vocab = tokenizers.source.vocab_size();
    let config = TransformerConfig::new(vocab, vocab)
        .with_d_model(32)
        .with_n_heads(2)
        .with_d_ff(64)
        .with_n_encoder_layers(1)
        .with_n_decoder_layers(1)
        .with_max_positions(32);
    let device = Device::flex();
    let model = config.init(&device).expect("model");
    let mut translator = Translator::new(model, tokenizers, config, &device);
    translator.directions = vec![
        LanguagePair {
            source: "en".into(),
            target: "fr".into(),
        },
        LanguagePair {
            source: "fr".into(),
            target: "en".into(),
        },
    ];
    let (description, weights) = bundle::describe(&translator, Precision::F32).expect("describes");
    let description = serde_json::to_string(&description).expect("JSON");
    let web = WebTranslator::load(weights, &description, vec![tokenizer_json.into_bytes()])
        .expect("loads");
    assert_eq!(web.info().directions, translator.directions);
    let lines: Vec<String> = SENTENCES[..3].iter().map(|s| s.to_string()).collect();
    let options = TranslateOptions {
        beam: 1,
        max_len_a: 0.0,
        max_len_b: 12,
        ..TranslateOptions::default()
    };
    for (target, tag) in [("fr", 4), ("en", 5)] {
        let json = format!(r#"{{"beam": 1, "maxLen": 12, "targetLang": "{target}"}}"#);
        let ours = web.translate(&lines, Some(&json)).expect("translates");
        let native = translator
            .translate_lines_into(&lines, &options, Some(target))
            .expect("native");
        for (a, b) in ours.iter().zip(&native) {
            assert_eq!(a.translation, b.text, "{target}");
            assert_eq!(a.source_tokens[0], tag, "{target}");
            assert_eq!(a.source_tokens, b.source_tokens, "{target}");
        }
    }
    for json in [r#"{"targetLang": "de"}"#, "{}"] {
        let error = web
            .translate(&lines, Some(json))
            .expect_err("refused")
            .to_string();
        assert!(
            error.contains("target-lang")
                && error.contains("en, fr")
                && error.contains("en-fr, fr-en"),
            "{json}: {error}"
        );
    }
}
