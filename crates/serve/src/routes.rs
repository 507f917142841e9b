//! The HTTP routes: the two translation APIs, health, model descriptions, metrics, the page and
//! the admin's reload. Every refusal is a JSON `{"error": ...}` with a 4xx status; nothing a
//! client sends can stop the server.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{ConnectInfo, DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::access::Access;
use crate::api::{AttentionJson, LibreRequest, OneOrMany, OnmtRequest, OnmtResponse};
use crate::batcher::JobOutput;
use crate::config::ServeConfig;
use crate::error::ApiError;
use crate::html::{HtmlDocument, SegmentTranslation};
use crate::metrics::Metrics;
use crate::models::{ModelPool, ModelSlot};

/// The translation page, compiled into the binary.
pub const PAGE: &str = include_str!("page.html");

/// What the handlers share.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The models and their queues.
    pub pool: Arc<ModelPool>,
    /// The server's request counters.
    pub metrics: Arc<Metrics>,
    /// The settings the server runs with.
    pub config: Arc<ServeConfig>,
    /// Who may translate, and how much.
    pub access: Arc<Access>,
    /// The SHA-256 of the admin key, if one is set.
    pub admin_key: Option<[u8; 32]>,
}

/// The id of the model that answered a request, for the metrics' `model` label.
#[derive(Debug, Clone)]
struct ServedBy(String);

/// The router of every endpoint, with the body-size limit, CORS (when origins are allowed) and
/// the metrics middleware.
pub fn router(state: AppState) -> Router {
    let limit = state.config.max_request_bytes;
    let cors = cors_layer(&state.config.cors_origins);
    let router = Router::new()
        .route("/", get(page))
        .route("/health", get(health))
        .route("/models", get(models))
        .route("/languages", get(languages))
        .route("/metrics", get(metrics))
        .route("/translate", post(translate_libre))
        .route("/translator/translate", post(translate_onmt))
        .route("/admin/reload", post(admin_reload))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn_with_state(state.clone(), record));
    match cors {
        Some(cors) => router.layer(cors),
        None => router,
    }
    .with_state(state)
}

/// CORS for `origins` (exact origins, or `*` for any): simple and preflighted requests from
/// their pages, with the headers a client sends (`Content-Type`, `Authorization`). `None` when
/// no origin is allowed: browsers then keep other sites' pages from reading the answers.
fn cors_layer(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(
            origins
                .iter()
                .filter_map(|o| HeaderValue::from_str(o).ok())
                .collect::<Vec<_>>(),
        )
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::POST])
            .allow_headers([header::CONTENT_TYPE, header::AUTHORIZATION])
            .max_age(std::time::Duration::from_secs(600)),
    )
}

/// Counts every answered request by route, status and model, with its latency.
async fn record(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".into());
    let started = Instant::now();
    let response = next.run(request).await;
    let model = response
        .extensions()
        .get::<ServedBy>()
        .map(|m| m.0.as_str())
        .unwrap_or("");
    state
        .metrics
        .record_request(&route, response.status().as_u16(), model, started.elapsed());
    response
}

/// A handler's answer, with the model that gave it for the metrics.
fn served_by(slot: &ModelSlot, result: Result<Json<Value>, ApiError>) -> Response {
    let mut response = result.into_response();
    response
        .extensions_mut()
        .insert(ServedBy(slot.spec.id.clone()));
    response
}

/// The API key a request carries: `Authorization: Bearer KEY`, else `body_key` (LibreTranslate's
/// `api_key` field).
fn request_key<'a>(headers: &'a HeaderMap, body_key: Option<&'a str>) -> Option<&'a str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        // The scheme is case-insensitive (RFC 9110, 11.1).
        .and_then(|v| {
            v.get(..7)
                .filter(|scheme| scheme.eq_ignore_ascii_case("bearer "))
                .map(|_| &v[7..])
        })
        .map(str::trim)
        .or(body_key)
}

/// Queues `sentences` for `slot`'s model and waits at most the server's request timeout
/// (504 after it; sentences not started by then are never decoded).
async fn translate_on(
    state: &AppState,
    slot: &ModelSlot,
    sentences: Vec<String>,
    nbest: Option<usize>,
    attention: bool,
    align: bool,
    target: Option<String>,
) -> Result<(JobOutput, usize), ApiError> {
    let timeout = state.config.request_timeout;
    let work = async {
        let batcher = state.pool.batcher(slot).await?;
        let nbest = nbest.unwrap_or(batcher.options().nbest);
        let output = batcher
            .translate(sentences, nbest, attention, align, target)
            .await?;
        Ok::<_, ApiError>((output, nbest))
    };
    tokio::time::timeout(timeout, work).await.map_err(|_| {
        ApiError::Timeout(format!(
            "the translation took longer than the server's limit of {} ms (--request-timeout-ms)",
            timeout.as_millis()
        ))
    })?
}

async fn page() -> Html<&'static str> {
    Html(PAGE)
}

async fn health() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

async fn models(State(state): State<AppState>) -> Json<Value> {
    Json(state.pool.describe().await)
}

/// LibreTranslate's `GET /languages`: every source language with its targets.
async fn languages(State(state): State<AppState>) -> Json<Value> {
    Json(state.pool.languages())
}

async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    let models: Vec<(&str, &crate::metrics::ModelMetrics)> = state
        .pool
        .slots()
        .iter()
        .map(|slot| (slot.spec.id.as_str(), slot.metrics.as_ref()))
        .collect();
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(&models),
    )
}

/// `POST /admin/reload` (`Authorization: Bearer ADMIN_KEY`; body `{"id": "..."}` for one
/// model, or nothing for every loaded one): loads each model anew from its checkpoint and swaps
/// it in; a model that fails to load is refused (422) and the old one keeps serving.
async fn admin_reload(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let Some(admin) = state.admin_key else {
        return Err(ApiError::Forbidden(
            "reloading over HTTP is off: start the server with --admin-key-file (SIGHUP reloads too)".into(),
        ));
    };
    let Some(key) = request_key(&headers, None) else {
        return Err(ApiError::Unauthorized(
            "the admin endpoint needs `Authorization: Bearer ADMIN_KEY`".into(),
        ));
    };
    let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
    if digest != admin {
        return Err(ApiError::Forbidden("the admin key is not valid".into()));
    }
    let bytes = body_bytes(body, &state.config)?;
    let id = if bytes.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        let request: Value = parse_json(&bytes)?;
        match request.get("id") {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) => Some(id.clone()),
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "`id` is {other}; it must be a model id (a string)"
                )));
            }
        }
    };
    let slots: Vec<&Arc<ModelSlot>> = match &id {
        Some(id) => vec![
            state
                .pool
                .by_id(id)
                .ok_or_else(|| ApiError::NotFound(format!("no model has the id {id:?}")))?,
        ],
        None => {
            let loaded = state.pool.loaded().await;
            state
                .pool
                .slots()
                .iter()
                .filter(|slot| loaded.contains(&slot.spec.id))
                .collect()
        }
    };
    let mut reloaded = Vec::new();
    for slot in slots {
        state.pool.reload(slot).await.map_err(|error| {
            ApiError::Unprocessable(format!(
                "{error}; the model already loaded keeps serving (reloaded before it: {reloaded:?})"
            ))
        })?;
        reloaded.push(slot.spec.id.clone());
    }
    Ok(Json(json!({ "reloaded": reloaded })))
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

/// LibreTranslate's `detectedLanguage` for `"source": "auto"`: the chosen direction's source
/// language, confidence 100 (there is no language detection).
fn detected_language(request: &LibreRequest, source: &str) -> Option<Value> {
    if request.source.as_deref() != Some("auto") {
        return None;
    }
    let detected = json!({ "language": source, "confidence": 100 });
    Some(match &request.q {
        OneOrMany::One(_) => detected,
        OneOrMany::Many(texts) => Value::Array(vec![detected; texts.len()]),
    })
}

/// Checks a `format: "html"` request: documents (at most `--max-sentences`) whose text
/// segments each fit `--max-sentence-chars`, at most `--max-sentences` segments in all.
fn check_html(documents: &[String], config: &ServeConfig) -> Result<(), ApiError> {
    if documents.is_empty() {
        return Err(ApiError::bad_request(
            "no text to translate: `q` is an empty array",
        ));
    }
    let segments: Vec<String> = documents
        .iter()
        .flat_map(|d| HtmlDocument::parse(d).texts())
        .collect();
    if documents.len() > config.max_sentences || segments.len() > config.max_sentences {
        return Err(ApiError::TooLarge(format!(
            "{} documents with {} text segments in one request; the server takes at most {} of each (--max-sentences)",
            documents.len(),
            segments.len(),
            config.max_sentences
        )));
    }
    if segments.is_empty() {
        return Ok(());
    }
    check_sentences(&segments, config, "")
}

/// LibreTranslate's `format: "html"`: each document's text segments translated together (one
/// job), the markup kept and inline tags placed by word alignment ([`crate::html`]).
async fn translate_html(
    state: &AppState,
    slot: &ModelSlot,
    direction: &Routed,
    request: &LibreRequest,
    documents: &[String],
) -> Result<Json<Value>, ApiError> {
    if request.alternatives > 0 {
        return Err(ApiError::bad_request(
            "`alternatives` is not available with `format: \"html\"`",
        ));
    }
    let parsed: Vec<HtmlDocument> = documents.iter().map(|d| HtmlDocument::parse(d)).collect();
    let segments: Vec<String> = parsed.iter().flat_map(HtmlDocument::texts).collect();
    let (translations, warnings) = if segments.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        let (output, _) = translate_on(
            state,
            slot,
            segments,
            Some(1),
            false,
            true,
            direction.target.clone(),
        )
        .await?;
        let warnings = truncation_warnings(&output);
        let translations: Vec<SegmentTranslation> = output
            .translations
            .into_iter()
            .zip(
                output
                    .alignments
                    .into_iter()
                    .map(Some)
                    .chain(std::iter::repeat(None)),
            )
            .map(|(t, alignment)| (t.text, alignment))
            .collect();
        (translations, warnings)
    };
    let mut rest = translations.as_slice();
    let mut texts = Vec::with_capacity(parsed.len());
    for doc in &parsed {
        let n = doc.texts().len();
        let (mine, later) = rest.split_at(n.min(rest.len()));
        texts.push(doc.render(mine));
        rest = later;
    }
    let mut body = serde_json::Map::new();
    match &request.q {
        OneOrMany::One(_) => {
            body.insert(
                "translatedText".into(),
                json!(texts.first().cloned().unwrap_or_default()),
            );
        }
        OneOrMany::Many(_) => {
            body.insert("translatedText".into(), json!(texts));
        }
    }
    if let Some(detected) = detected_language(request, &direction.source) {
        body.insert("detectedLanguage".into(), detected);
    }
    if !warnings.is_empty() {
        body.insert("warnings".into(), Value::Array(warnings));
    }
    Ok(Json(Value::Object(body)))
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
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let config = &state.config;
    let request: LibreRequest = match if is_form(&headers) {
        parse_form(body, config)
    } else {
        parse_body(body, config)
    } {
        Ok(request) => request,
        Err(error) => return error.into_response(),
    };
    let (slot, direction) = match state
        .pool
        .route_languages(request.source.as_deref(), request.target.as_deref())
    {
        Ok(((slot, target), source)) => (
            Arc::clone(slot),
            Routed {
                target,
                source: source.to_string(),
            },
        ),
        Err(error) => return error.into_response(),
    };
    let result = translate_libre_on(&state, &slot, &direction, client, &headers, request).await;
    served_by(&slot, result)
}

/// The direction a LibreTranslate request was routed to.
struct Routed {
    /// The target language to give the model (a multilingual model's; see
    /// [`crate::models::ModelSpec::model_target`]).
    target: Option<String>,
    /// The direction's source language (`detectedLanguage` for `"source": "auto"`).
    source: String,
}

/// LibreTranslate's `POST /translate` once routed to `slot`'s model.
async fn translate_libre_on(
    state: &AppState,
    slot: &ModelSlot,
    direction: &Routed,
    client: SocketAddr,
    headers: &HeaderMap,
    request: LibreRequest,
) -> Result<Json<Value>, ApiError> {
    let config = &state.config;
    let html = match request.format.as_deref() {
        None | Some("text") => false,
        Some("html") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "`format` {other:?} is not supported; send \"text\" or \"html\""
            )));
        }
    };
    let sentences = request.q.sentences();
    if html {
        check_html(&sentences, config)?;
    } else {
        check_sentences(&sentences, config, "`q` is an empty array")?;
    }
    let chars = sentences.iter().map(|s| s.chars().count()).sum();
    state.access.admit(
        request_key(headers, request.api_key.as_deref()),
        client.ip(),
        chars,
    )?;
    if html {
        return translate_html(state, slot, direction, &request, &sentences).await;
    }
    if request.alternatives > 0 {
        let beam = state.pool.batcher(slot).await?.options().beam;
        if request.alternatives >= beam {
            return Err(ApiError::bad_request(format!(
                "`alternatives` is {}; model {:?} searches with a beam of {beam}, so at most {} alternatives exist (start the server with a larger --beam for more)",
                request.alternatives,
                slot.spec.id,
                beam - 1
            )));
        }
    }
    let (output, _) = translate_on(
        state,
        slot,
        sentences,
        Some(request.alternatives + 1),
        request.attention,
        false,
        direction.target.clone(),
    )
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
    if let Some(detected) = detected_language(&request, &direction.source) {
        body.insert("detectedLanguage".into(), detected);
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
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let requests: Vec<OnmtRequest> = match parse_body(body, &state.config) {
        Ok(requests) => requests,
        Err(error) => return error.into_response(),
    };
    // OpenNMT-py takes the model from the request's sentences; they must agree.
    let mut slot: Option<&Arc<ModelSlot>> = None;
    for request in &requests {
        let routed = match state.pool.route_id(request.id.as_ref()) {
            Ok(routed) => routed,
            Err(error) => return error.into_response(),
        };
        match slot {
            Some(first) if !Arc::ptr_eq(first, routed) => {
                return ApiError::bad_request(format!(
                    "the sentences name different models ({:?} and {:?}); send one request per model",
                    first.spec.id, routed.spec.id
                ))
                .into_response();
            }
            _ => slot = Some(routed),
        }
    }
    let slot = match slot {
        Some(slot) => Arc::clone(slot),
        None => return ApiError::bad_request("the request is an empty array").into_response(),
    };
    let result = translate_onmt_on(&state, &slot, client, &headers, requests).await;
    served_by(&slot, result)
}

/// OpenNMT-py's `POST /translator/translate` once routed to `slot`'s model.
async fn translate_onmt_on(
    state: &AppState,
    slot: &ModelSlot,
    client: SocketAddr,
    headers: &HeaderMap,
    requests: Vec<OnmtRequest>,
) -> Result<Json<Value>, ApiError> {
    // OpenNMT-py's requests name no target language, which a multilingual model needs:
    // refused before anything is counted or queued.
    if slot.spec.multilingual {
        return Err(ApiError::Unprocessable(format!(
            "model {:?} is multilingual ({}): OpenNMT-py's requests name no target language; use LibreTranslate's POST /translate with `source` and `target`",
            slot.spec.id,
            slot.spec.pairs()
        )));
    }
    let sentences: Vec<String> = requests.into_iter().map(|r| r.src).collect();
    check_sentences(&sentences, &state.config, "the request is an empty array")?;
    let chars = sentences.iter().map(|s| s.chars().count()).sum();
    state
        .access
        .admit(request_key(headers, None), client.ip(), chars)?;
    let (output, n_best) =
        translate_on(state, slot, sentences.clone(), None, false, false, None).await?;
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
