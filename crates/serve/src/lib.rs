//! # rosetta-serve
//!
//! Trained Rosetta translators behind HTTP/JSON, as `rosetta serve` runs them:
//!
//! - `POST /translate`: LibreTranslate's API (`q` a string or an array, `alternatives` for
//!   n-best, `source`/`target` choosing the model, `api_key`, `format: "html"` with the markup
//!   kept ([`html`])), so existing LibreTranslate clients work; `GET /languages` as
//!   LibreTranslate has it;
//! - `POST /translator/translate`: OpenNMT-py's server API (`[{"src": ..., "id": ...}]` →
//!   n-best lists with `tgt` and `pred_score`);
//! - `GET /health`, `GET /models` (each model's languages, parameters, vocabularies, checkpoint
//!   step, device, search; whether it is loaded), `GET /metrics` (Prometheus, labelled by
//!   model), `POST /admin/reload` (an admin key), and `GET /`: a translation page with the
//!   n-best list and the cross-attention heatmap, compiled into the binary.
//!
//! Several models are served at once ([`models`]): each has its own queue and decoding worker
//! ([`batcher`]) that gathers the sentences of concurrent requests into batches by a token
//! budget and a maximum wait. API keys and per-client limits ([`access`]), CORS for other
//! sites' pages, a deadline per request, loading on first use, unloading when idle and hot
//! reload (SIGHUP, or the admin endpoint) make it a service rather than a demo. Bad input is
//! answered with a 4xx and a JSON message ([`error::ApiError`]); SIGTERM or Ctrl-C stops
//! accepting connections and finishes the requests in flight.

pub mod access;
pub mod api;
pub mod batcher;
pub mod config;
pub mod error;
pub mod html;
pub mod metrics;
pub mod models;
pub mod routes;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};

pub use access::{Access, AccessConfig, ApiKeys, Limits};
pub use batcher::{BatchPolicy, Batcher};
pub use config::{LoadWhen, ModelEntry, ServeConfig, read_models_file};
pub use error::{ApiError, ServeError};
pub use metrics::{Metrics, ModelMetrics};
pub use models::{LoadedModel, Loader, ModelPool, ModelSpec};
pub use routes::{AppState, router};

/// A server bound to its address, ready to run.
pub struct Server {
    listener: tokio::net::TcpListener,
    app: axum::Router,
    pool: Arc<ModelPool>,
}

/// Reads the admin key file: its first non-empty line, as a SHA-256 digest.
fn read_admin_key(path: &std::path::Path) -> Result<[u8; 32], ServeError> {
    let file_error = |reason: String| ServeError::File {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| file_error(e.to_string()))?;
    let key = text
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .ok_or_else(|| file_error("no key in the file".into()))?;
    Ok(Sha256::digest(key.as_bytes()).into())
}

impl Server {
    /// Checks `config`, reads its key files, binds `config.host:config.port` and starts the
    /// models of `specs` (on the device named `device`, loaded by `loader`): those in `loaded`
    /// (by id) as they are, the others marked `preload` loaded now, the rest on first use.
    pub async fn bind(
        specs: Vec<ModelSpec>,
        loader: Loader,
        loaded: Vec<(String, LoadedModel)>,
        config: ServeConfig,
        device: &str,
    ) -> Result<Self, ServeError> {
        config.validate()?;
        let access = Access::new(&config.access)?;
        let admin_key = config
            .admin_key
            .as_deref()
            .map(read_admin_key)
            .transpose()?;
        let pool = Arc::new(ModelPool::new(specs, loader, &config, device)?);
        pool.start(loaded).await?;
        let address = format!("{}:{}", config.host, config.port);
        let listener = tokio::net::TcpListener::bind(&address)
            .await
            .map_err(|source| ServeError::Io {
                address: address.clone(),
                source,
            })?;
        if let Some(idle) = config.unload_after {
            let pool = Arc::clone(&pool);
            let every = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(10));
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    for id in pool.unload_idle(idle).await {
                        println!(
                            "rosetta serve: unloaded model {id:?} (idle for {} s)",
                            idle.as_secs()
                        );
                    }
                }
            });
        }
        let app = router(AppState {
            pool: Arc::clone(&pool),
            metrics: Arc::new(Metrics::default()),
            config: Arc::new(config),
            access: Arc::new(access),
            admin_key,
        });
        Ok(Self {
            listener,
            app,
            pool,
        })
    }

    /// A server of one model already loaded, with id `id` (what `rosetta bench-serve` runs).
    pub async fn bind_one(
        id: &str,
        model: LoadedModel,
        source: &str,
        target: &str,
        config: ServeConfig,
        device: &str,
    ) -> Result<Self, ServeError> {
        let spec = ModelSpec::bilingual(
            id,
            model.translator.checkpoint.clone().unwrap_or_default(),
            source,
            target,
            true,
        );
        let loader: Loader = Arc::new(|spec: &ModelSpec| {
            Err(format!(
                "{} was given already loaded and cannot be loaded again",
                spec.id
            ))
        });
        Self::bind(vec![spec], loader, vec![(id.into(), model)], config, device).await
    }

    /// The models being served.
    pub fn pool(&self) -> &Arc<ModelPool> {
        &self.pool
    }

    /// The address the server listens on (its port is the real one when asked for port 0).
    pub fn local_addr(&self) -> Result<SocketAddr, ServeError> {
        self.listener.local_addr().map_err(|source| ServeError::Io {
            address: "listener".into(),
            source,
        })
    }

    /// Serves until `shutdown` completes, then stops accepting connections, finishes the
    /// requests in flight, and waits for the decoding workers to finish their queues. On Unix,
    /// SIGHUP reloads every loaded model from its checkpoint (one that fails to load is
    /// reported and keeps its old version).
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let address = self.local_addr()?.to_string();
        #[cfg(unix)]
        let reloader = {
            let pool = Arc::clone(&self.pool);
            tokio::spawn(async move {
                use tokio::signal::unix::{SignalKind, signal};
                let Ok(mut hangups) = signal(SignalKind::hangup()) else {
                    return;
                };
                while hangups.recv().await.is_some() {
                    reload_all(&pool).await;
                }
            })
        };
        axum::serve(
            self.listener,
            self.app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|source| ServeError::Io {
            address: address.clone(),
            source,
        })?;
        #[cfg(unix)]
        reloader.abort();
        // The router (and with it every request's queue handle) is gone: the workers drain
        // and stop.
        self.pool.shutdown().await;
        Ok(())
    }
}

/// Reloads every loaded model, saying on standard output (or error) how each went.
async fn reload_all(pool: &ModelPool) {
    for id in pool.loaded().await {
        let Some(slot) = pool.by_id(&id) else {
            continue;
        };
        match pool.reload(slot).await {
            Ok(()) => println!("rosetta serve: reloaded model {id:?}"),
            Err(error) => eprintln!("rosetta serve: reload of model {id:?} refused: {error}"),
        }
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
