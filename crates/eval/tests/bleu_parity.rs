//! Parity with sacreBLEU: every fixture case written by `scripts/make_bleu_fixture.py` scores
//! the same here (BLEU and chrF to 0.01, lengths and n-gram counts exactly, precisions to 0.01,
//! printed forms and signatures identical), and the 13a tokenizer gives the same tokens.

use std::path::PathBuf;

use rosetta_eval::{
    BleuStats, Chrf, SACREBLEU_COMPATIBLE_VERSION, corpus_bleu, corpus_bleu_stats, corpus_chrf,
    read_segments, tokenize_13a,
};
use serde_json::Value;

const TOLERANCE: f64 = 0.01;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bleu")
}

fn load(name: &str) -> Value {
    let text = std::fs::read_to_string(fixtures().join(name)).expect("fixture file");
    serde_json::from_str(&text).expect("fixture json")
}

fn f64s(value: &Value) -> Vec<f64> {
    value
        .as_array()
        .expect("array")
        .iter()
        .map(|v| v.as_f64().expect("number"))
        .collect()
}

fn u64s(value: &Value) -> Vec<u64> {
    value
        .as_array()
        .expect("array")
        .iter()
        .map(|v| v.as_u64().expect("integer"))
        .collect()
}

struct Case {
    name: String,
    hyps: Vec<String>,
    refs: Vec<Vec<String>>,
    expected: Value,
}

fn cases() -> Vec<Case> {
    let meta = load("cases.json");
    assert_eq!(meta["sacrebleu_version"], SACREBLEU_COMPATIBLE_VERSION);
    meta["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|case| {
            let name = case["name"].as_str().expect("name").to_owned();
            let hyps = read_segments(&fixtures().join(format!("{name}.hyp"))).expect("hyp");
            let nrefs = case["nrefs"].as_u64().expect("nrefs") as usize;
            let refs: Vec<Vec<String>> = (0..nrefs)
                .map(|k| read_segments(&fixtures().join(format!("{name}.ref{k}"))).expect("ref"))
                .collect();
            assert_eq!(
                hyps.len() as u64,
                case["lines"].as_u64().expect("lines"),
                "{name}"
            );
            Case {
                name,
                hyps,
                refs,
                expected: case.clone(),
            }
        })
        .collect()
}

#[test]
fn fixtures_cover_the_required_cases() {
    let names: Vec<String> = cases().into_iter().map(|c| c.name).collect();
    for required in [
        "system",
        "empty_lines",
        "all_empty",
        "unicode",
        "one_sentence",
        "identical",
        "tokenization",
        "brevity",
        "long_hyp",
        "multi_ref",
    ] {
        assert!(
            names.iter().any(|n| n == required),
            "missing case {required}"
        );
    }
}

#[test]
fn bleu_matches_sacrebleu_on_every_fixture() {
    let mut worst: f64 = 0.0;
    for case in cases() {
        let name = &case.name;
        let expected = &case.expected["bleu"];
        let score = corpus_bleu(&case.hyps, &case.refs).expect("bleu");
        let diff = (score.score - expected["score"].as_f64().expect("score")).abs();
        worst = worst.max(diff);
        assert!(
            diff <= TOLERANCE,
            "{name}: BLEU {} vs {}",
            score.score,
            expected["score"]
        );
        assert_eq!(
            score.sys_len,
            expected["sys_len"].as_u64().expect("sys_len"),
            "{name}"
        );
        assert_eq!(
            score.ref_len,
            expected["ref_len"].as_u64().expect("ref_len"),
            "{name}"
        );
        assert_eq!(
            score.matches.to_vec(),
            u64s(&expected["counts"]),
            "{name}: matches"
        );
        assert_eq!(
            score.totals.to_vec(),
            u64s(&expected["totals"]),
            "{name}: totals"
        );
        for (ours, theirs) in score.precisions.iter().zip(f64s(&expected["precisions"])) {
            assert!(
                (ours - theirs).abs() <= TOLERANCE,
                "{name}: precision {ours} vs {theirs}"
            );
        }
        assert!(
            (score.bp - expected["bp"].as_f64().expect("bp")).abs() <= 1e-9,
            "{name}: bp"
        );
        assert!((score.ratio - expected["ratio"].as_f64().expect("ratio")).abs() <= 1e-9);
        assert_eq!(
            score.to_string(),
            expected["display"].as_str().expect("display"),
            "{name}"
        );
        assert_eq!(
            score.line(case.refs.len()),
            expected["line"].as_str().expect("line")
        );
        assert!(
            expected["line"]
                .as_str()
                .expect("line")
                .contains(expected["signature"].as_str().expect("signature"))
        );
    }
    println!("largest BLEU difference from sacreBLEU: {worst:.3e}");
}

#[test]
fn chrf_matches_sacrebleu_on_every_fixture() {
    let mut worst: f64 = 0.0;
    for case in cases() {
        let name = &case.name;
        let expected = &case.expected["chrf"];
        let score = corpus_chrf(&case.hyps, &case.refs).expect("chrf");
        let diff = (score.score - expected["score"].as_f64().expect("score")).abs();
        worst = worst.max(diff);
        assert!(
            diff <= TOLERANCE,
            "{name}: chrF {} vs {}",
            score.score,
            expected["score"]
        );
        assert_eq!(
            score.to_string(),
            expected["display"].as_str().expect("display"),
            "{name}"
        );
        assert_eq!(
            score.line(case.refs.len()),
            expected["line"].as_str().expect("line")
        );
    }
    println!("largest chrF difference from sacreBLEU: {worst:.3e}");
}

#[test]
fn statistics_accumulate_to_the_corpus_score() {
    // Scoring in two shards and adding the statistics gives the whole corpus' score.
    let case = cases()
        .into_iter()
        .find(|c| c.name == "system")
        .expect("system case");
    let half = case.hyps.len() / 2;
    let refs_a: Vec<&[String]> = case.refs.iter().map(|r| &r[..half]).collect();
    let refs_b: Vec<&[String]> = case.refs.iter().map(|r| &r[half..]).collect();
    let stats: BleuStats = corpus_bleu_stats(&case.hyps[..half], &refs_a).expect("a")
        + corpus_bleu_stats(&case.hyps[half..], &refs_b).expect("b");
    let whole = corpus_bleu(&case.hyps, &case.refs).expect("whole");
    assert_eq!(stats.score(), whole);

    let chrf = Chrf::default();
    let mut chrf_stats = chrf.corpus_stats(&case.hyps[..half], &refs_a).expect("a");
    chrf_stats.add(&chrf.corpus_stats(&case.hyps[half..], &refs_b).expect("b"));
    let expected = case.expected["chrf"]["score"].as_f64().expect("score");
    assert!((chrf.score(&chrf_stats).score - expected).abs() <= TOLERANCE);
}

#[test]
fn tokenizer_13a_matches_sacrebleu() {
    let fixture = load("tokenize_13a.json");
    assert_eq!(fixture["sacrebleu_version"], SACREBLEU_COMPATIBLE_VERSION);
    let cases = fixture["cases"].as_array().expect("cases");
    assert!(cases.len() >= 20);
    for case in cases {
        let input = case["input"].as_str().expect("input");
        let output = case["output"].as_str().expect("output");
        assert_eq!(tokenize_13a(input), output, "input {input:?}");
    }
}
