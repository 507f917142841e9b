//! The settings of a server: where it listens, how it batches, the limits that keep one client
//! from taking it down, who may use it, from which web origins, and how long a request may take;
//! and the models file that names what it serves.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::access::AccessConfig;
use crate::error::ServeError;

/// The longest queue `--max-queue` may ask for.
pub const MAX_QUEUE_LIMIT: usize = 1_000_000;

/// Everything `rosetta serve` can be told about the server itself (each model's search comes
/// with the model: [`crate::models::LoadedModel`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ServeConfig {
    /// The address to listen on (loopback by default).
    pub host: String,
    /// The port (0: any free port, printed at start).
    pub port: u16,
    /// The most source subwords (EOS included) decoded in one batch; a single sentence longer
    /// than this still gets a batch of its own.
    pub max_batch_tokens: usize,
    /// How long a decoding worker, once free, waits for the clients it has just answered to
    /// send their next request before it decodes what is queued (a lone request to an idle
    /// server is never delayed).
    pub max_wait: Duration,
    /// The largest request body accepted, in bytes (413 above).
    pub max_request_bytes: usize,
    /// The most sentences one request may hold (413 above).
    pub max_sentences: usize,
    /// The longest sentence accepted, in characters (413 above). Sentences within this limit
    /// but longer than the model's positions are cut and reported, as `rosetta translate` does.
    pub max_sentence_chars: usize,
    /// Requests waiting for a model's decoding worker before new ones are refused with 429.
    pub max_queue: usize,
    /// How long a request may wait and decode before it is answered 504 (its sentences are
    /// then not decoded if they have not started).
    pub request_timeout: Duration,
    /// Models unused this long are unloaded (loaded again on their next request); `None`:
    /// never.
    pub unload_after: Option<Duration>,
    /// The web origins whose pages may call the server (CORS); none by default.
    pub cors_origins: Vec<String>,
    /// API keys, anonymous access and limits.
    pub access: AccessConfig,
    /// The file holding the admin key that `POST /admin/reload` requires; `None`: the endpoint
    /// is refused (SIGHUP still reloads).
    pub admin_key: Option<PathBuf>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            host: "127.0.0.1".into(),
            port: 8080,
            max_batch_tokens: 4096,
            max_wait: Duration::from_millis(5),
            max_request_bytes: 1 << 20,
            max_sentences: 128,
            max_sentence_chars: 2048,
            max_queue: 1024,
            request_timeout: Duration::from_secs(60),
            unload_after: None,
            cors_origins: Vec::new(),
            access: AccessConfig::default(),
            admin_key: None,
        }
    }
}

/// Whether `host` is a loopback address (or `localhost`).
pub fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

impl ServeConfig {
    /// Checks the settings, naming the first impossible one.
    pub fn validate(&self) -> Result<(), ServeError> {
        let invalid = |option, reason: String| ServeError::InvalidOption { option, reason };
        let positive = [
            ("max-batch-tokens", self.max_batch_tokens),
            ("max-request-bytes", self.max_request_bytes),
            ("max-sentences", self.max_sentences),
            ("max-sentence-chars", self.max_sentence_chars),
            ("max-queue", self.max_queue),
        ];
        for (option, value) in positive {
            if value == 0 {
                return Err(invalid(option, "is 0; it must be at least 1".into()));
            }
        }
        if self.max_queue > MAX_QUEUE_LIMIT {
            return Err(invalid(
                "max-queue",
                format!(
                    "is {}; at most {MAX_QUEUE_LIMIT} requests may wait (the queue is allocated at start)",
                    self.max_queue
                ),
            ));
        }
        if self.request_timeout.is_zero() {
            return Err(invalid(
                "request-timeout-ms",
                "is 0; it must be at least 1".into(),
            ));
        }
        if self.unload_after.is_some_and(|d| d.is_zero()) {
            return Err(invalid(
                "unload-after-secs",
                "is 0; leave it out to keep models loaded".into(),
            ));
        }
        self.access
            .anonymous_limits
            .validate("anonymous limits")
            .map_err(|reason| invalid("anonymous-requests-per-minute", reason))?;
        for origin in &self.cors_origins {
            let scheme = origin
                .split_once("://")
                .filter(|(scheme, host)| {
                    matches!(*scheme, "http" | "https") && !host.is_empty() && !host.contains('/')
                })
                .is_some();
            if origin != "*" && !scheme {
                return Err(invalid(
                    "cors-origin",
                    format!(
                        "{origin:?} is not an origin (scheme://host[:port], no path, e.g. https://example.org; or *)"
                    ),
                ));
            }
        }
        if !is_loopback(&self.host)
            && self.access.api_keys.is_none()
            && !self.access.allow_anonymous
        {
            return Err(invalid(
                "host",
                format!(
                    "{} is reachable beyond this machine and no --api-keys are given: anyone could use the server. Give --api-keys FILE, or --allow-anonymous to serve everyone on purpose",
                    self.host
                ),
            ));
        }
        Ok(())
    }
}

/// When a model of the models file is loaded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadWhen {
    /// When the server starts (a model that fails to load stops the start).
    #[default]
    Start,
    /// On its first request.
    FirstUse,
}

/// One `[[model]]` of a models file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelEntry {
    /// The model's id (OpenNMT-py's `id`; its label in `/models` and `/metrics`).
    pub id: String,
    /// Its checkpoint, run directory or bundle; relative paths are from the file's directory.
    pub checkpoint: PathBuf,
    /// Its source language code; default: the one the checkpoint records.
    #[serde(default)]
    pub source: Option<String>,
    /// Its target language code; default: the one the checkpoint records.
    #[serde(default)]
    pub target: Option<String>,
    /// When it is loaded.
    #[serde(default)]
    pub load: LoadWhen,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelsFile {
    model: Vec<ModelEntry>,
}

/// Reads a models file (`--models FILE`):
///
/// ```toml
/// [[model]]
/// id = "en-fr"
/// checkpoint = "runs/en-fr"     # a checkpoint, run directory or bundle
/// source = "en"                 # optional: the checkpoint's
/// target = "fr"
/// load = "first-use"            # or "start" (the default)
/// ```
pub fn read_models_file(path: &Path) -> Result<Vec<ModelEntry>, ServeError> {
    let file_error = |reason: String| ServeError::File {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| file_error(e.to_string()))?;
    let file: ModelsFile = toml::from_str(&text).map_err(|e| file_error(e.to_string()))?;
    if file.model.is_empty() {
        return Err(file_error("no [[model]] in the file".into()));
    }
    let base = path.parent().unwrap_or(Path::new("."));
    Ok(file
        .model
        .into_iter()
        .map(|mut entry| {
            if entry.checkpoint.is_relative() {
                entry.checkpoint = base.join(&entry.checkpoint);
            }
            entry
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_impossible_settings_are_named() {
        assert!(ServeConfig::default().validate().is_ok());
        let refused = |config: ServeConfig| config.validate().unwrap_err().to_string();
        let message = refused(ServeConfig {
            max_sentences: 0,
            ..ServeConfig::default()
        });
        assert!(message.starts_with("option --max-sentences"), "{message}");
        let message = refused(ServeConfig {
            cors_origins: vec!["https://example.org/page".into()],
            ..ServeConfig::default()
        });
        assert!(message.starts_with("option --cors-origin"), "{message}");
        // Beyond loopback, keys or an explicit --allow-anonymous.
        let open = ServeConfig {
            host: "0.0.0.0".into(),
            ..ServeConfig::default()
        };
        assert!(refused(open.clone()).starts_with("option --host: 0.0.0.0 is reachable"));
        let mut anonymous = open.clone();
        anonymous.access.allow_anonymous = true;
        assert!(anonymous.validate().is_ok());
        let mut keyed = open;
        keyed.access.api_keys = Some("keys.txt".into());
        assert!(keyed.validate().is_ok());
        for host in ["127.0.0.1", "::1", "[::1]", "localhost"] {
            assert!(is_loopback(host), "{host}");
        }
        assert!(!is_loopback("192.168.1.2"));
    }

    #[test]
    fn a_models_file_is_read_relative_to_itself_and_bad_keys_are_named() {
        let dir = std::env::temp_dir().join(format!("rosetta-models-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("serve.toml");
        std::fs::write(
            &path,
            "[[model]]\nid = \"a\"\ncheckpoint = \"runs/a\"\nsource = \"en\"\ntarget = \"fr\"\nload = \"first-use\"\n\n[[model]]\nid = \"b\"\ncheckpoint = \"/abs/b\"\n",
        )
        .unwrap();
        let models = read_models_file(&path).unwrap();
        assert_eq!(models.len(), 2);
        assert_eq!(models[0].checkpoint, dir.join("runs/a"));
        assert_eq!(models[0].load, LoadWhen::FirstUse);
        assert_eq!(models[1].checkpoint, PathBuf::from("/abs/b"));
        assert_eq!(
            (models[1].load, models[1].source.as_deref()),
            (LoadWhen::Start, None)
        );
        std::fs::write(
            &path,
            "[[model]]\nid = \"a\"\ncheckpoint = \"x\"\nbeam = 4\n",
        )
        .unwrap();
        let message = read_models_file(&path).unwrap_err().to_string();
        assert!(message.contains("unknown field `beam`"), "{message}");
        std::fs::write(
            &path,
            "[[model]]\nid = \"a\"\ncheckpoint = \"x\"\nload = \"later\"\n",
        )
        .unwrap();
        let message = read_models_file(&path).unwrap_err().to_string();
        assert!(message.contains("load"), "{message}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
