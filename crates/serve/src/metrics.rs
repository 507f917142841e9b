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

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} histogram");
        for (bound, count) in self.bounds.iter().zip(&self.counts) {
            let _ = writeln!(
                out,
                "{name}_bucket{{le=\"{bound}\"}} {}",
                count.load(Ordering::Relaxed)
            );
        }
        let total = self.count.load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {total}");
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_sum {sum}");
        let _ = writeln!(out, "{name}_count {total}");
    }
}

/// All of the server's counters; shared by the handlers and the decoding worker.
#[derive(Debug)]
pub struct Metrics {
    /// `(route, status) -> count`, in first-seen order (few distinct pairs).
    requests: Mutex<Vec<((String, u16), u64)>>,
    latency: Histogram,
    batch_sentences: Histogram,
    sentences: AtomicU64,
    source_tokens: AtomicU64,
    target_tokens: AtomicU64,
    decode_micros: AtomicU64,
    queued: AtomicU64,
    decoding: AtomicU64,
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            requests: Mutex::new(Vec::new()),
            latency: Histogram::new(&LATENCY_BUCKETS),
            batch_sentences: Histogram::new(&BATCH_BUCKETS),
            sentences: AtomicU64::new(0),
            source_tokens: AtomicU64::new(0),
            target_tokens: AtomicU64::new(0),
            decode_micros: AtomicU64::new(0),
            queued: AtomicU64::new(0),
            decoding: AtomicU64::new(0),
        }
    }
}

impl Metrics {
    /// Counts one answered request of `route` with `status`, which took `latency`.
    pub fn record_request(&self, route: &str, status: u16, latency: Duration) {
        self.latency.observe(latency.as_secs_f64());
        let mut requests = self
            .requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match requests
            .iter_mut()
            .find(|((r, s), _)| r == route && *s == status)
        {
            Some((_, count)) => *count += 1,
            None => requests.push(((route.to_string(), status), 1)),
        }
    }

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

    /// Sentences in the batch being decoded now (0 when the worker is idle).
    pub fn set_decoding(&self, sentences: usize) {
        self.decoding.store(sentences as u64, Ordering::Relaxed);
    }

    /// Sentences translated so far.
    pub fn sentences(&self) -> u64 {
        self.sentences.load(Ordering::Relaxed)
    }

    /// The Prometheus text exposition of every counter.
    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str(
            "# HELP rosetta_requests_total HTTP requests answered, by route and status.\n",
        );
        out.push_str("# TYPE rosetta_requests_total counter\n");
        {
            let requests = self
                .requests
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for ((route, status), count) in requests.iter() {
                let _ = writeln!(
                    out,
                    "rosetta_requests_total{{route=\"{route}\",status=\"{status}\"}} {count}"
                );
            }
        }
        self.latency.render(
            &mut out,
            "rosetta_request_duration_seconds",
            "Time from request to response.",
        );
        self.batch_sentences.render(
            &mut out,
            "rosetta_batch_sentences",
            "Sentences decoded together in one batch.",
        );
        for (name, help, value) in [
            (
                "rosetta_sentences_total",
                "Sentences translated.",
                &self.sentences,
            ),
            (
                "rosetta_source_tokens_total",
                "Source subwords read (EOS included).",
                &self.source_tokens,
            ),
            (
                "rosetta_target_tokens_total",
                "Target subwords produced (EOS included).",
                &self.target_tokens,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} counter");
            let _ = writeln!(out, "{name} {}", value.load(Ordering::Relaxed));
        }
        out.push_str(
            "# HELP rosetta_decode_seconds_total Time the decoding worker spent decoding.\n",
        );
        out.push_str("# TYPE rosetta_decode_seconds_total counter\n");
        let _ = writeln!(
            out,
            "rosetta_decode_seconds_total {}",
            self.decode_micros.load(Ordering::Relaxed) as f64 / 1e6
        );
        out.push_str(
            "# HELP rosetta_decoding_sentences Sentences in the batch being decoded now.\n",
        );
        out.push_str("# TYPE rosetta_decoding_sentences gauge\n");
        let _ = writeln!(
            out,
            "rosetta_decoding_sentences {}",
            self.decoding.load(Ordering::Relaxed)
        );
        out.push_str("# HELP rosetta_queued_requests Requests waiting for the decoding worker.\n");
        out.push_str("# TYPE rosetta_queued_requests gauge\n");
        let _ = writeln!(
            out,
            "rosetta_queued_requests {}",
            self.queued.load(Ordering::Relaxed)
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_cumulative_and_counters_render() {
        let metrics = Metrics::default();
        metrics.record_request("/translate", 200, Duration::from_millis(20));
        metrics.record_request("/translate", 200, Duration::from_millis(300));
        metrics.record_request("/translate", 400, Duration::from_millis(1));
        metrics.record_batch(3, 30, 40, Duration::from_millis(250));
        let text = metrics.render();
        assert!(text.contains("rosetta_requests_total{route=\"/translate\",status=\"200\"} 2"));
        assert!(text.contains("rosetta_requests_total{route=\"/translate\",status=\"400\"} 1"));
        // 1 ms and 20 ms are under 25 ms, 300 ms is not; all three are under 0.5 s.
        assert!(text.contains("rosetta_request_duration_seconds_bucket{le=\"0.025\"} 2"));
        assert!(text.contains("rosetta_request_duration_seconds_bucket{le=\"0.5\"} 3"));
        assert!(text.contains("rosetta_request_duration_seconds_count 3"));
        assert!(text.contains("rosetta_request_duration_seconds_sum 0.321"));
        assert!(text.contains("rosetta_batch_sentences_bucket{le=\"2\"} 0"));
        assert!(text.contains("rosetta_batch_sentences_bucket{le=\"4\"} 1"));
        assert!(text.contains("rosetta_sentences_total 3"));
        assert!(text.contains("rosetta_target_tokens_total 40"));
        assert!(text.contains("rosetta_decode_seconds_total 0.25"));
    }
}
