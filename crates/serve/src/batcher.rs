//! Dynamic batching: requests are queued, and one decoding worker per model gathers the
//! sentences of every request waiting into batches by a token budget and a maximum wait, so
//! that many small concurrent requests are decoded together, as offline batch translation is.
//!
//! The worker is a plain thread (decoding is CPU- or GPU-bound work that must not block the
//! async runtime); handlers talk to it through a bounded queue and get their answer on a
//! one-shot channel. A batch that fails, or panics, fails only the requests in it: the worker
//! goes on with the next batch.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::time::{Duration, Instant};

use rosetta_infer::{AttentionMap, TranslateOptions, Translation, Translator};
use tokio::sync::oneshot;

use crate::error::ApiError;

/// The seconds a client refused for a full queue is told to wait (`Retry-After`): about how
/// long a full batch takes to decode.
pub const RETRY_AFTER_SECONDS: u64 = 1;
use crate::metrics::ModelMetrics;

/// What one request asks of the worker.
#[derive(Debug)]
pub struct Job {
    /// The sentences, in order.
    pub sentences: Vec<String>,
    /// Hypotheses wanted per sentence (at most the server's beam size).
    pub nbest: usize,
    /// Whether to return the cross-attention of the first sentence's best translation.
    pub attention: bool,
    /// Whether to return each sentence's word alignment (for `format: "html"`).
    pub align: bool,
    /// The target language of a multilingual model ([`Translator::translate_lines_into`]);
    /// `None` for a bilingual one.
    pub target: Option<String>,
    reply: oneshot::Sender<Result<JobOutput, ApiError>>,
    /// Source subwords of the job (EOS included), for the token budget.
    tokens: usize,
    arrived: Instant,
}

/// The worker's answer to one [`Job`].
#[derive(Debug, Clone)]
pub struct JobOutput {
    /// One translation per sentence, in order, each with up to `nbest` hypotheses.
    pub translations: Vec<Translation>,
    /// The cross-attention of the first sentence, when asked for and the sentence is not empty.
    pub attention: Option<AttentionMap>,
    /// When asked for, for each sentence, the source word each word of its best translation
    /// aligns to ([`Translator::word_alignment`]); empty otherwise.
    pub alignments: Vec<Vec<usize>>,
}

/// How the worker forms batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchPolicy {
    /// Most source subwords (EOS included) in one batch.
    pub max_tokens: usize,
    /// Longest wait, from the moment the worker becomes free, for the clients it has just
    /// answered to send their next request (see [`next_batch`]).
    pub max_wait: Duration,
}

/// The handle that request handlers use to queue work for the decoding worker.
#[derive(Debug, Clone)]
pub struct Batcher {
    queue: SyncSender<Job>,
    translator: Arc<Translator>,
    options: Arc<TranslateOptions>,
    metrics: Arc<ModelMetrics>,
}

impl Batcher {
    /// Starts the decoding worker thread for `translator`, searching with `options` (whose
    /// `nbest` each request sets for itself; requests of one n-best size are decoded together),
    /// batching by `policy`, with at most
    /// `max_queue` requests waiting. The worker stops once every `Batcher` clone is dropped and
    /// the queue is empty.
    pub fn start(
        translator: Arc<Translator>,
        options: TranslateOptions,
        policy: BatchPolicy,
        max_queue: usize,
        metrics: Arc<ModelMetrics>,
    ) -> (Self, std::thread::JoinHandle<()>) {
        let (queue, jobs) = sync_channel(max_queue.max(1));
        let shared_options = Arc::new(options.clone());
        let worker = {
            let translator = Arc::clone(&translator);
            let metrics = Arc::clone(&metrics);
            std::thread::Builder::new()
                .name("rosetta-decoder".into())
                .spawn(move || run_worker(&translator, &options, policy, &jobs, &metrics))
                .unwrap_or_else(|e| panic!("cannot start the decoding thread: {e}"))
        };
        (
            Self {
                queue,
                translator,
                options: shared_options,
                metrics,
            },
            worker,
        )
    }

    /// The translator the worker decodes with.
    pub fn translator(&self) -> &Translator {
        &self.translator
    }

    /// The search every request gets (its `nbest`: the default number of hypotheses).
    pub fn options(&self) -> &TranslateOptions {
        &self.options
    }

    /// Queues `sentences` and waits for their translations. Refused with 429 when the queue
    /// is full or the worker has stopped.
    pub async fn translate(
        &self,
        sentences: Vec<String>,
        nbest: usize,
        attention: bool,
        align: bool,
        target: Option<String>,
    ) -> Result<JobOutput, ApiError> {
        // A multilingual model's sources start with the target language's tag.
        let tag = usize::from(target.is_some());
        let tokens = sentences
            .iter()
            .map(|s| source_tokens(&self.translator, s) + tag)
            .sum();
        let (reply, answer) = oneshot::channel();
        let job = Job {
            sentences,
            nbest,
            attention,
            align,
            target,
            reply,
            tokens,
            arrived: Instant::now(),
        };
        // Counted before it is sent, so that the worker's decrement never comes first.
        self.metrics.queue_change(1);
        match self.queue.try_send(job) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.metrics.queue_change(-1);
                return Err(ApiError::Busy {
                    retry_after: RETRY_AFTER_SECONDS,
                });
            }
            Err(TrySendError::Disconnected(_)) => {
                self.metrics.queue_change(-1);
                return Err(ApiError::Unavailable("the server is shutting down".into()));
            }
        }
        answer.await.unwrap_or_else(|_| {
            Err(ApiError::Internal(
                "the decoding worker stopped before answering".into(),
            ))
        })
    }
}

/// Source subwords of a sentence with its EOS (a sentence the tokenizer cannot encode counts
/// by its characters; translating it will report the error).
fn source_tokens(translator: &Translator, sentence: &str) -> usize {
    match translator.tokenizers.source.encode(sentence) {
        Ok(ids) => ids.len() + 1,
        Err(_) => sentence.chars().count() + 1,
    }
}

/// Takes the next batch of jobs, within the token budget, when the worker is free.
///
/// The worker first takes every job already queued (those that arrived while it decoded the
/// last batch) without waiting. It then waits, at most `max_wait` from the moment it became
/// free, only for the clients it has just answered: under a steady load they send their next
/// request at once, and folding them into this batch keeps batches full instead of splitting
/// the clients into two alternating halves. `answered` is the number of jobs of the previous
/// batch. A lone request to an idle server (nothing queued, nobody just answered but itself) is
/// decoded at once. A job that would overflow the budget is kept in `carry` for the next batch.
/// `None` when the queue is closed and empty.
pub fn next_batch(
    jobs: &Receiver<Job>,
    carry: &mut Option<Job>,
    policy: BatchPolicy,
    answered: usize,
    free_at: Instant,
) -> Option<Vec<Job>> {
    let deadline = free_at + policy.max_wait;
    let first = match carry.take() {
        Some(job) => job,
        None => jobs.recv().ok()?,
    };
    // Jobs that arrived while the worker was busy; later ones are the answered clients back.
    let waited = |job: &Job| usize::from(job.arrived < free_at);
    let mut queued = waited(&first);
    let mut tokens = first.tokens;
    let mut batch = vec![first];
    while tokens < policy.max_tokens {
        let next = match jobs.try_recv() {
            Ok(job) => job,
            Err(_) => {
                let now = Instant::now();
                if batch.len() >= queued + answered.max(1) || now >= deadline {
                    break;
                }
                match jobs.recv_timeout(deadline - now) {
                    Ok(job) => job,
                    Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
                }
            }
        };
        if tokens + next.tokens > policy.max_tokens {
            *carry = Some(next);
            break;
        }
        queued += waited(&next);
        tokens += next.tokens;
        batch.push(next);
    }
    Some(batch)
}

fn run_worker(
    translator: &Translator,
    options: &TranslateOptions,
    policy: BatchPolicy,
    jobs: &Receiver<Job>,
    metrics: &ModelMetrics,
) {
    let mut carry = None;
    let mut answered = 0;
    let mut free_at = Instant::now();
    while let Some(mut batch) = next_batch(jobs, &mut carry, policy, answered, free_at) {
        answered = batch.len();
        metrics.queue_change(-(batch.len() as i64));
        // A client that hung up, or whose deadline passed, while its request waited costs no
        // decoding.
        let waiting = batch.len();
        batch.retain(|job| !job.reply.is_closed());
        metrics.record_abandoned(waiting - batch.len());
        if batch.is_empty() {
            free_at = Instant::now();
            continue;
        }
        let sentences: usize = batch.iter().map(|job| job.sentences.len()).sum();
        metrics.set_decoding(sentences);
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            decode_batch(translator, options, &batch, metrics)
        }));
        let outputs = match outcome {
            Ok(Ok(outputs)) => outputs.into_iter().map(Ok).collect(),
            Ok(Err(error)) => vec![Err(error); batch.len()],
            Err(_) => vec![
                Err(ApiError::Internal(
                    "decoding failed unexpectedly for this batch (the server goes on)".into(),
                ));
                batch.len()
            ],
        };
        metrics.set_decoding(0);
        free_at = Instant::now();
        for (job, output) in batch.into_iter().zip(outputs) {
            // A client that went away no longer waits for its answer; nothing to do.
            let _ = job.reply.send(output);
        }
    }
}

/// Decodes the sentences of every job in `batch` together and splits the result by job.
fn decode_batch(
    translator: &Translator,
    options: &TranslateOptions,
    batch: &[Job],
    metrics: &ModelMetrics,
) -> Result<Vec<JobOutput>, ApiError> {
    let started = Instant::now();
    let internal = ApiError::from;
    // Jobs asking for different n-best sizes are decoded apart: beam search's exact stop waits
    // for the n_best-th hypothesis, so a client's best translation must not depend on what its
    // batch-mates asked for. So are jobs into different target languages (a multilingual
    // model's). Jobs of one size and language go through the model together.
    let mut groups: BTreeMap<(usize, Option<&str>), Vec<usize>> = BTreeMap::new();
    for (index, job) in batch.iter().enumerate() {
        groups
            .entry((job.nbest.clamp(1, options.beam), job.target.as_deref()))
            .or_default()
            .push(index);
    }
    let mut per_job: Vec<Vec<Translation>> = (0..batch.len()).map(|_| Vec::new()).collect();
    let mut n_sentences = 0;
    for ((nbest, target), jobs) in groups {
        let sentences: Vec<String> = jobs
            .iter()
            .flat_map(|&index| batch[index].sentences.iter().cloned())
            .collect();
        n_sentences += sentences.len();
        let options = TranslateOptions {
            nbest,
            batch_size: sentences.len().max(1),
            ..options.clone()
        };
        let mut translations = translator
            .translate_lines_into(&sentences, &options, target)
            .map_err(internal)?
            .into_iter();
        for index in jobs {
            per_job[index] = translations
                .by_ref()
                .take(batch[index].sentences.len())
                .collect();
        }
    }
    let source: usize = batch.iter().map(|job| job.tokens).sum();
    let mut target = 0;
    let mut outputs = Vec::with_capacity(batch.len());
    for (job, mut mine) in batch.iter().zip(per_job) {
        for t in &mut mine {
            target += t.target_tokens.len() + 1;
            t.n_best.truncate(job.nbest.max(1));
        }
        let attention = match mine.first() {
            Some(first) if job.attention && !first.source_tokens.is_empty() => Some(
                translator
                    .cross_attention(first, None, None)
                    .map_err(internal)?,
            ),
            _ => None,
        };
        let alignments = if job.align {
            job.sentences
                .iter()
                .zip(&mine)
                .map(|(source, translation)| translator.word_alignment(source, translation))
                .collect::<Result<Vec<_>, _>>()
                .map_err(internal)?
        } else {
            Vec::new()
        };
        outputs.push(JobOutput {
            translations: mine,
            attention,
            alignments,
        });
    }
    metrics.record_batch(n_sentences, source, target, started.elapsed());
    Ok(outputs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(tokens: usize, arrived: Instant) -> Job {
        let (reply, _) = oneshot::channel();
        Job {
            sentences: vec!["x".into()],
            nbest: 1,
            target: None,
            attention: false,
            align: false,
            reply,
            tokens,
            arrived,
        }
    }

    fn policy(max_tokens: usize, wait_ms: u64) -> BatchPolicy {
        BatchPolicy {
            max_tokens,
            max_wait: Duration::from_millis(wait_ms),
        }
    }

    #[test]
    fn queued_jobs_are_gathered_up_to_the_token_budget() {
        let (queue, jobs) = sync_channel(16);
        let now = Instant::now();
        for tokens in [4, 4, 4, 4, 4] {
            queue.send(job(tokens, now)).unwrap();
        }
        let mut carry = None;
        // 4 + 4 + 4 = 12 fits a budget of 13; the fourth job is carried to the next batch.
        let first = next_batch(&jobs, &mut carry, policy(13, 0), 0, Instant::now()).unwrap();
        assert_eq!(first.len(), 3);
        assert_eq!(carry.as_ref().map(|j| j.tokens), Some(4));
        let second = next_batch(&jobs, &mut carry, policy(13, 0), 3, Instant::now()).unwrap();
        assert_eq!(second.len(), 2);
        assert!(carry.is_none());
    }

    #[test]
    fn a_job_over_the_budget_gets_a_batch_of_its_own() {
        let (queue, jobs) = sync_channel(4);
        let now = Instant::now();
        queue.send(job(100, now)).unwrap();
        queue.send(job(1, now)).unwrap();
        let mut carry = None;
        assert_eq!(
            next_batch(&jobs, &mut carry, policy(10, 0), 0, Instant::now())
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            next_batch(&jobs, &mut carry, policy(10, 0), 1, Instant::now())
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn the_worker_waits_for_the_clients_it_just_answered_and_no_longer() {
        let (queue, jobs) = sync_channel(8);
        // Two jobs queued while the worker was busy; the three it just answered come back
        // 20 ms later and join the batch (a 2-second window, never reached).
        queue.send(job(1, Instant::now())).unwrap();
        queue.send(job(1, Instant::now())).unwrap();
        let sender = queue.clone();
        let returning = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            for _ in 0..3 {
                sender.send(job(1, Instant::now())).unwrap();
            }
        });
        let mut carry = None;
        let started = Instant::now();
        let batch = next_batch(&jobs, &mut carry, policy(100, 2000), 3, started).unwrap();
        assert_eq!(batch.len(), 5);
        assert!(started.elapsed() < Duration::from_millis(1500));
        returning.join().unwrap();

        // A lone request after a lone answer is decoded at once, whatever the window.
        let started = Instant::now();
        queue.send(job(1, Instant::now())).unwrap();
        assert_eq!(
            next_batch(&jobs, &mut carry, policy(100, 2000), 1, started)
                .unwrap()
                .len(),
            1
        );
        assert!(started.elapsed() < Duration::from_millis(1500));

        // Clients that do not come back cost at most the window.
        let started = Instant::now();
        queue.send(job(1, Instant::now())).unwrap();
        assert_eq!(
            next_batch(&jobs, &mut carry, policy(100, 30), 4, started)
                .unwrap()
                .len(),
            1
        );
        assert!(started.elapsed() >= Duration::from_millis(30));
        drop(queue);
        assert!(next_batch(&jobs, &mut carry, policy(100, 0), 0, Instant::now()).is_none());
    }
}
