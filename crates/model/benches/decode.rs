//! Decoding speed: greedy with the key/value cache, greedy re-running the decoder over the
//! prefix, and beam search (5 beams) with the cache.
//!
//! `cargo bench -p rosetta-model --bench decode --profile dev` (the dev profile optimises the
//! dependencies; the default bench profile would rebuild Burn in release).
//!
//! Model: d_model 256, 3 + 3 layers, 4 heads, d_ff 1024, vocabulary 8,000, random weights
//! (seeded), on the `flex` CPU backend (`ROSETTA_DEVICE=ndarray` for another), in float32
//! (`ROSETTA_QUANTIZE=int8`: the linear maps in int8, `Transformer::quantize_int8`). Sources: 64 sentences of 12 random tokens + EOS. Every
//! output is forced to exactly 20 tokens (`max_len_a = 0`, `max_len_b = 20`, `min_len = 20`),
//! so that all variants do the same number of steps whatever the random model prefers. Batch 64
//! decodes the 64 sentences at once; batch 1 decodes the first 16 one at a time. Target
//! tokens/s counts the 20 tokens of each output (EOS not counted; for beam search, the tokens
//! of the best output).
//!
//! The bench runs under the `rosetta` binary's allocator (mimalloc, never returning freed
//! memory, no transparent huge pages: `crates/cli/src/allocator.rs`), as `rosetta translate`
//! does; under the system allocator greedy search at batch 1 ran about a quarter slower.
//!
//! `--grid BEAM:BATCH:SENTENCES:SOURCE:OUTPUT,...` (after `--`, or to the executable) measures
//! those workloads instead (cached search; sources of SOURCE - 1 random tokens + EOS, outputs
//! forced to OUTPUT tokens) and prints one JSON object a line: how the cost grows with the
//! batch and the length (`scripts/bench_decode_growth.py`).

use std::time::Instant;

use rosetta_model::burn::tensor::{Device, Int, Tensor, TensorData};
use rosetta_model::{
    SearchConfig, SpecialTokens, Transformer, TransformerConfig, beam_search, greedy,
};

const SENTENCES: usize = 64;
const SINGLE: usize = 16;
const SOURCE_TOKENS: usize = 12;
const OUTPUT_TOKENS: usize = 20;
const VOCAB: usize = 8000;
const EOS: i64 = 3;

/// `count` rows of `tokens` random symbols (ids 4..VOCAB) + EOS; the first 64 rows of 12 are
/// the table's sources.
fn sources(count: usize, tokens: usize) -> Vec<Vec<i64>> {
    let mut state = 0x5eed_u64;
    (0..count)
        .map(|_| {
            let mut row: Vec<i64> = (0..tokens)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    4 + ((state >> 33) % (VOCAB as u64 - 4)) as i64
                })
                .collect();
            row.push(EOS);
            row
        })
        .collect()
}

fn tensor(rows: &[Vec<i64>], device: &Device) -> Tensor<2, Int> {
    let flat: Vec<i64> = rows.iter().flatten().copied().collect();
    Tensor::from_data(TensorData::new(flat, [rows.len(), rows[0].len()]), device)
}

/// Seconds to decode `rows` in batches of `batch`, every output `output` tokens long.
fn time(
    model: &Transformer,
    rows: &[Vec<i64>],
    batch: usize,
    config: &SearchConfig,
    output: usize,
    device: &Device,
) -> f64 {
    let start = Instant::now();
    for chunk in rows.chunks(batch) {
        let source = tensor(chunk, device);
        let lengths: Vec<usize> = if config.beam_size > 1 {
            beam_search(model, source, config)
                .expect("search")
                .iter()
                .map(|n_best| n_best[0].tokens.len())
                .collect()
        } else {
            greedy(model, source, config)
                .expect("search")
                .iter()
                .map(|h| h.tokens.len())
                .collect()
        };
        assert!(lengths.iter().all(|&l| l == output), "{lengths:?}");
    }
    start.elapsed().as_secs_f64()
}

/// The `rosetta` binary's allocator and its settings, as `rosetta translate` runs.
#[path = "../../cli/src/allocator.rs"]
mod allocator;

fn main() {
    allocator::keep_freed_memory();
    // ROSETTA_DEVICE picks the backend (default flex), e.g. ROSETTA_DEVICE=ndarray.
    let name = std::env::var("ROSETTA_DEVICE").unwrap_or_else(|_| "flex".into());
    let device = match rosetta_model::parse_device(&name) {
        Ok(device) => device,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    device.seed(0);
    let mut model = match TransformerConfig::new(VOCAB, VOCAB)
        .with_d_model(256)
        .with_n_heads(4)
        .with_d_ff(1024)
        .with_n_encoder_layers(3)
        .with_n_decoder_layers(3)
        .with_dropout(0.0)
        .with_attention_dropout(0.0)
        .init(&device)
    {
        Ok(model) => model,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    match std::env::var("ROSETTA_QUANTIZE").as_deref() {
        Ok("int8") => model.quantize_int8(),
        Ok("") | Ok("float32") | Err(_) => {}
        Ok(other) => {
            eprintln!("ROSETTA_QUANTIZE={other:?}: expected int8 or float32");
            std::process::exit(1);
        }
    }
    let rows = sources(SENTENCES, SOURCE_TOKENS);
    let forced = |output: usize| {
        SearchConfig::new(SpecialTokens {
            pad: 0,
            unk: 1,
            bos: 2,
            eos: EOS as u32,
        })
        .with_max_len_a(0.0)
        .with_max_len_b(output)
        .with_min_len(output)
    };
    let base = forced(OUTPUT_TOKENS);
    let variants = [
        ("greedy, cached", base.clone().with_beam_size(1)),
        (
            "greedy, uncached",
            base.clone().with_beam_size(1).with_use_cache(false),
        ),
        ("beam 5, cached", base.clone().with_beam_size(5)),
    ];
    // Warm-up (allocations, thread pool).
    time(
        &model,
        &rows[..4],
        4,
        &variants[0].1,
        OUTPUT_TOKENS,
        &device,
    );

    // Rayon's pool: RAYON_NUM_THREADS when set, else one thread per logical CPU.
    let threads = std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        });
    let args: Vec<String> = std::env::args().collect();
    let grid = args
        .iter()
        .enumerate()
        .find_map(|(at, a)| match a.strip_prefix("--grid") {
            Some("") => Some(args.get(at + 1).map(String::as_str).unwrap_or("")),
            Some(rest) => rest.strip_prefix('='),
            None => None,
        });
    if let Some(spec) = grid {
        let workloads = match parse_grid(spec, model.max_positions()) {
            Ok(workloads) => workloads,
            Err(e) => {
                eprintln!("--grid {spec:?}: {e}");
                std::process::exit(2);
            }
        };
        for w in workloads {
            let rows = sources(w.sentences, w.source - 1);
            let config = forced(w.output).with_beam_size(w.beam);
            let seconds = time(&model, &rows, w.batch, &config, w.output, &device);
            println!(
                "{{\"beam\": {}, \"batch\": {}, \"sentences\": {}, \"source\": {}, \
                 \"output\": {}, \"seconds\": {seconds:.6}, \"tokens\": {}, \"threads\": {threads}}}",
                w.beam,
                w.batch,
                w.sentences,
                w.source,
                w.output,
                w.sentences * w.output
            );
        }
        return;
    }
    println!(
        "d_model 256, 3+3 layers, 4 heads, d_ff 1024, vocab {VOCAB}; {SOURCE_TOKENS}+EOS source \
         tokens, {OUTPUT_TOKENS} output tokens; {name} backend, {threads} threads"
    );
    println!("| search | batch | sentences | seconds | sentences/s | target tokens/s |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let mut greedy_rates = Vec::new();
    for (name, config) in &variants {
        for (batch, count) in [(1, SINGLE), (SENTENCES, SENTENCES)] {
            let seconds = time(
                &model,
                &rows[..count],
                batch,
                config,
                OUTPUT_TOKENS,
                &device,
            );
            let rate = count as f64 / seconds;
            println!(
                "| {name} | {batch} | {count} | {seconds:.2} | {rate:.1} | {:.0} |",
                rate * OUTPUT_TOKENS as f64
            );
            if config.beam_size == 1 {
                greedy_rates.push((batch, config.use_cache, rate));
            }
        }
    }
    for batch in [1, SENTENCES] {
        let rate = |cached| {
            greedy_rates
                .iter()
                .find(|(b, c, _)| *b == batch && *c == cached)
                .map_or(f64::NAN, |(_, _, r)| *r)
        };
        println!(
            "greedy, batch {batch}: cached / uncached speed = {:.2}x",
            rate(true) / rate(false)
        );
    }
}

/// One workload of `--grid`.
struct Workload {
    beam: usize,
    batch: usize,
    sentences: usize,
    /// Source tokens, EOS included.
    source: usize,
    /// Output tokens, forced.
    output: usize,
}

/// `BEAM:BATCH:SENTENCES:SOURCE:OUTPUT,...`, every field at least 1 (SOURCE at least 2: one
/// token and EOS), SENTENCES at least BATCH, SOURCE and OUTPUT + 1 within `max_positions`.
fn parse_grid(spec: &str, max_positions: usize) -> Result<Vec<Workload>, String> {
    spec.split(',')
        .map(|item| {
            let fields: Vec<usize> = item
                .split(':')
                .map(|f| f.trim().parse::<usize>())
                .collect::<Result<_, _>>()
                .map_err(|e| format!("{item:?}: {e}"))?;
            let [beam, batch, sentences, source, output] = fields[..] else {
                return Err(format!(
                    "{item:?}: expected BEAM:BATCH:SENTENCES:SOURCE:OUTPUT"
                ));
            };
            if beam == 0 || batch == 0 || sentences == 0 || source < 2 || output == 0 {
                return Err(format!(
                    "{item:?}: every field at least 1, SOURCE at least 2"
                ));
            }
            if sentences < batch {
                return Err(format!("{item:?}: SENTENCES at least BATCH"));
            }
            if source > max_positions || output >= max_positions {
                return Err(format!(
                    "{item:?}: longer than the model's {max_positions} positions"
                ));
            }
            Ok(Workload {
                beam,
                batch,
                sentences,
                source,
                output,
            })
        })
        .collect()
}
