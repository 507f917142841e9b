//! The server's counters, exposed at `GET /metrics` in Prometheus' text format: requests by
//! route and status, a latency histogram, batch sizes, sentences and tokens translated.

use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds (seconds) of the request-latency histogram's buckets.
pub const LATENCY_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];
/// Upper bounds (sentences) of the batch-size histogram's buckets.
pub const BATCH_BUCKETS: [f64; 9] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];

/// A cumulative histogram with fixed buckets.
#[derive(Debug)]
struct Histogram {
    bounds: &'static [f64],
    counts: Vec<AtomicU64>,
    /// The sum of observations, in micro-units (so that it can be an integer).
    sum_micros: AtomicU64,
    count: AtomicU64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Self {
        Self {
            bounds,
            counts: bounds.iter().map(|_| AtomicU64::new(0)).collect(),
            sum_micros: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    fn observe(&self, value: f64) {
        for (bound, count) in self.bounds.iter().zip(&self.counts) {
            if value <= *bound {
                count.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.sum_micros
            .fetch_add((value * 1e6).round() as u64, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// The histogram's lines; `labels` (`model="x",`, or empty) go before `le`.
    fn render_series(&self, out: &mut String, name: &str, labels: &str) {
        for (bound, count) in self.bounds.iter().zip(&self.counts) {
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}le=\"{bound}\"}} {}",
                count.load(Ordering::Relaxed)
            );
        }
        let total = self.count.load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{{labels}le=\"+Inf\"}} {total}");
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let bare = labels.trim_end_matches(',');
        let braces = if bare.is_empty() {
            String::new()
        } else {
            format!("{{{bare}}}")
        };
        let _ = writeln!(out, "{name}_sum{braces} {sum}");
        let _ = writeln!(out, "{name}_count{braces} {total}");
    }
}

/// The label value of a model id, escaped for Prometheus' text format.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// What a request is counted by: its route, its status and the model that answered it.
type RequestLabels = (String, u16, String);

/// The server's request counters; shared by the handlers. Each model's decoding counters are
/// its [`ModelMetrics`].
#[derive(Debug)]
pub struct Metrics {
    /// `(route, status, model) -> count`, in first-seen order (few distinct triples).
    requests: Mutex<Vec<(RequestLabels, u64)>>,
    latency: Histogram,
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            requests: Mutex::new(Vec::new()),
            latency: Histogram::new(&LATENCY_BUCKETS),
        }
    }
}

/// One model's decoding counters; shared by the handlers and the model's decoding worker.
#[derive(Debug)]
pub struct ModelMetrics {
    batch_sentences: Histogram,
    sentences: AtomicU64,
    source_tokens: AtomicU64,
    target_tokens: AtomicU64,
    decode_micros: AtomicU64,
    queued: AtomicU64,
    decoding: AtomicU64,
    abandoned: AtomicU64,
}

impl Default for ModelMetrics {
    fn default() -> Self {
        Self {
            batch_sentences: Histogram::new(&BATCH_BUCKETS),
            sentences: AtomicU64::new(0),
            source_tokens: AtomicU64::new(0),
            target_tokens: AtomicU64::new(0),
            decode_micros: AtomicU64::new(0),
            queued: AtomicU64::new(0),
            decoding: AtomicU64::new(0),
            abandoned: AtomicU64::new(0),
        }
    }
}

impl Metrics {
    /// Counts one answered request of `route` with `status` for the model `model` (empty when
    /// the request named none the server has), which took `latency`.
    pub fn record_request(&self, route: &str, status: u16, model: &str, latency: Duration) {
        self.latency.observe(latency.as_secs_f64());
        let mut requests = self
            .requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match requests
            .iter_mut()
            .find(|((r, s, m), _)| r == route && *s == status && m == model)
        {
            Some((_, count)) => *count += 1,
            None => requests.push(((route.to_string(), status, model.to_string()), 1)),
        }
    }

    /// The Prometheus text exposition of the server's counters and of each model's
    /// (`models`: id and counters), labelled `model="id"`.
    pub fn render(&self, models: &[(&str, &ModelMetrics)]) -> String {
        let mut out = String::new();
        out.push_str(
            "# HELP rosetta_requests_total HTTP requests answered, by route, status and model.\n",
        );
        out.push_str("# TYPE rosetta_requests_total counter\n");
        {
            let requests = self
                .requests
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for ((route, status, model), count) in requests.iter() {
                let _ = writeln!(
                    out,
                    "rosetta_requests_total{{route=\"{route}\",status=\"{status}\",model=\"{}\"}} {count}",
                    label(model)
                );
            }
        }
        out.push_str("# HELP rosetta_request_duration_seconds Time from request to response.\n");
        out.push_str("# TYPE rosetta_request_duration_seconds histogram\n");
        self.latency
            .render_series(&mut out, "rosetta_request_duration_seconds", "");
        out.push_str("# HELP rosetta_batch_sentences Sentences decoded together in one batch.\n");
        out.push_str("# TYPE rosetta_batch_sentences histogram\n");
        for (id, model) in models {
            let labels = format!("model=\"{}\",", label(id));
            model
                .batch_sentences
                .render_series(&mut out, "rosetta_batch_sentences", &labels);
        }
        let seconds = |micros: &AtomicU64| micros.load(Ordering::Relaxed) as f64 / 1e6;
        let count = |value: &AtomicU64| value.load(Ordering::Relaxed) as f64;
        type Series = (
            &'static str,
            &'static str,
            &'static str,
            fn(&ModelMetrics) -> &AtomicU64,
            bool,
        );
        let series: [Series; 7] = [
            (
                "rosetta_sentences_total",
                "counter",
                "Sentences translated.",
                |m| &m.sentences,
                false,
            ),
            (
                "rosetta_source_tokens_total",
                "counter",
                "Source subwords read (EOS included).",
                |m| &m.source_tokens,
                false,
            ),
            (
                "rosetta_target_tokens_total",
                "counter",
                "Target subwords produced (EOS included).",
                |m| &m.target_tokens,
                false,
            ),
            (
                "rosetta_decode_seconds_total",
                "counter",
                "Time the decoding worker spent decoding.",
                |m| &m.decode_micros,
                true,
            ),
            (
                "rosetta_abandoned_requests_total",
                "counter",
                "Requests dropped before decoding because their client left or timed out.",
                |m| &m.abandoned,
                false,
            ),
            (
                "rosetta_decoding_sentences",
                "gauge",
                "Sentences in the batch being decoded now.",
                |m| &m.decoding,
                false,
            ),
            (
                "rosetta_queued_requests",
                "gauge",
                "Requests waiting for the decoding worker.",
                |m| &m.queued,
                false,
            ),
        ];
        for (name, kind, help, field, micros) in series {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for (id, model) in models {
                let value = if micros {
                    seconds(field(model))
                } else {
                    count(field(model))
                };
                let _ = writeln!(out, "{name}{{model=\"{}\"}} {value}", label(id));
            }
        }
        out
    }
}

impl ModelMetrics {
    /// Counts one decoded batch of `sentences` sentences, `source_tokens` subwords in and
    /// `target_tokens` out, which kept the decoding worker busy for `busy`.
    pub fn record_batch(
        &self,
        sentences: usize,
        source_tokens: usize,
        target_tokens: usize,
        busy: Duration,
    ) {
        self.decode_micros
            .fetch_add(busy.as_micros() as u64, Ordering::Relaxed);
        self.batch_sentences.observe(sentences as f64);
        self.sentences
            .fetch_add(sentences as u64, Ordering::Relaxed);
        self.source_tokens
            .fetch_add(source_tokens as u64, Ordering::Relaxed);
        self.target_tokens
            .fetch_add(target_tokens as u64, Ordering::Relaxed);
    }

    /// One more (`+1`) or one fewer (`-1`) request waiting for the decoding worker.
    pub fn queue_change(&self, delta: i64) {
        if delta >= 0 {
            self.queued.fetch_add(delta as u64, Ordering::Relaxed);
        } else {
            self.queued
                .fetch_sub(delta.unsigned_abs(), Ordering::Relaxed);
        }
    }

    /// Counts `n` requests dropped before decoding: their clients had gone.
    pub fn record_abandoned(&self, n: usize) {
        self.abandoned.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Sentences in the batch being decoded now (0 when the worker is idle).
    pub fn set_decoding(&self, sentences: usize) {
        self.decoding.store(sentences as u64, Ordering::Relaxed);
    }

    /// Sentences translated so far.
    pub fn sentences(&self) -> u64 {
        self.sentences.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_cumulative_and_counters_render() {
        let metrics = Metrics::default();
        let model = ModelMetrics::default();
        metrics.record_request("/translate", 200, "en-fr", Duration::from_millis(20));
        metrics.record_request("/translate", 200, "en-fr", Duration::from_millis(300));
        metrics.record_request("/translate", 400, "", Duration::from_millis(1));
        model.record_batch(3, 30, 40, Duration::from_millis(250));
        let other = ModelMetrics::default();
        let text = metrics.render(&[("en-fr", &model), ("a\"b", &other)]);
        assert!(text.contains(
            "rosetta_requests_total{route=\"/translate\",status=\"200\",model=\"en-fr\"} 2"
        ));
        assert!(
            text.contains(
                "rosetta_requests_total{route=\"/translate\",status=\"400\",model=\"\"} 1"
            )
        );
        // 1 ms and 20 ms are under 25 ms, 300 ms is not; all three are under 0.5 s.
        assert!(text.contains("rosetta_request_duration_seconds_bucket{le=\"0.025\"} 2"));
        assert!(text.contains("rosetta_request_duration_seconds_bucket{le=\"0.5\"} 3"));
        assert!(text.contains("rosetta_request_duration_seconds_count 3"));
        assert!(text.contains("rosetta_request_duration_seconds_sum 0.321"));
        assert!(text.contains("rosetta_batch_sentences_bucket{model=\"en-fr\",le=\"2\"} 0"));
        assert!(text.contains("rosetta_batch_sentences_bucket{model=\"en-fr\",le=\"4\"} 1"));
        assert!(text.contains("rosetta_batch_sentences_count{model=\"en-fr\"} 1"));
        assert!(text.contains("rosetta_sentences_total{model=\"en-fr\"} 3"));
        assert!(text.contains("rosetta_sentences_total{model=\"a\\\"b\"} 0"));
        assert!(text.contains("rosetta_target_tokens_total{model=\"en-fr\"} 40"));
        assert!(text.contains("rosetta_decode_seconds_total{model=\"en-fr\"} 0.25"));
    }
}
