//! Tokenizer training time and encoding throughput on Multi30k train (en-de, 29,000 pairs).
//!
//! `cargo bench -p rosetta-data --bench tokenizer` (needs `../shared/data/multi30k`).
//! Prints one row per tokenizer: training seconds, then sentences/s and subword tokens/s for
//! encoding both sides of the training split (best of three runs).

use std::path::PathBuf;
use std::time::Instant;

use rosetta_data::{CorpusFiles, SubwordModel, SubwordTokenizer, TokenizerSettings, read_corpus};

fn main() {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/multi30k");
    if !data.is_dir() {
        eprintln!("skipped: {} not found", data.display());
        return;
    }
    let corpus = match read_corpus(&CorpusFiles::Parallel {
        source: data.join("train.en"),
        target: data.join("train.de"),
    }) {
        Ok(corpus) => corpus,
        Err(e) => {
            eprintln!("cannot read Multi30k: {e}");
            std::process::exit(1);
        }
    };
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    println!(
        "Multi30k train en+de: {} pairs, {threads} threads",
        corpus.len()
    );
    println!("| tokenizer | vocab | train (s) | encode sentences/s | encode tokens/s |");
    println!("| --- | --- | --- | --- | --- |");
    for (model, vocab_size) in [(SubwordModel::Bpe, 8000), (SubwordModel::Unigram, 8000)] {
        let settings = TokenizerSettings {
            model,
            vocab_size,
            ..TokenizerSettings::default()
        };
        let start = Instant::now();
        let tokenizer =
            match SubwordTokenizer::train(&settings, corpus.source.iter().chain(&corpus.target)) {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("training failed: {e}");
                    std::process::exit(1);
                }
            };
        let train_seconds = start.elapsed().as_secs_f64();
        let mut best = f64::INFINITY;
        let mut tokens = 0;
        for _ in 0..3 {
            let start = Instant::now();
            let (Ok(s), Ok(t)) = (
                tokenizer.encode_batch(&corpus.source),
                tokenizer.encode_batch(&corpus.target),
            ) else {
                eprintln!("encoding failed");
                std::process::exit(1);
            };
            best = best.min(start.elapsed().as_secs_f64());
            tokens = s.iter().chain(&t).map(Vec::len).sum::<usize>();
        }
        let sentences = 2 * corpus.len();
        println!(
            "| {model:?} | {} | {train_seconds:.2} | {:.0} | {:.0} |",
            tokenizer.vocab_size(),
            sentences as f64 / best,
            tokens as f64 / best
        );
    }
}
