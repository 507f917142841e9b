//! `rosetta serve`: trained translators behind HTTP/JSON (see `rosetta-serve`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use rosetta_infer::{TranslateOptions, Translator, recorded_languages};
use rosetta_model::{Quantization, parse_device};
use rosetta_serve::{
    AccessConfig, Limits, LoadWhen, LoadedModel, Loader, ModelSpec, ServeConfig, Server,
    read_models_file, shutdown_signal,
};

use crate::search_args::SearchArgs;

use crate::output::outln;

/// Arguments of `rosetta serve`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A checkpoint directory, a run directory (its best checkpoint, else its newest) or a
    /// model bundle: the one model served (see --models for several).
    #[arg(long, required_unless_present = "models", conflicts_with = "models")]
    pub checkpoint: Option<PathBuf>,
    /// A TOML file naming several models, each `[[model]]` with `id`, `checkpoint` and
    /// optionally `source`, `target` and `load = "start" | "first-use"` (docs/serving.md).
    #[arg(long)]
    pub models: Option<PathBuf>,
    /// The id of the model given by --checkpoint (default: its language pair, e.g. `en-de`).
    #[arg(long, conflicts_with = "models")]
    pub model_id: Option<String>,
    /// Address to listen on (beyond loopback, --api-keys or --allow-anonymous is required).
    #[arg(long, default_value_t = ServeConfig::default().host)]
    pub host: String,
    /// Port to listen on (0: any free port; the address is printed).
    #[arg(long, default_value_t = ServeConfig::default().port)]
    pub port: u16,
    /// Device to run on.
    #[arg(long, default_value = "flex")]
    pub device: String,
    #[command(flatten)]
    pub quantize: crate::ensemble::QuantizeArgs,
    /// Hypotheses per sentence on the OpenNMT-style endpoint (at most --beam).
    #[arg(long, default_value_t = 1)]
    pub nbest: usize,
    #[command(flatten)]
    pub search: SearchArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub access: AccessArgs,
    /// Language code of the source side of --checkpoint's model (default: the one the
    /// checkpoint records: from the training source file's extension, e.g. `en` for
    /// `train.en`, or given to `import-hf`).
    #[arg(long, conflicts_with = "models")]
    pub source_lang: Option<String>,
    /// Language code of the target side of --checkpoint's model (default: the one the
    /// checkpoint records).
    #[arg(long, conflicts_with = "models")]
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
    /// Requests waiting for a model's decoder before new ones get 429 with `Retry-After`.
    #[arg(long, default_value_t = ServeConfig::default().max_queue)]
    pub max_queue: usize,
    /// Longest time, in milliseconds, a request may wait and decode before it is answered 504.
    #[arg(long, default_value_t = ServeConfig::default().request_timeout.as_millis() as u64)]
    pub request_timeout_ms: u64,
    /// Unload a model unused for this many seconds (it loads again on its next request).
    #[arg(long)]
    pub unload_after_secs: Option<u64>,
}

/// Who may use the server, from which web pages, and who may reload its models.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct AccessArgs {
    /// A file of API keys, one per line, each optionally followed by
    /// `requests_per_minute=N chars_per_minute=N` (docs/serving.md). Clients send a key as
    /// `api_key` or `Authorization: Bearer KEY`; without one they get 401, with an unknown
    /// one 403.
    #[arg(long)]
    pub api_keys: Option<PathBuf>,
    /// Serve clients without a key too (required to listen beyond loopback without keys).
    #[arg(long)]
    pub allow_anonymous: bool,
    /// Requests per minute for each anonymous client (by IP address); default: unlimited.
    #[arg(long)]
    pub anonymous_requests_per_minute: Option<u32>,
    /// Characters to translate per minute for each anonymous client; default: unlimited.
    #[arg(long)]
    pub anonymous_chars_per_minute: Option<u64>,
    /// A web origin whose pages may call the server (CORS), e.g. `https://example.org`;
    /// repeatable; `*` for any. None by default.
    #[arg(long = "cors-origin")]
    pub cors_origins: Vec<String>,
    /// A file whose first line is the key `POST /admin/reload` requires (without it the
    /// endpoint is refused; SIGHUP reloads regardless).
    #[arg(long)]
    pub admin_key_file: Option<PathBuf>,
}

impl Args {
    /// The server settings these arguments describe, checked.
    pub fn serve_config(&self) -> Result<ServeConfig> {
        let limits = &self.limits;
        let access = &self.access;
        let config = ServeConfig {
            host: self.host.clone(),
            port: self.port,
            max_batch_tokens: limits.max_batch_tokens,
            max_wait: Duration::from_millis(limits.max_wait_ms),
            max_request_bytes: limits.max_request_bytes,
            max_sentences: limits.max_sentences,
            max_sentence_chars: limits.max_sentence_chars,
            max_queue: limits.max_queue,
            request_timeout: Duration::from_millis(limits.request_timeout_ms),
            unload_after: limits.unload_after_secs.map(Duration::from_secs),
            cors_origins: access.cors_origins.clone(),
            access: AccessConfig {
                api_keys: access.api_keys.clone(),
                allow_anonymous: access.allow_anonymous,
                anonymous_limits: Limits {
                    requests_per_minute: access.anonymous_requests_per_minute,
                    chars_per_minute: access.anonymous_chars_per_minute,
                },
            },
            admin_key: access.admin_key_file.clone(),
        };
        config.validate()?;
        Ok(config)
    }

    /// The models to serve: the models file's, or the one --checkpoint names, with their
    /// languages (given, or as their checkpoints record them).
    pub fn model_specs(&self) -> Result<Vec<ModelSpec>> {
        let entries = match (&self.models, &self.checkpoint) {
            (Some(file), _) => read_models_file(file)?
                .into_iter()
                .map(|entry| {
                    (
                        Some(entry.id),
                        entry.checkpoint,
                        entry.source,
                        entry.target,
                        entry.load,
                    )
                })
                .collect(),
            (None, Some(checkpoint)) => vec![(
                self.model_id.clone(),
                checkpoint.clone(),
                self.source_lang.clone(),
                self.target_lang.clone(),
                LoadWhen::Start,
            )],
            (None, None) => bail!("give --checkpoint DIR or --models FILE"),
        };
        entries
            .into_iter()
            .map(|(id, checkpoint, source, target, load)| {
                // Needed when a language is not given; otherwise read where it can be (a model
                // loaded on first use may not exist yet), to tell a multilingual model.
                let recorded = if source.is_none() || target.is_none() {
                    recorded_languages(&checkpoint)
                        .with_context(|| format!("cannot read {}", checkpoint.display()))?
                } else {
                    recorded_languages(&checkpoint).unwrap_or_default()
                };
                let preload = load == LoadWhen::Start;
                if !recorded.directions.is_empty() {
                    // A multilingual model serves every direction it was trained for.
                    if source.is_some() || target.is_some() {
                        bail!(
                            "{} is a multilingual model ({}): it serves every direction it was trained for, so give it no source or target language",
                            checkpoint.display(),
                            recorded
                                .directions
                                .iter()
                                .map(ToString::to_string)
                                .collect::<Vec<_>>()
                                .join(", ")
                        );
                    }
                    return Ok(ModelSpec {
                        id: id.unwrap_or_else(|| "multilingual".into()),
                        checkpoint,
                        directions: recorded.directions,
                        multilingual: true,
                        preload,
                    });
                }
                let source = source
                    .or(recorded.source)
                    .unwrap_or_else(|| "source".into());
                let target = target
                    .or(recorded.target)
                    .unwrap_or_else(|| "target".into());
                let id = id.unwrap_or_else(|| format!("{source}-{target}"));
                Ok(ModelSpec::bilingual(id, checkpoint, source, target, preload))
            })
            .collect()
    }
}

/// The loader of `rosetta serve`: a translator from the spec's checkpoint on `device`, its
/// models multiplying as `quantization` says, with the search of `search` (over the model's own
/// defaults) and `nbest` hypotheses.
pub fn loader(
    device: &str,
    quantization: Quantization,
    search: SearchArgs,
    nbest: usize,
) -> Result<Loader> {
    let device = parse_device(device)?;
    // Checked once here, so that a bad option fails before any model loads.
    search.options(&TranslateOptions::default(), nbest, 1)?;
    Ok(Arc::new(move |spec: &ModelSpec| {
        let mut translator = Translator::load(&spec.checkpoint, &device)
            .map_err(|e| format!("cannot load {}: {e}", spec.checkpoint.display()))?;
        translator
            .quantize(quantization)
            .map_err(|e| format!("{}: {e}", spec.checkpoint.display()))?;
        // A model loaded on first use or reloaded must translate what the server announced.
        let multilingual = !translator.directions.is_empty();
        if multilingual != spec.multilingual
            || (multilingual && translator.directions != spec.directions)
        {
            return Err(format!(
                "{} translates {}, but the server announced {} for model {:?}; restart the server to serve it",
                spec.checkpoint.display(),
                if multilingual {
                    translator
                        .directions
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                } else {
                    "one direction (a bilingual model)".into()
                },
                spec.pairs(),
                spec.id
            ));
        }
        let options = search
            .options(&translator.decoding, nbest, 1)
            .map_err(|e| format!("{e:#}"))?;
        Ok(LoadedModel {
            translator,
            options,
        })
    }))
}

/// Loads the models, binds the address and serves until SIGTERM or Ctrl-C.
pub fn run(args: &Args) -> Result<()> {
    // Checked before any model loads, so that a bad option fails at once.
    let config = args.serve_config()?;
    let loader = loader(
        &args.device,
        args.quantize.quantize,
        args.search.clone(),
        args.nbest,
    )?;
    let specs = args.model_specs()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    if !rosetta_serve::config::is_loopback(&config.host) && config.access.allow_anonymous {
        eprintln!(
            "rosetta serve: warning: listening beyond loopback ({}) WITHOUT requiring an API key (--allow-anonymous)",
            config.host
        );
    }
    runtime.block_on(async {
        let server = Server::bind(specs, loader, Vec::new(), config, &args.device).await?;
        let address = server.local_addr()?;
        outln!("rosetta serve: listening on http://{address} (Ctrl-C or SIGTERM to stop)");
        for slot in server.pool().slots() {
            let spec = &slot.spec;
            let state = if spec.preload {
                "loaded"
            } else {
                "loads on first use"
            };
            outln!(
                "rosetta serve: model {:?} ({}) from {}: {state}",
                spec.id,
                spec.pairs(),
                spec.checkpoint.display()
            );
        }
        server.run(shutdown_signal()).await?;
        outln!("rosetta serve: stopped after finishing the requests in flight");
        anyhow::Ok(())
    })
}
