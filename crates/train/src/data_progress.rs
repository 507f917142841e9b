//! Progress bars for data preparation (tokenizer training, encoding): bytes read with an
//! ETA, pairs per second, and one line per finished stage for the run log.

use std::sync::Mutex;
use std::time::Instant;

use indicatif::{HumanCount, ProgressBar, ProgressStyle};
use rosetta_data::Progress;

struct Stage {
    name: String,
    bar: ProgressBar,
    start: Instant,
    pairs: u64,
}

/// Draws a bar per preparation stage on standard error (when it is a terminal and bars are
/// asked for) and keeps a line per finished stage ([`PreparationBars::finished`]) for the
/// caller to print or log.
pub struct PreparationBars {
    draw: bool,
    stage: Mutex<Option<Stage>>,
    finished: Mutex<Vec<String>>,
}

impl PreparationBars {
    /// Bars drawn if `draw`; the finished-stage lines are kept either way.
    pub fn new(draw: bool) -> Self {
        Self {
            draw,
            stage: Mutex::new(None),
            finished: Mutex::new(Vec::new()),
        }
    }

    /// One line per finished stage: `encoding train: 1,000,000 pairs in 12.3 s (81,300 pairs/s)`.
    pub fn finished(&self) -> Vec<String> {
        self.finished.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl Progress for PreparationBars {
    fn begin(&self, stage: &str, total_bytes: u64) {
        let bar = if self.draw {
            ProgressBar::new(total_bytes)
        } else {
            ProgressBar::hidden()
        };
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix} [{bar:30}] {bytes}/{total_bytes} {msg} (ETA {eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.set_prefix(stage.to_string());
        if let Ok(mut slot) = self.stage.lock() {
            *slot = Some(Stage {
                name: stage.to_string(),
                bar,
                start: Instant::now(),
                pairs: 0,
            });
        }
    }

    fn update(&self, bytes: u64, pairs: u64) {
        if let Ok(mut slot) = self.stage.lock()
            && let Some(stage) = slot.as_mut()
        {
            stage.pairs = pairs;
            stage.bar.set_position(bytes);
            let seconds = stage.start.elapsed().as_secs_f64().max(1e-9);
            stage.bar.set_message(format!(
                "{} pairs, {} pairs/s",
                HumanCount(pairs),
                HumanCount((pairs as f64 / seconds) as u64)
            ));
        }
    }

    fn end(&self) {
        let Some(stage) = self.stage.lock().ok().and_then(|mut s| s.take()) else {
            return;
        };
        stage.bar.finish_and_clear();
        let seconds = stage.start.elapsed().as_secs_f64();
        let line = format!(
            "{}: {} pairs in {:.1} s ({} pairs/s)",
            stage.name,
            HumanCount(stage.pairs),
            seconds,
            HumanCount((stage.pairs as f64 / seconds.max(1e-9)) as u64)
        );
        if let Ok(mut lines) = self.finished.lock() {
            lines.push(line);
        }
    }
}
