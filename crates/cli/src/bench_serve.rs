//! `rosetta bench-serve`: the server under concurrent load beside offline batched translation
//! of the same sentences, in one run: p50/p95/p99 latency, sentences/s, failed requests and
//! resident memory, with an idle-server latency first.
//!
//! The server runs in this process on a loopback port, with the clients as threads that each
//! send one sentence per request in a loop for a fixed time (the load is bounded in count of
//! clients and in time). The offline figure is `Translator::translate_lines` over the same
//! sentences with the same search, batched as `rosetta translate` batches.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rosetta_eval::read_segments;
use rosetta_infer::Translator;
use rosetta_model::parse_device;
use rosetta_serve::{LoadedModel, Server};

use crate::search_args::SearchArgs;
use crate::serve::LimitArgs;

use crate::output::outln;

/// Arguments of `rosetta bench-serve`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A checkpoint directory, or a run directory.
    #[arg(long)]
    checkpoint: PathBuf,
    /// Source sentences, one per line.
    #[arg(long)]
    src: PathBuf,
    /// Use the first N sentences (0 = all).
    #[arg(long, default_value_t = 1000)]
    limit: usize,
    /// Concurrent clients of the load phase.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Length of the load phase, in seconds.
    #[arg(long, default_value_t = 30)]
    seconds: u64,
    /// One-sentence requests sent one at a time to the idle server first.
    #[arg(long, default_value_t = 100)]
    idle_requests: usize,
    /// Sentences per batch of the offline reference (as `rosetta translate --batch-size`).
    #[arg(long, default_value_t = 64)]
    batch_size: usize,
    /// Device to run on.
    #[arg(long, default_value = "flex")]
    device: String,
    #[command(flatten)]
    search: SearchArgs,
    #[command(flatten)]
    limits: LimitArgs,
}

/// The resident memory of this process, in MiB (Linux), if it can be read.
fn resident_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// The `q`-quantile (nearest rank) of sorted `values`.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// One client's record: latencies (seconds) of the requests answered 200, and failures.
#[derive(Default)]
struct ClientRecord {
    latencies: Vec<f64>,
    failed: usize,
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .new_agent()
}

/// Sends `sentence` to `url` as LibreTranslate's request; `Ok(latency)` on 200 with a
/// translation, `Err` otherwise.
fn request(agent: &ureq::Agent, url: &str, sentence: &str) -> Result<f64> {
    let started = Instant::now();
    let mut response = agent
        .post(url)
        .send_json(serde_json::json!({ "q": sentence }))
        .context("request failed")?;
    let status = response.status();
    let body: serde_json::Value = response
        .body_mut()
        .read_json()
        .context("response is not JSON")?;
    let latency = started.elapsed().as_secs_f64();
    if status != 200 || !body["translatedText"].is_string() {
        bail!("status {status}: {body}");
    }
    Ok(latency)
}

/// Runs the three phases and prints the table.
pub fn run(args: &Args) -> Result<()> {
    if args.clients == 0 || args.seconds == 0 {
        bail!("--clients and --seconds must be at least 1");
    }
    args.search
        .options(&Default::default(), 1, args.batch_size)?;
    let device = parse_device(&args.device)?;
    let translator = Translator::load(&args.checkpoint, &device)
        .with_context(|| format!("cannot load {}", args.checkpoint.display()))?;
    crate::translate::bilingual_only(&translator, "bench-serve")?;
    let options = args
        .search
        .options(&translator.decoding, 1, args.batch_size)?;
    let mut sentences =
        read_segments(&args.src).with_context(|| format!("reading {}", args.src.display()))?;
    sentences.retain(|s| !s.trim().is_empty());
    if args.limit > 0 {
        sentences.truncate(args.limit);
    }
    if sentences.is_empty() {
        bail!("{} has no sentence to translate", args.src.display());
    }
    let threads = rosetta_model::device::rayon_threads();
    outln!(
        "{}: {} sentences; device {}, {threads} compute threads; beam {}; {} clients for {} s",
        args.src.display(),
        sentences.len(),
        args.device,
        options.beam,
        args.clients,
        args.seconds
    );

    // 1. Offline, batched.
    let started = Instant::now();
    let offline = translator.translate_lines(&sentences, &options)?;
    let offline_seconds = started.elapsed().as_secs_f64();
    let offline_rate = sentences.len() as f64 / offline_seconds;
    let offline_tokens: usize = offline.iter().map(|t| t.target_tokens.len() + 1).sum();

    // 2. The server, in this process, on a free loopback port.
    let serve_args = crate::serve::Args {
        checkpoint: Some(args.checkpoint.clone()),
        models: None,
        model_id: None,
        host: "127.0.0.1".into(),
        port: 0,
        device: args.device.clone(),
        quantize: crate::ensemble::QuantizeArgs {
            quantize: rosetta_model::Quantization::Float32,
        },
        nbest: 1,
        search: args.search.clone(),
        limits: args.limits.clone(),
        access: crate::serve::AccessArgs::default(),
        source_lang: None,
        target_lang: None,
    };
    let config = serve_args.serve_config()?;
    let source = translator
        .source_lang
        .clone()
        .unwrap_or_else(|| "source".into());
    let target = translator
        .target_lang
        .clone()
        .unwrap_or_else(|| "target".into());
    let model = LoadedModel {
        options: args.search.options(&translator.decoding, 1, 1)?,
        translator,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let server = runtime.block_on(Server::bind_one(
        "bench",
        model,
        &source,
        &target,
        config,
        &args.device,
    ))?;
    let address = server.local_addr()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = runtime.spawn(server.run(async {
        let _ = stopped.await;
    }));
    let url = format!("http://{address}/translate");

    // 3. Idle server: one request at a time.
    let idle_agent = agent();
    let mut idle = Vec::with_capacity(args.idle_requests);
    let mut idle_failed = 0;
    for sentence in sentences.iter().cycle().take(args.idle_requests) {
        match request(&idle_agent, &url, sentence) {
            Ok(latency) => idle.push(latency),
            Err(_) => idle_failed += 1,
        }
    }
    idle.sort_by(f64::total_cmp);

    // 4. Load: every client sends one sentence per request, in a loop, until the deadline.
    let rss_start = resident_mib();
    let sentences = Arc::new(sentences);
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let load_started = Instant::now();
    let n_clients = args.clients;
    let clients: Vec<_> = (0..n_clients)
        .map(|c| {
            let sentences = Arc::clone(&sentences);
            let url = url.clone();
            std::thread::spawn(move || {
                let agent = agent();
                let mut record = ClientRecord::default();
                let mut i = c * sentences.len() / n_clients;
                while Instant::now() < deadline {
                    match request(&agent, &url, &sentences[i % sentences.len()]) {
                        Ok(latency) => record.latencies.push(latency),
                        Err(_) => record.failed += 1,
                    }
                    i += 1;
                }
                record
            })
        })
        .collect();
    // Resident memory through the load, ten samples, to see whether it levels off.
    let mut rss_samples = Vec::new();
    for tenth in 1..=10u32 {
        let at = load_started + Duration::from_secs(args.seconds) * tenth / 10;
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        if let Some(mib) = resident_mib() {
            rss_samples.push((at.duration_since(load_started).as_secs(), mib));
        }
    }
    let mut latencies = Vec::new();
    let mut failed = 0;
    for client in clients {
        let record = client
            .join()
            .map_err(|_| anyhow::anyhow!("a client thread panicked"))?;
        latencies.extend(record.latencies);
        failed += record.failed;
    }
    let load_seconds = load_started.elapsed().as_secs_f64();
    let rss_end = resident_mib();
    // The server's own view of the load: batches formed, and how busy its decoder was.
    let metrics_text = agent()
        .get(&format!("http://{address}/metrics"))
        .call()
        .ok()
        .and_then(|mut r| r.body_mut().read_to_string().ok())
        .unwrap_or_default();
    let metric = |name: &str| -> Option<f64> {
        metrics_text
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
    };
    let _ = stop.send(());
    runtime
        .block_on(serving)
        .context("the server task failed")??;
    latencies.sort_by(f64::total_cmp);
    let served_rate = latencies.len() as f64 / load_seconds;
    let ms = |s: f64| s * 1000.0;
    let p50 = quantile(&latencies, 0.50);
    let p99 = quantile(&latencies, 0.99);

    outln!();
    outln!("| phase | requests | failed | sentences/s | p50 ms | p95 ms | p99 ms |");
    outln!("| --- | --- | --- | --- | --- | --- | --- |");
    outln!(
        "| offline `translate` (batch {}) | - | - | {offline_rate:.1} ({:.0} target tok/s) | - | - | - |",
        args.batch_size,
        offline_tokens as f64 / offline_seconds
    );
    outln!(
        "| idle server, 1 client | {} | {idle_failed} | {:.1} | {:.1} | {:.1} | {:.1} |",
        idle.len(),
        idle.len() as f64 / idle.iter().sum::<f64>().max(1e-9),
        ms(quantile(&idle, 0.50)),
        ms(quantile(&idle, 0.95)),
        ms(quantile(&idle, 0.99))
    );
    outln!(
        "| {} clients, {:.0} s | {} | {failed} | {served_rate:.1} | {:.1} | {:.1} | {:.1} |",
        args.clients,
        load_seconds,
        latencies.len(),
        ms(p50),
        ms(quantile(&latencies, 0.95)),
        ms(p99)
    );
    outln!();
    outln!(
        "served / offline throughput: {:.2}x; p99 / p50 under load: {:.1}x",
        served_rate / offline_rate,
        p99 / p50
    );
    if let (Some(sentences), Some(batches), Some(busy)) = (
        metric("rosetta_batch_sentences_sum"),
        metric("rosetta_batch_sentences_count"),
        metric("rosetta_decode_seconds_total"),
    ) {
        outln!(
            "server: {batches:.0} batches, {:.1} sentences a batch on average; decoder busy {busy:.1} s of {:.1} s (idle and load phases)",
            sentences / batches.max(1.0),
            idle.iter().sum::<f64>() + load_seconds
        );
    }
    match (rss_start, rss_end) {
        (Some(a), Some(b)) => outln!(
            "resident memory (server and clients, one process): {a:.0} MiB at the start of the load, {b:.0} MiB at its end"
        ),
        _ => outln!("resident memory: not readable on this system"),
    }
    if !rss_samples.is_empty() {
        let samples: Vec<String> = rss_samples
            .iter()
            .map(|(s, mib)| format!("{s} s: {mib:.0}"))
            .collect();
        outln!(
            "resident memory through the load (MiB): {}",
            samples.join(", ")
        );
    }
    Ok(())
}
