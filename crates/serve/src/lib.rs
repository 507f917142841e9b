//! # rosetta-serve
//!
//! A trained Rosetta translator behind HTTP/JSON, as `rosetta serve` runs it:
//!
//! - `POST /translate`: LibreTranslate's API (`q` a string or an array, `alternatives` for
//!   n-best), so existing LibreTranslate clients work; `GET /languages` as LibreTranslate has it;
//! - `POST /translator/translate`: OpenNMT-py's server API (`[{"src": ...}]` → n-best lists
//!   with `tgt` and `pred_score`);
//! - `GET /health`, `GET /models` (languages, parameters, vocabularies, checkpoint step,
//!   device, search), `GET /metrics` (Prometheus), and `GET /`: a translation page with the
//!   n-best list and the cross-attention heatmap, compiled into the binary.
//!
//! Requests are queued for one decoding worker ([`batcher`]) that gathers the sentences of
//! concurrent requests into batches by a token budget and a maximum wait. Bad input is answered
//! with a 4xx and a JSON message ([`error::ApiError`]); SIGTERM or Ctrl-C stops accepting
//! connections and finishes the requests in flight.

pub mod api;
pub mod batcher;
pub mod config;
pub mod error;
pub mod metrics;
pub mod routes;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use rosetta_infer::Translator;
use rosetta_infer::rosetta_model::burn::module::Module;
use serde_json::{Value, json};

pub use batcher::{BatchPolicy, Batcher};
pub use config::ServeConfig;
pub use error::{ApiError, ServeError};
pub use metrics::Metrics;
pub use routes::{AppState, router};

/// What `GET /models` answers for `translator` on the device named `device`.
pub fn model_info(translator: &Translator, config: &ServeConfig, device: &str) -> Value {
    let model = &translator.config;
    json!([{
        "id": 0,
        "source": config.source_lang,
        "target": config.target_lang,
        "checkpoint": translator.checkpoint.as_ref().map(|path| path.display().to_string()),
        "step": translator.step,
        "parameters": translator.model.num_params(),
        "source_vocab_size": model.source_vocab_size,
        "target_vocab_size": model.target_vocab_size,
        "d_model": model.d_model,
        "layers": [model.n_encoder_layers, model.n_decoder_layers],
        "max_positions": model.max_positions,
        "device": device,
        "search": {
            "beam": config.options.beam,
            "alpha": config.options.alpha,
            "length_norm": config.options.length_norm,
            "beam_stop": config.options.beam_stop,
            "max_len_a": config.options.max_len_a,
            "max_len_b": config.options.max_len_b,
            "nbest": config.options.nbest,
        },
        "batching": {
            "max_batch_tokens": config.max_batch_tokens,
            "max_wait_ms": config.max_wait.as_millis() as u64,
        },
    }])
}

/// A server bound to its address, ready to run.
pub struct Server {
    listener: tokio::net::TcpListener,
    app: axum::Router,
    worker: std::thread::JoinHandle<()>,
}

impl Server {
    /// Binds `config.host:config.port` and starts the decoding worker for `translator`
    /// (on the device named `device`, for `GET /models`).
    pub async fn bind(
        translator: Translator,
        config: ServeConfig,
        device: &str,
    ) -> Result<Self, ServeError> {
        config.validate()?;
        let address = format!("{}:{}", config.host, config.port);
        let listener = tokio::net::TcpListener::bind(&address)
            .await
            .map_err(|source| ServeError::Io {
                address: address.clone(),
                source,
            })?;
        let metrics = Arc::new(Metrics::default());
        let model_info = Arc::new(model_info(&translator, &config, device));
        let (batcher, worker) = Batcher::start(
            Arc::new(translator),
            config.options.clone(),
            BatchPolicy {
                max_tokens: config.max_batch_tokens,
                max_wait: config.max_wait,
            },
            config.max_queue,
            Arc::clone(&metrics),
        );
        let app = router(AppState {
            batcher,
            metrics,
            config: Arc::new(config),
            model_info,
        });
        Ok(Self {
            listener,
            app,
            worker,
        })
    }

    /// The address the server listens on (its port is the real one when asked for port 0).
    pub fn local_addr(&self) -> Result<SocketAddr, ServeError> {
        self.listener.local_addr().map_err(|source| ServeError::Io {
            address: "listener".into(),
            source,
        })
    }

    /// Serves until `shutdown` completes, then stops accepting connections, finishes the
    /// requests in flight, and waits for the decoding worker to finish its queue.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let address = self.local_addr()?.to_string();
        axum::serve(self.listener, self.app)
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(|source| ServeError::Io {
                address: address.clone(),
                source,
            })?;
        // The router (and with it every queue sender) is gone: the worker drains and stops.
        let worker = self.worker;
        tokio::task::spawn_blocking(move || worker.join())
            .await
            .ok();
        Ok(())
    }
}

/// Completes on Ctrl-C (SIGINT) or, on Unix, SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}
