//! The HTTP routes: the two translation APIs, health, model description, metrics and the page.
//! Every refusal is a JSON `{"error": ...}` with a 4xx status; nothing a client sends can stop
//! the server.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::api::{AttentionJson, LibreRequest, OneOrMany, OnmtRequest, OnmtResponse};
use crate::batcher::{Batcher, JobOutput};
use crate::config::ServeConfig;
use crate::error::ApiError;
use crate::metrics::Metrics;

/// The translation page, compiled into the binary.
pub const PAGE: &str = include_str!("page.html");

/// What the handlers share.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The queue to the decoding worker.
    pub batcher: Batcher,
    /// The server's counters.
    pub metrics: Arc<Metrics>,
    /// The settings the server runs with.
    pub config: Arc<ServeConfig>,
    /// `GET /models`'s answer, computed once.
    pub model_info: Arc<Value>,
}

/// The router of every endpoint, with the body-size limit and the metrics middleware.
pub fn router(state: AppState) -> Router {
    let limit = state.config.max_request_bytes;
    Router::new()
        .route("/", get(page))
        .route("/health", get(health))
        .route("/models", get(models))
        .route("/languages", get(languages))
        .route("/metrics", get(metrics))
        .route("/translate", post(translate_libre))
        .route("/translator/translate", post(translate_onmt))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn_with_state(state.clone(), record))
        .with_state(state)
}

/// Counts every answered request by route and status, with its latency.
async fn record(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".into());
    let started = Instant::now();
    let response = next.run(request).await;
    state
        .metrics
        .record_request(&route, response.status().as_u16(), started.elapsed());
    response
}

async fn page() -> Html<&'static str> {
    Html(PAGE)
}

async fn health() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

async fn models(State(state): State<AppState>) -> Json<Value> {
    Json((*state.model_info).clone())
}

/// LibreTranslate's `GET /languages`: the one pair this server translates.
async fn languages(State(state): State<AppState>) -> Json<Value> {
    let config = &state.config;
    Json(json!([
        { "code": config.source_lang, "name": config.source_lang, "targets": [config.target_lang] }
    ]))
}

async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
}

async fn not_found() -> ApiError {
    ApiError::NotFound(
        "no such endpoint; see GET /models, POST /translate, POST /translator/translate".into(),
    )
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed("method not allowed on this endpoint".into())
}

/// Parses a JSON body, turning every way it can be wrong into a 4xx naming the problem.
fn parse_body<T: DeserializeOwned>(
    body: Result<Bytes, BytesRejection>,
    config: &ServeConfig,
) -> Result<T, ApiError> {
    let bytes = body_bytes(body, config)?;
    if bytes.is_empty() {
        return Err(ApiError::bad_request(
            "the request body is empty; send JSON",
        ));
    }
    if std::str::from_utf8(&bytes).is_err() {
        return Err(ApiError::bad_request("the request body is not valid UTF-8"));
    }
    parse_json(&bytes)
}

/// The body's bytes, or the 4xx its rejection deserves (413 over `--max-request-bytes`).
fn body_bytes(
    body: Result<Bytes, BytesRejection>,
    config: &ServeConfig,
) -> Result<Bytes, ApiError> {
    body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::TooLarge(format!(
                "the request body is over the server's limit of {} bytes (--max-request-bytes)",
                config.max_request_bytes
            ))
        } else {
            ApiError::BadRequest(rejection.body_text())
        }
    })
}

/// Parses JSON bytes, naming what is wrong.
fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("invalid JSON request: {e}")))
}

/// Whether the request says its body is a form (`application/x-www-form-urlencoded`), as
/// LibreTranslate's own clients send it.
fn is_form(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"))
}

/// LibreTranslate's request from a form body: `q` (repeated for several texts), `source`,
/// `target`, `format`, `alternatives`, `api_key`.
fn parse_form(
    body: Result<Bytes, BytesRejection>,
    config: &ServeConfig,
) -> Result<LibreRequest, ApiError> {
    let bytes = body_bytes(body, config)?;
    let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(&bytes)
        .map_err(|e| ApiError::bad_request(format!("invalid form request: {e}")))?;
    let mut texts = Vec::new();
    let mut request = LibreRequest {
        q: OneOrMany::Many(Vec::new()),
        source: None,
        target: None,
        format: None,
        alternatives: 0,
        api_key: None,
        attention: false,
    };
    for (key, value) in pairs {
        match key.as_str() {
            "q" => texts.push(value),
            "source" => request.source = Some(value),
            "target" => request.target = Some(value),
            "format" => request.format = Some(value),
            "api_key" => request.api_key = Some(value),
            "alternatives" => {
                request.alternatives = value.trim().parse().map_err(|_| {
                    ApiError::bad_request(format!(
                        "`alternatives` is {value:?}; it must be a whole number"
                    ))
                })?;
            }
            _ => {}
        }
    }
    request.q = match texts.len() {
        0 => return Err(ApiError::bad_request("the form has no `q` field")),
        1 => OneOrMany::One(texts.remove(0)),
        _ => OneOrMany::Many(texts),
    };
    Ok(request)
}

/// Checks the sentences of a request against the server's limits; `empty` says what an empty
/// request is in the endpoint's own terms.
fn check_sentences(
    sentences: &[String],
    config: &ServeConfig,
    empty: &str,
) -> Result<(), ApiError> {
    if sentences.is_empty() {
        return Err(ApiError::bad_request(format!(
            "no text to translate: {empty}"
        )));
    }
    if sentences.len() > config.max_sentences {
        return Err(ApiError::TooLarge(format!(
            "{} sentences in one request; the server takes at most {} (--max-sentences)",
            sentences.len(),
            config.max_sentences
        )));
    }
    for (i, sentence) in sentences.iter().enumerate() {
        let chars = sentence.chars().count();
        if chars > config.max_sentence_chars {
            return Err(ApiError::TooLarge(format!(
                "sentence {i} has {chars} characters; the server takes at most {} (--max-sentence-chars)",
                config.max_sentence_chars
            )));
        }
    }
    Ok(())
}

/// Indices of the sentences cut to fit the model's positions, as a warning list.
fn truncation_warnings(output: &JobOutput) -> Vec<Value> {
    output
        .translations
        .iter()
        .enumerate()
        .filter(|(_, t)| t.truncated)
        .map(|(i, t)| {
            json!(format!(
                "sentence {i} is longer than the model's positions; its first {} subwords were translated",
                t.source_tokens.len()
            ))
        })
        .collect()
}

/// LibreTranslate's `POST /translate`.
async fn translate_libre(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let config = &state.config;
    let request: LibreRequest = if is_form(&headers) {
        parse_form(body, config)?
    } else {
        parse_body(body, config)?
    };
    if let Some(source) = &request.source
        && source != "auto"
        && source != &config.source_lang
    {
        return Err(ApiError::bad_request(format!(
            "this server translates {} to {}; `source` is {source:?}",
            config.source_lang, config.target_lang
        )));
    }
    if let Some(target) = &request.target
        && target != &config.target_lang
    {
        return Err(ApiError::bad_request(format!(
            "this server translates {} to {}; `target` is {target:?}",
            config.source_lang, config.target_lang
        )));
    }
    if let Some(format) = &request.format
        && format != "text"
    {
        return Err(ApiError::bad_request(format!(
            "`format` {format:?} is not supported; send plain text (\"text\")"
        )));
    }
    let beam = config.options.beam;
    if request.alternatives >= beam {
        return Err(ApiError::bad_request(format!(
            "`alternatives` is {}; this server searches with a beam of {beam}, so at most {} alternatives exist (start it with a larger --beam for more)",
            request.alternatives,
            beam - 1
        )));
    }
    let sentences = request.q.sentences();
    check_sentences(&sentences, config, "`q` is an empty array")?;
    let output = state
        .batcher
        .translate(sentences, request.alternatives + 1, request.attention)
        .await?;
    let mut body = serde_json::Map::new();
    let texts: Vec<&str> = output
        .translations
        .iter()
        .map(|t| t.text.as_str())
        .collect();
    let alternatives: Vec<Vec<&str>> = output
        .translations
        .iter()
        .map(|t| t.n_best.iter().skip(1).map(|(s, _)| s.as_str()).collect())
        .collect();
    let scores: Vec<Vec<f32>> = output
        .translations
        .iter()
        .map(|t| t.n_best.iter().map(|(_, score)| *score).collect())
        .collect();
    match &request.q {
        OneOrMany::One(_) => {
            body.insert(
                "translatedText".into(),
                json!(texts.first().copied().unwrap_or("")),
            );
            if request.alternatives > 0 {
                body.insert("alternatives".into(), json!(alternatives.first()));
                body.insert("scores".into(), json!(scores.first()));
            }
        }
        OneOrMany::Many(_) => {
            body.insert("translatedText".into(), json!(texts));
            if request.alternatives > 0 {
                body.insert("alternatives".into(), json!(alternatives));
                body.insert("scores".into(), json!(scores));
            }
        }
    }
    if request.source.as_deref() == Some("auto") {
        let detected = json!({ "language": config.source_lang, "confidence": 100 });
        let value = match &request.q {
            OneOrMany::One(_) => detected,
            OneOrMany::Many(texts) => Value::Array(vec![detected; texts.len()]),
        };
        body.insert("detectedLanguage".into(), value);
    }
    if let Some(map) = &output.attention {
        body.insert(
            "attention".into(),
            json!(AttentionJson {
                source: map.source_labels.clone(),
                target: map.output_labels.clone(),
                weights: map.weights.clone(),
            }),
        );
    }
    let warnings = truncation_warnings(&output);
    if !warnings.is_empty() {
        body.insert("warnings".into(), Value::Array(warnings));
    }
    Ok(Json(Value::Object(body)))
}

/// OpenNMT-py's `POST /translator/translate`.
async fn translate_onmt(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let config = &state.config;
    let requests: Vec<OnmtRequest> = parse_body(body, config)?;
    let sentences: Vec<String> = requests.into_iter().map(|r| r.src).collect();
    check_sentences(&sentences, config, "the request is an empty array")?;
    let n_best = config.options.nbest;
    let output = state
        .batcher
        .translate(sentences.clone(), n_best, false)
        .await?;
    // OpenNMT-py's shape: one list per rank k, holding every sentence's k-th hypothesis. A
    // sentence with fewer hypotheses (an empty one has one) repeats its last.
    let mut ranks: Vec<Vec<OnmtResponse>> = vec![Vec::with_capacity(sentences.len()); n_best];
    for (src, translation) in sentences.iter().zip(&output.translations) {
        for (k, rank) in ranks.iter_mut().enumerate() {
            let (tgt, score) = translation
                .n_best
                .get(k)
                .or(translation.n_best.last())
                .cloned()
                .unwrap_or_default();
            rank.push(OnmtResponse {
                src: src.clone(),
                tgt,
                n_best,
                pred_score: score,
            });
        }
    }
    Ok(Json(json!(ranks)))
}
