//! `rosetta serve`: a trained translator behind HTTP/JSON (see `rosetta-serve`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use rosetta_infer::{TranslateOptions, Translator};
use rosetta_model::parse_device;
use rosetta_serve::{ServeConfig, Server, shutdown_signal};

use crate::search_args::SearchArgs;

use crate::output::outln;

/// Arguments of `rosetta serve`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A checkpoint directory, or a run directory (its best checkpoint, else its newest).
    #[arg(long)]
    pub checkpoint: PathBuf,
    /// Address to listen on.
    #[arg(long, default_value_t = ServeConfig::default().host)]
    pub host: String,
    /// Port to listen on (0: any free port; the address is printed).
    #[arg(long, default_value_t = ServeConfig::default().port)]
    pub port: u16,
    /// Device to run on.
    #[arg(long, default_value = "flex")]
    pub device: String,
    /// Hypotheses per sentence on the OpenNMT-style endpoint (at most --beam).
    #[arg(long, default_value_t = 1)]
    pub nbest: usize,
    #[command(flatten)]
    pub search: SearchArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Language code of the source side (default: the one the checkpoint records: from the
    /// training source file's extension, e.g. `en` for `train.en`, or given to `import-hf`).
    #[arg(long)]
    pub source_lang: Option<String>,
    /// Language code of the target side (default: the one the checkpoint records).
    #[arg(long)]
    pub target_lang: Option<String>,
}

/// Batching and the limits that protect the server, with `ServeConfig::default()`'s values as
/// defaults (the one place they are written).
#[derive(clap::Args, Debug, Clone)]
pub struct LimitArgs {
    /// Most source subwords decoded in one batch (a longer sentence gets a batch of its own).
    #[arg(long, default_value_t = ServeConfig::default().max_batch_tokens)]
    pub max_batch_tokens: usize,
    /// Longest wait, in milliseconds, once the decoder is free, for the clients it has just
    /// answered to send their next request (a lone request is never delayed).
    #[arg(long, default_value_t = ServeConfig::default().max_wait.as_millis() as u64)]
    pub max_wait_ms: u64,
    /// Largest request body accepted, in bytes (413 above).
    #[arg(long, default_value_t = ServeConfig::default().max_request_bytes)]
    pub max_request_bytes: usize,
    /// Most sentences in one request (413 above).
    #[arg(long, default_value_t = ServeConfig::default().max_sentences)]
    pub max_sentences: usize,
    /// Longest sentence accepted, in characters (413 above); shorter sentences that exceed the
    /// model's positions are cut and reported in the response's `warnings`.
    #[arg(long, default_value_t = ServeConfig::default().max_sentence_chars)]
    pub max_sentence_chars: usize,
    /// Requests waiting for decoding before new ones get 429 with `Retry-After`.
    #[arg(long, default_value_t = ServeConfig::default().max_queue)]
    pub max_queue: usize,
}

impl Args {
    /// The server settings these arguments describe for a translator from language `source`
    /// to `target` where known (the options name them otherwise), checked.
    pub fn serve_config(
        &self,
        defaults: &TranslateOptions,
        source: Option<&str>,
        target: Option<&str>,
    ) -> Result<ServeConfig> {
        let guess_source = source.unwrap_or("source").to_string();
        let guess_target = target.unwrap_or("target").to_string();
        let limits = &self.limits;
        let config = ServeConfig {
            host: self.host.clone(),
            port: self.port,
            options: self.search.options(defaults, self.nbest, 1)?,
            max_batch_tokens: limits.max_batch_tokens,
            max_wait: Duration::from_millis(limits.max_wait_ms),
            max_request_bytes: limits.max_request_bytes,
            max_sentences: limits.max_sentences,
            max_sentence_chars: limits.max_sentence_chars,
            max_queue: limits.max_queue,
            source_lang: self.source_lang.clone().unwrap_or(guess_source),
            target_lang: self.target_lang.clone().unwrap_or(guess_target),
        };
        config.validate()?;
        Ok(config)
    }
}

/// Loads the checkpoint, binds the address and serves until SIGTERM or Ctrl-C.
pub fn run(args: &Args) -> Result<()> {
    // Checked before the model loads, so that a bad option fails at once.
    args.serve_config(&TranslateOptions::default(), None, None)?;
    let device = parse_device(&args.device)?;
    let translator = Translator::load(&args.checkpoint, &device)
        .with_context(|| format!("cannot load {}", args.checkpoint.display()))?;
    let config = args.serve_config(
        &translator.decoding,
        translator.source_lang.as_deref(),
        translator.target_lang.as_deref(),
    )?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let server = Server::bind(translator, config, &args.device).await?;
        let address = server.local_addr()?;
        outln!("rosetta serve: listening on http://{address} (Ctrl-C or SIGTERM to stop)");
        server.run(shutdown_signal()).await?;
        outln!("rosetta serve: stopped after finishing the requests in flight");
        anyhow::Ok(())
    })
}
