//! Reading training batches from an encoded corpus on disk (`StoredCorpus`, positioned reads)
//! beside the same corpus in memory (`EncodedCorpus`), in one run.
//!
//! `cargo bench -p rosetta-data --bench store`. Writes 1,000,000 synthetic pairs (lengths 5 to
//! 40 subwords, as real sentences) into a temporary directory, then reads 2,000 batches of 128
//! random pairs from each store and prints microseconds per batch and per pair. The page cache
//! holds the files (a second read of a corpus that fits in RAM); a corpus larger than RAM adds
//! the disk's random-read latency per page.

use std::time::Instant;

use rosetta_data::batcher::read_pairs;
use rosetta_data::rng::SplitMix64;
use rosetta_data::stored::StoredCorpusWriter;
use rosetta_data::{FilterStats, PairSource, ReadStats};

const PAIRS: u32 = 1_000_000;
const BATCHES: usize = 2_000;
const BATCH: usize = 128;

fn time_batches(corpus: &dyn PairSource, batches: &[Vec<u32>]) -> f64 {
    let start = Instant::now();
    let mut tokens = 0usize;
    for batch in batches {
        let pairs = match read_pairs(corpus, batch) {
            Ok(pairs) => pairs,
            Err(e) => {
                eprintln!("reading a batch failed: {e}");
                std::process::exit(1);
            }
        };
        tokens += pairs
            .iter()
            .map(|p| p.source.len() + p.target.len())
            .sum::<usize>();
    }
    std::hint::black_box(tokens);
    start.elapsed().as_secs_f64() * 1e6 / batches.len() as f64
}

fn main() {
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("no temporary directory: {e}");
            std::process::exit(1);
        }
    };
    let mut rng = SplitMix64::new(7);
    let mut writer = match StoredCorpusWriter::create(&dir.path().join("encoded"), "bench") {
        Ok(writer) => writer,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    for _ in 0..PAIRS {
        let s: Vec<u32> = (0..5 + rng.below(36))
            .map(|_| rng.below(16_000) as u32)
            .collect();
        let t: Vec<u32> = (0..5 + rng.below(36))
            .map(|_| rng.below(16_000) as u32)
            .collect();
        if let Err(e) = writer.push(&s, &t) {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
    let n = PAIRS as usize;
    let (read, filter) = (ReadStats::all_kept(n), FilterStats::all_kept(n));
    let stored = match writer.finish(read, filter) {
        Ok(stored) => stored,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let memory = match stored.load() {
        Ok(memory) => memory,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let batches: Vec<Vec<u32>> = (0..BATCHES)
        .map(|_| (0..BATCH).map(|_| rng.below(PAIRS as u64) as u32).collect())
        .collect();
    // Warm both (page cache, allocator), then measure.
    time_batches(&stored, &batches[..100]);
    time_batches(&memory, &batches[..100]);
    let disk = time_batches(&stored, &batches);
    let ram = time_batches(&memory, &batches);
    println!(
        "{} pairs, {} MiB on disk; {BATCHES} batches of {BATCH} random pairs",
        PAIRS,
        stored.disk_bytes() >> 20
    );
    println!("| store | µs per batch | µs per pair |");
    println!("| --- | --- | --- |");
    for (name, us) in [("on disk (positioned reads)", disk), ("in memory", ram)] {
        println!("| {name} | {us:.0} | {:.2} |", us / BATCH as f64);
    }
}
