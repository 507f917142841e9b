//! Who may translate, and how much: API keys from a file, per-key and per-address limits on
//! requests and characters per minute, answered as LibreTranslate and Hugging Face's servers
//! answer (401 without a key when keys are required, 403 for an unknown one, 429 with
//! `Retry-After` over a limit).
//!
//! The key file holds one key per line, optionally followed by its limits:
//!
//! ```text
//! # comments and blank lines are skipped
//! k-3f9a0c1d7e
//! k-team-b  requests_per_minute=120  chars_per_minute=200000
//! ```
//!
//! Keys are kept only as SHA-256 digests, compared as such, and never written to a log, a metric
//! or an error message: a client is named by the key's line number in the file.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::error::{ApiError, ServeError};

/// Anonymous clients' buckets kept before the full (idle) ones are dropped.
const MAX_ANONYMOUS_CLIENTS: usize = 10_000;

/// Limits of one client per minute; `None`: unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Requests per minute.
    pub requests_per_minute: Option<u32>,
    /// Characters of text to translate per minute.
    pub chars_per_minute: Option<u64>,
}

impl Limits {
    /// Checks that no limit is 0 (which would refuse everything), naming `what`.
    pub fn validate(&self, what: &str) -> Result<(), String> {
        if self.requests_per_minute == Some(0) {
            return Err(format!(
                "{what}: requests_per_minute is 0; it must be at least 1"
            ));
        }
        if self.chars_per_minute == Some(0) {
            return Err(format!(
                "{what}: chars_per_minute is 0; it must be at least 1"
            ));
        }
        Ok(())
    }
}

/// The keys of a key file, as digests, with their limits.
#[derive(Debug, Clone, Default)]
pub struct ApiKeys {
    /// SHA-256 of the key -> (its line in the file, its limits).
    keys: HashMap<[u8; 32], (usize, Limits)>,
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

impl ApiKeys {
    /// Reads a key file (see the module's documentation); an error names the file and line.
    pub fn load(path: &Path) -> Result<Self, ServeError> {
        let text = std::fs::read_to_string(path).map_err(|source| ServeError::File {
            path: path.to_path_buf(),
            reason: source.to_string(),
        })?;
        Self::parse(&text).map_err(|reason| ServeError::File {
            path: path.to_path_buf(),
            reason,
        })
    }

    /// Parses the text of a key file; an error names the line (never the key).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut keys = HashMap::new();
        for (index, line) in text.lines().enumerate() {
            let number = index + 1;
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut fields = line.split_whitespace();
            let Some(key) = fields.next() else { continue };
            let mut limits = Limits::default();
            for field in fields {
                let (name, value) = field.split_once('=').ok_or_else(|| {
                    format!("line {number}: `{field}` is not NAME=VALUE (requests_per_minute=N, chars_per_minute=N)")
                })?;
                let bad =
                    || format!("line {number}: {name} is {value:?}; it must be a whole number");
                match name {
                    "requests_per_minute" => {
                        limits.requests_per_minute = Some(value.parse().map_err(|_| bad())?)
                    }
                    "chars_per_minute" => {
                        limits.chars_per_minute = Some(value.parse().map_err(|_| bad())?)
                    }
                    other => {
                        return Err(format!(
                            "line {number}: unknown limit `{other}` (requests_per_minute, chars_per_minute)"
                        ));
                    }
                }
            }
            limits.validate(&format!("line {number}"))?;
            if keys.insert(digest(key), (number, limits)).is_some() {
                return Err(format!("line {number}: the same key as an earlier line"));
            }
        }
        if keys.is_empty() {
            return Err("no key in the file (one key per line; # starts a comment)".into());
        }
        Ok(Self { keys })
    }

    /// How many keys there are.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there is no key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// Who may translate: the keys (if any), whether clients without one are let in, and their
/// limits.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AccessConfig {
    /// The key file, if keys are required (or accepted, with `allow_anonymous`).
    pub api_keys: Option<PathBuf>,
    /// Whether requests without a key are served (always, when there is no key file).
    pub allow_anonymous: bool,
    /// The limits of each anonymous client (by IP address).
    pub anonymous_limits: Limits,
}

/// A client, as the limits count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Client {
    /// The key on line N of the key file.
    Key(usize),
    /// A client without a key, by address.
    Anonymous(IpAddr),
}

/// A token bucket: `capacity` tokens, refilled at `capacity` per minute.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    capacity: f64,
    updated: Instant,
}

impl Bucket {
    fn new(capacity: f64, now: Instant) -> Self {
        Self {
            tokens: capacity,
            capacity,
            updated: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.capacity / 60.0).min(self.capacity);
        self.updated = now;
    }

    /// Seconds until `cost` tokens are there (0: now).
    fn wait_for(&self, cost: f64) -> f64 {
        if self.tokens >= cost {
            0.0
        } else {
            (cost - self.tokens) * 60.0 / self.capacity
        }
    }

    fn is_full(&self) -> bool {
        self.tokens >= self.capacity
    }
}

/// One client's buckets.
#[derive(Debug, Clone, Copy)]
struct Usage {
    requests: Option<Bucket>,
    chars: Option<Bucket>,
}

/// The access rules of a running server and what each client has used.
#[derive(Debug)]
pub struct Access {
    keys: Option<ApiKeys>,
    allow_anonymous: bool,
    anonymous_limits: Limits,
    usage: Mutex<HashMap<Client, Usage>>,
}

impl Access {
    /// The rules `config` describes, its key file read.
    pub fn new(config: &AccessConfig) -> Result<Self, ServeError> {
        let keys = config.api_keys.as_deref().map(ApiKeys::load).transpose()?;
        Ok(Self::with_keys(keys, config))
    }

    /// The rules of `config` with `keys` already read.
    pub fn with_keys(keys: Option<ApiKeys>, config: &AccessConfig) -> Self {
        Self {
            allow_anonymous: keys.is_none() || config.allow_anonymous,
            keys,
            anonymous_limits: config.anonymous_limits,
            usage: Mutex::new(HashMap::new()),
        }
    }

    /// Whether a request needs a key.
    pub fn keys_required(&self) -> bool {
        !self.allow_anonymous
    }

    /// Lets a request of `chars` characters in, from a client with `key` (or none) at
    /// `address`, counting it against the client's limits; or says why not (401, 403, 413, 429
    /// with the seconds to wait).
    pub fn admit(&self, key: Option<&str>, address: IpAddr, chars: usize) -> Result<(), ApiError> {
        let (client, limits) = match (key.filter(|k| !k.is_empty()), &self.keys) {
            (Some(key), Some(keys)) => match keys.keys.get(&digest(key)) {
                Some(&(line, limits)) => (Client::Key(line), limits),
                None => {
                    return Err(ApiError::Forbidden(
                        "the API key is not valid on this server".into(),
                    ));
                }
            },
            // A key sent to a server without keys is ignored, as LibreTranslate does.
            (Some(_), None) | (None, _) => {
                if !self.allow_anonymous {
                    return Err(ApiError::Unauthorized(
                        "this server requires an API key (`api_key` in the request, or `Authorization: Bearer KEY`)".into(),
                    ));
                }
                (Client::Anonymous(address), self.anonymous_limits)
            }
        };
        if limits == Limits::default() {
            return Ok(());
        }
        let chars = chars as f64;
        if let Some(limit) = limits.chars_per_minute
            && chars > limit as f64
        {
            return Err(ApiError::TooLarge(format!(
                "the request has {chars} characters, over this client's limit of {limit} per minute"
            )));
        }
        let now = Instant::now();
        let mut usage = self
            .usage
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if usage.len() >= MAX_ANONYMOUS_CLIENTS {
            for bucket in usage.values_mut() {
                for b in [&mut bucket.requests, &mut bucket.chars]
                    .into_iter()
                    .flatten()
                {
                    b.refill(now);
                }
            }
            usage.retain(|client, u| {
                matches!(client, Client::Key(_))
                    || ![u.requests, u.chars].iter().flatten().all(Bucket::is_full)
            });
        }
        let entry = usage.entry(client).or_insert_with(|| Usage {
            requests: limits
                .requests_per_minute
                .map(|n| Bucket::new(f64::from(n), now)),
            chars: limits.chars_per_minute.map(|n| Bucket::new(n as f64, now)),
        });
        let mut wait: f64 = 0.0;
        if let Some(bucket) = &mut entry.requests {
            bucket.refill(now);
            wait = wait.max(bucket.wait_for(1.0));
        }
        if let Some(bucket) = &mut entry.chars {
            bucket.refill(now);
            wait = wait.max(bucket.wait_for(chars));
        }
        if wait > 0.0 {
            let what = match client {
                Client::Key(_) => "this API key",
                Client::Anonymous(_) => "this address",
            };
            let retry_after = Duration::from_secs_f64(wait).as_secs() + 1;
            return Err(ApiError::RateLimited {
                message: format!(
                    "{what} is over its limit ({}); try again in {retry_after} s",
                    describe(limits)
                ),
                retry_after,
            });
        }
        if let Some(bucket) = &mut entry.requests {
            bucket.tokens -= 1.0;
        }
        if let Some(bucket) = &mut entry.chars {
            bucket.tokens -= chars;
        }
        Ok(())
    }
}

fn describe(limits: Limits) -> String {
    let mut parts = Vec::new();
    if let Some(n) = limits.requests_per_minute {
        parts.push(format!("{n} requests per minute"));
    }
    if let Some(n) = limits.chars_per_minute {
        parts.push(format!("{n} characters per minute"));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local() -> IpAddr {
        IpAddr::from([127, 0, 0, 1])
    }

    #[test]
    fn a_key_file_is_read_with_its_limits_and_bad_lines_are_named() {
        let keys = ApiKeys::parse(
            "# team keys\n\nalpha\nbeta requests_per_minute=2 chars_per_minute=100\n",
        )
        .unwrap();
        assert_eq!(keys.len(), 2);
        assert_eq!(keys.keys[&digest("beta")].1.requests_per_minute, Some(2));
        for (text, said) in [
            ("alpha\nbeta rpm=2\n", "line 2: unknown limit `rpm`"),
            (
                "alpha\nbeta requests_per_minute=x\n",
                "line 2: requests_per_minute is \"x\"",
            ),
            (
                "alpha\nbeta chars_per_minute\n",
                "line 2: `chars_per_minute` is not NAME=VALUE",
            ),
            ("alpha\nalpha\n", "line 2: the same key"),
            (
                "a requests_per_minute=0\n",
                "line 1: requests_per_minute is 0",
            ),
            ("# nothing\n", "no key in the file"),
        ] {
            let error = ApiKeys::parse(text).unwrap_err();
            assert!(error.starts_with(said), "{error}");
            assert!(
                !error.contains("alpha") && !error.contains("beta"),
                "{error}"
            );
        }
    }

    #[test]
    fn keys_are_required_checked_and_limited() {
        let keys = ApiKeys::parse("good\nsmall requests_per_minute=2\n").unwrap();
        let access = Access::with_keys(Some(keys), &AccessConfig::default());
        assert!(access.keys_required());
        assert!(matches!(
            access.admit(None, local(), 1),
            Err(ApiError::Unauthorized(_))
        ));
        assert!(matches!(
            access.admit(Some(""), local(), 1),
            Err(ApiError::Unauthorized(_))
        ));
        assert!(matches!(
            access.admit(Some("bad"), local(), 1),
            Err(ApiError::Forbidden(_))
        ));
        for _ in 0..100 {
            access.admit(Some("good"), local(), 1000).unwrap();
        }
        access.admit(Some("small"), local(), 1).unwrap();
        access.admit(Some("small"), local(), 1).unwrap();
        match access.admit(Some("small"), local(), 1) {
            Err(ApiError::RateLimited {
                retry_after,
                message,
            }) => {
                // Two a minute: the next one in about 30 s.
                assert!((29..=31).contains(&retry_after), "{retry_after}");
                assert!(!message.contains("small"), "{message}");
            }
            other => panic!("expected 429, got {other:?}"),
        }
    }

    #[test]
    fn anonymous_clients_are_limited_by_address_and_characters() {
        let config = AccessConfig {
            api_keys: None,
            allow_anonymous: true,
            anonymous_limits: Limits {
                requests_per_minute: None,
                chars_per_minute: Some(100),
            },
        };
        let access = Access::with_keys(None, &config);
        assert!(!access.keys_required());
        access.admit(None, local(), 60).unwrap();
        assert!(matches!(
            access.admit(None, local(), 60),
            Err(ApiError::RateLimited { .. })
        ));
        // Another address has its own budget; more than a minute's worth at once is 413.
        let other = IpAddr::from([127, 0, 0, 2]);
        access.admit(None, other, 60).unwrap();
        assert!(matches!(
            access.admit(None, other, 101),
            Err(ApiError::TooLarge(_))
        ));
    }

    #[test]
    fn a_bucket_refills_over_the_minute() {
        let start = Instant::now();
        let mut bucket = Bucket::new(60.0, start);
        bucket.tokens = 0.0;
        bucket.refill(start + Duration::from_secs(30));
        assert!((bucket.tokens - 30.0).abs() < 1e-9);
        assert!((bucket.wait_for(40.0) - 10.0).abs() < 1e-9);
        bucket.refill(start + Duration::from_secs(600));
        assert!(bucket.is_full());
    }
}
