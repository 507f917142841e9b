//! The models a server offers: each with its id and language pair, loaded at start or on first
//! use, with its own queue and decoding worker (so that a flood of requests for one model waits
//! in that model's queue, not in front of another's), unloaded after an idle time if asked, and
//! replaced in place by a reload that never fails or mixes a request in flight.
//!
//! Requests are routed as LibreTranslate routes them (`source` and `target`, `source` may be
//! `auto`) or as OpenNMT-py does (the model's `id`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rosetta_infer::rosetta_model::burn::module::Module;
use rosetta_infer::{LanguagePair, TranslateOptions, Translator};
use serde_json::{Value, json};

use crate::batcher::{BatchPolicy, Batcher};
use crate::config::ServeConfig;
use crate::error::{ApiError, ServeError};
use crate::metrics::ModelMetrics;

/// One model as the server offers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    /// The model's id: OpenNMT-py's `id`, and its label in `/models` and `/metrics`.
    pub id: String,
    /// Its checkpoint, run directory or model bundle.
    pub checkpoint: PathBuf,
    /// The directions it translates (LibreTranslate's `source` and `target`): a bilingual
    /// model's one, or every direction of a multilingual model.
    pub directions: Vec<LanguagePair>,
    /// Whether the model is multilingual: a request's target language is then given to the
    /// model (as the tag that starts each source, [`Translator::translate_lines_into`]).
    pub multilingual: bool,
    /// Whether it is loaded when the server starts (else on its first request).
    pub preload: bool,
}

impl ModelSpec {
    /// A bilingual model's spec, translating `source` to `target`.
    pub fn bilingual(
        id: impl Into<String>,
        checkpoint: PathBuf,
        source: impl Into<String>,
        target: impl Into<String>,
        preload: bool,
    ) -> Self {
        Self {
            id: id.into(),
            checkpoint,
            directions: vec![LanguagePair {
                source: source.into(),
                target: target.into(),
            }],
            multilingual: false,
            preload,
        }
    }

    /// The directions as messages list them: `en->de, en->fr`.
    pub fn pairs(&self) -> String {
        self.directions
            .iter()
            .map(|d| format!("{}->{}", d.source, d.target))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The target language a request into `target` gives the model: a multilingual model's,
    /// none for a bilingual one.
    pub fn model_target(&self, target: &str) -> Option<String> {
        self.multilingual.then(|| target.to_string())
    }
}

/// A request's model and the target language to give it (a multilingual model's; see
/// [`ModelSpec::model_target`]).
pub type Route<'a> = (&'a Arc<ModelSlot>, Option<String>);

/// A model in memory, ready to decode, with the search its requests get.
pub struct LoadedModel {
    /// The translator.
    pub translator: Translator,
    /// The search every request to it gets (its `nbest`: OpenNMT-py's n-best size).
    pub options: TranslateOptions,
}

/// Loads a model: what the server calls at start, on first use and on reload (from a blocking
/// thread). The error is the message a client or the log sees.
pub type Loader = Arc<dyn Fn(&ModelSpec) -> Result<LoadedModel, String> + Send + Sync>;

/// A model being served: its queue, its worker and what `/models` says of it.
struct Running {
    batcher: Batcher,
    worker: JoinHandle<()>,
    info: Value,
}

/// One model of the server, loaded or not.
pub struct ModelSlot {
    /// What the model is.
    pub spec: ModelSpec,
    /// Its counters (kept across unloads and reloads).
    pub metrics: Arc<ModelMetrics>,
    running: tokio::sync::RwLock<Option<Running>>,
    /// One load or reload at a time.
    loading: tokio::sync::Mutex<()>,
    last_used: Mutex<Instant>,
}

impl std::fmt::Debug for ModelSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelSlot")
            .field("spec", &self.spec)
            .finish()
    }
}

/// Every model of a server, the loader and the settings their workers share.
pub struct ModelPool {
    slots: Vec<Arc<ModelSlot>>,
    loader: Loader,
    policy: BatchPolicy,
    max_queue: usize,
    device: String,
}

impl std::fmt::Debug for ModelPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelPool")
            .field("slots", &self.slots)
            .finish()
    }
}

/// What `GET /models` says of a loaded model.
fn describe(spec: &ModelSpec, loaded: &LoadedModel, device: &str, config: &BatchPolicy) -> Value {
    let translator = &loaded.translator;
    let options = &loaded.options;
    let model = &translator.config;
    json!({
        "id": spec.id,
        "source": spec.directions.first().map(|d| d.source.as_str()),
        "target": spec.directions.first().map(|d| d.target.as_str()),
        "directions": spec.directions,
        "multilingual": spec.multilingual,
        "loaded": true,
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
            "beam": options.beam,
            "alpha": options.alpha,
            "length_norm": options.length_norm,
            "beam_stop": options.beam_stop,
            "max_len_a": options.max_len_a,
            "max_len_b": options.max_len_b,
            "nbest": options.nbest,
        },
        "batching": {
            "max_batch_tokens": config.max_tokens,
            "max_wait_ms": config.max_wait.as_millis() as u64,
        },
    })
}

impl ModelPool {
    /// A pool of `specs` (ids unique, checked), loaded by `loader` on the device named `device`,
    /// their workers batching and queueing as `config` says. Nothing is loaded yet: see
    /// [`ModelPool::start`].
    pub fn new(
        specs: Vec<ModelSpec>,
        loader: Loader,
        config: &ServeConfig,
        device: &str,
    ) -> Result<Self, ServeError> {
        if specs.is_empty() {
            return Err(ServeError::Models("no model to serve".into()));
        }
        for (i, spec) in specs.iter().enumerate() {
            if spec.id.trim().is_empty() {
                return Err(ServeError::Models(format!("model {i} has an empty id")));
            }
            if specs[..i].iter().any(|other| other.id == spec.id) {
                return Err(ServeError::Models(format!(
                    "two models have the id {:?}",
                    spec.id
                )));
            }
            if spec.directions.is_empty() {
                return Err(ServeError::Models(format!(
                    "model {:?} has no direction",
                    spec.id
                )));
            }
            for other in &specs[..i] {
                if let Some(both) = spec
                    .directions
                    .iter()
                    .find(|d| other.directions.contains(d))
                {
                    return Err(ServeError::Models(format!(
                        "models {:?} and {:?} both translate {} to {}; LibreTranslate's source and target could not tell them apart",
                        other.id, spec.id, both.source, both.target
                    )));
                }
            }
        }
        let now = Instant::now();
        Ok(Self {
            slots: specs
                .into_iter()
                .map(|spec| {
                    Arc::new(ModelSlot {
                        spec,
                        metrics: Arc::new(ModelMetrics::default()),
                        running: tokio::sync::RwLock::new(None),
                        loading: tokio::sync::Mutex::new(()),
                        last_used: Mutex::new(now),
                    })
                })
                .collect(),
            loader,
            policy: BatchPolicy {
                max_tokens: config.max_batch_tokens,
                max_wait: config.max_wait,
            },
            max_queue: config.max_queue,
            device: device.to_string(),
        })
    }

    /// The models, in the order given.
    pub fn slots(&self) -> &[Arc<ModelSlot>] {
        &self.slots
    }

    /// Loads the models marked `preload`, and installs the ones in `loaded` (by id) that the
    /// caller loaded already; the first failure stops the server from starting.
    pub async fn start(&self, mut loaded: Vec<(String, LoadedModel)>) -> Result<(), ServeError> {
        for slot in &self.slots {
            if let Some(index) = loaded.iter().position(|(id, _)| id == &slot.spec.id) {
                let (_, model) = loaded.swap_remove(index);
                self.install(slot, model).await;
            } else if slot.spec.preload {
                self.load(slot)
                    .await
                    .map_err(|reason| ServeError::Models(reason.to_string()))?;
            }
        }
        Ok(())
    }

    /// Starts the worker for `model` in `slot`, in place of the one running (which finishes
    /// the requests it holds and stops).
    async fn install(&self, slot: &ModelSlot, model: LoadedModel) {
        let info = describe(&slot.spec, &model, &self.device, &self.policy);
        let (batcher, worker) = Batcher::start(
            Arc::new(model.translator),
            model.options,
            self.policy,
            self.max_queue,
            Arc::clone(&slot.metrics),
        );
        let old = slot.running.write().await.replace(Running {
            batcher,
            worker,
            info,
        });
        // The old queue closes when its last request in flight drops its handle; its worker
        // then finishes and ends on its own.
        drop(old);
        slot.touch();
    }

    /// Loads `slot`'s model on a blocking thread.
    async fn load_model(&self, slot: &ModelSlot) -> Result<LoadedModel, ApiError> {
        let loader = Arc::clone(&self.loader);
        let spec = slot.spec.clone();
        tokio::task::spawn_blocking(move || loader(&spec))
            .await
            .map_err(|e| ApiError::Internal(format!("loading the model failed: {e}")))?
            .map_err(|reason| {
                ApiError::Internal(format!(
                    "model {:?} cannot be loaded: {reason}",
                    slot.spec.id
                ))
            })
    }

    /// Loads `slot`'s model if it is not running (one load at a time; later callers wait for
    /// it).
    async fn load(&self, slot: &ModelSlot) -> Result<(), ApiError> {
        let _loading = slot.loading.lock().await;
        if slot.running.read().await.is_some() {
            return Ok(());
        }
        let model = self.load_model(slot).await?;
        self.install(slot, model).await;
        Ok(())
    }

    /// The queue of `slot`'s model, loading it first if it is not in memory.
    pub async fn batcher(&self, slot: &ModelSlot) -> Result<Batcher, ApiError> {
        loop {
            if let Some(running) = slot.running.read().await.as_ref() {
                slot.touch();
                return Ok(running.batcher.clone());
            }
            self.load(slot).await?;
        }
    }

    /// Loads `slot`'s model anew from its checkpoint and swaps it in once loaded; requests in
    /// flight finish on the old one. A model that fails to load is refused and the old one
    /// keeps serving.
    pub async fn reload(&self, slot: &ModelSlot) -> Result<(), ApiError> {
        let _loading = slot.loading.lock().await;
        let model = self.load_model(slot).await?;
        self.install(slot, model).await;
        Ok(())
    }

    /// Unloads the models unused for `idle` or longer; their ids.
    pub async fn unload_idle(&self, idle: Duration) -> Vec<String> {
        let mut unloaded = Vec::new();
        for slot in &self.slots {
            if slot.idle_for() < idle {
                continue;
            }
            let Ok(_loading) = slot.loading.try_lock() else {
                continue;
            };
            let mut running = slot.running.write().await;
            if running.is_some() && slot.idle_for() >= idle {
                *running = None;
                unloaded.push(slot.spec.id.clone());
            }
        }
        unloaded
    }

    /// The ids of the models in memory.
    pub async fn loaded(&self) -> Vec<String> {
        let mut ids = Vec::new();
        for slot in &self.slots {
            if slot.running.read().await.is_some() {
                ids.push(slot.spec.id.clone());
            }
        }
        ids
    }

    /// `GET /models`: every model, loaded or not.
    pub async fn describe(&self) -> Value {
        let mut models = Vec::new();
        for slot in &self.slots {
            let running = slot.running.read().await;
            models.push(match running.as_ref() {
                Some(running) => running.info.clone(),
                None => json!({
                    "id": slot.spec.id,
                    "source": slot.spec.directions.first().map(|d| d.source.as_str()),
                    "target": slot.spec.directions.first().map(|d| d.target.as_str()),
                    "directions": slot.spec.directions,
                    "multilingual": slot.spec.multilingual,
                    "loaded": false,
                    "checkpoint": slot.spec.checkpoint.display().to_string(),
                }),
            });
        }
        Value::Array(models)
    }

    /// LibreTranslate's `GET /languages`: each source language with the targets it has.
    pub fn languages(&self) -> Value {
        let mut sources: Vec<(&str, Vec<&str>)> = Vec::new();
        for direction in self.slots.iter().flat_map(|slot| &slot.spec.directions) {
            match sources.iter_mut().find(|(s, _)| *s == direction.source) {
                Some((_, targets)) => targets.push(&direction.target),
                None => sources.push((&direction.source, vec![&direction.target])),
            }
        }
        Value::Array(
            sources
                .into_iter()
                .map(|(code, targets)| json!({ "code": code, "name": code, "targets": targets }))
                .collect(),
        )
    }

    /// The pairs served, for messages: `en->de, en->fr`.
    fn pairs(&self) -> String {
        self.slots
            .iter()
            .map(|s| s.spec.pairs())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The model and direction LibreTranslate's `source` (a code, `auto`, or absent) and
    /// `target` (a code or absent) ask for, with the target language to give the model (a
    /// multilingual model's), and the direction's source language (for `detectedLanguage`).
    pub fn route_languages(
        &self,
        source: Option<&str>,
        target: Option<&str>,
    ) -> Result<(Route<'_>, &str), ApiError> {
        let source = source.filter(|s| *s != "auto");
        let matches: Vec<(&Arc<ModelSlot>, &LanguagePair)> = self
            .slots
            .iter()
            .flat_map(|slot| slot.spec.directions.iter().map(move |d| (slot, d)))
            .filter(|(_, d)| {
                source.is_none_or(|s| s == d.source) && target.is_none_or(|t| t == d.target)
            })
            .collect();
        match matches.as_slice() {
            [(slot, direction)] => Ok((
                (*slot, slot.spec.model_target(&direction.target)),
                direction.source.as_str(),
            )),
            [] => Err(ApiError::bad_request(format!(
                "no model translates `source` {} to `target` {}; this server translates {}",
                source.unwrap_or("auto"),
                target.unwrap_or("(any)"),
                self.pairs()
            ))),
            _ => Err(ApiError::bad_request(format!(
                "several models or directions match; give `source` and `target` (this server translates {})",
                self.pairs()
            ))),
        }
    }

    /// The model OpenNMT-py's `id` names (a string, or a number matched against the ids as
    /// text); with one model, any id (or none) is that model, as OpenNMT-py's clients often
    /// send a fixed id.
    pub fn route_id(&self, id: Option<&Value>) -> Result<&Arc<ModelSlot>, ApiError> {
        if let [only] = self.slots.as_slice() {
            return Ok(only);
        }
        let ids = || {
            self.slots
                .iter()
                .map(|s| format!("{:?}", s.spec.id))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let wanted = match id {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "`id` is {other}; it must be a model id ({})",
                    ids()
                )));
            }
            None => {
                return Err(ApiError::bad_request(format!(
                    "this server holds several models; give each sentence's `id` ({})",
                    ids()
                )));
            }
        };
        self.slots
            .iter()
            .find(|slot| slot.spec.id == wanted)
            .ok_or_else(|| {
                ApiError::bad_request(format!("no model has the id {wanted:?} ({})", ids()))
            })
    }

    /// The model with id `id`.
    pub fn by_id(&self, id: &str) -> Option<&Arc<ModelSlot>> {
        self.slots.iter().find(|slot| slot.spec.id == id)
    }

    /// Stops every worker once its queue is empty (after the server stopped accepting
    /// requests), and waits for them.
    pub async fn shutdown(&self) {
        let mut workers = Vec::new();
        for slot in &self.slots {
            if let Some(running) = slot.running.write().await.take() {
                drop(running.batcher);
                workers.push(running.worker);
            }
        }
        tokio::task::spawn_blocking(move || {
            for worker in workers {
                let _ = worker.join();
            }
        })
        .await
        .ok();
    }
}

impl ModelSlot {
    fn touch(&self) {
        *self
            .last_used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Instant::now();
    }

    fn idle_for(&self) -> Duration {
        self.last_used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .elapsed()
    }
}
