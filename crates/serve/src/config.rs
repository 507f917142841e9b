//! The settings of a server: where it listens, how it searches, how it batches, and the limits
//! that keep one client from taking it down.

use std::time::Duration;

use rosetta_infer::TranslateOptions;

use crate::error::ServeError;

/// The longest queue `--max-queue` may ask for.
pub const MAX_QUEUE_LIMIT: usize = 1_000_000;

/// Everything `rosetta serve` can be told.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeConfig {
    /// The address to listen on (loopback by default).
    pub host: String,
    /// The port (0: any free port, printed at start).
    pub port: u16,
    /// The search every request gets (beam, length penalty, length limits); its `nbest` is the
    /// number of hypotheses the OpenNMT-style endpoint returns per sentence.
    pub options: TranslateOptions,
    /// The most source subwords (EOS included) decoded in one batch; a single sentence longer
    /// than this still gets a batch of its own.
    pub max_batch_tokens: usize,
    /// How long the decoding worker, once free, waits for the clients it has just answered
    /// to send their next request before it decodes what is queued (a lone request to an idle
    /// server is never delayed).
    pub max_wait: Duration,
    /// The largest request body accepted, in bytes (413 above).
    pub max_request_bytes: usize,
    /// The most sentences one request may hold (413 above).
    pub max_sentences: usize,
    /// The longest sentence accepted, in characters (413 above). Sentences within this limit
    /// but longer than the model's positions are cut and reported, as `rosetta translate` does.
    pub max_sentence_chars: usize,
    /// Requests waiting for the decoding worker before new ones are refused with 429.
    pub max_queue: usize,
    /// Language code of the source side (as LibreTranslate's `source`).
    pub source_lang: String,
    /// Language code of the target side (as LibreTranslate's `target`).
    pub target_lang: String,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            host: "127.0.0.1".into(),
            port: 8080,
            options: TranslateOptions::default(),
            max_batch_tokens: 4096,
            max_wait: Duration::from_millis(5),
            max_request_bytes: 1 << 20,
            max_sentences: 128,
            max_sentence_chars: 2048,
            max_queue: 1024,
            source_lang: "source".into(),
            target_lang: "target".into(),
        }
    }
}

impl ServeConfig {
    /// Checks the settings, naming the first impossible one.
    pub fn validate(&self) -> Result<(), ServeError> {
        self.options.validate()?;
        let positive = [
            ("max-batch-tokens", self.max_batch_tokens),
            ("max-request-bytes", self.max_request_bytes),
            ("max-sentences", self.max_sentences),
            ("max-sentence-chars", self.max_sentence_chars),
            ("max-queue", self.max_queue),
        ];
        for (option, value) in positive {
            if value == 0 {
                return Err(ServeError::InvalidOption {
                    option,
                    reason: "is 0; it must be at least 1".into(),
                });
            }
        }
        if self.max_queue > MAX_QUEUE_LIMIT {
            return Err(ServeError::InvalidOption {
                option: "max-queue",
                reason: format!(
                    "is {}; at most {MAX_QUEUE_LIMIT} requests may wait (the queue is allocated at start)",
                    self.max_queue
                ),
            });
        }
        for (option, code) in [
            ("source-lang", &self.source_lang),
            ("target-lang", &self.target_lang),
        ] {
            if code.trim().is_empty() {
                return Err(ServeError::InvalidOption {
                    option,
                    reason: "is empty".into(),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_zero_limits_are_named() {
        assert!(ServeConfig::default().validate().is_ok());
        let config = ServeConfig {
            max_sentences: 0,
            ..ServeConfig::default()
        };
        let message = config.validate().unwrap_err().to_string();
        assert!(message.starts_with("option --max-sentences"), "{message}");
        let mut config = ServeConfig::default();
        config.options.beam = 0;
        let message = config.validate().unwrap_err().to_string();
        assert!(message.starts_with("option --beam"), "{message}");
    }
}
