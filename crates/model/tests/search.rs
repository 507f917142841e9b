//! Greedy and beam search, and the key/value cache they decode with: on a tiny model trained
//! here to reverse sequences, and on random models.

use rosetta_model::burn::module::Module;
use rosetta_model::burn::optim::{AdamConfig, GradientsParams};
use rosetta_model::burn::tensor::activation::log_softmax;
use rosetta_model::burn::tensor::{Device, Int, Tensor, TensorData};
use rosetta_model::{
    BeamStop, Hypothesis, LengthNorm, ModelError, NormPosition, SearchConfig, SearchSetting,
    SpecialTokens, Transformer, TransformerConfig, beam_search, beam_search_ensemble, greedy,
    greedy_ensemble, score_sequences,
};

const PAD: usize = 0;
const BOS: usize = 2;
const EOS: usize = 3;
/// Symbols of the toy task: ids 4..VOCAB.
const VOCAB: usize = 14;

/// Burn's random generator is global to the process: tests that seed it (model initialisation,
/// the toy training run) take turns, so that each sees the numbers its seed promises.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn search_config() -> SearchConfig {
    SearchConfig::new(SpecialTokens {
        pad: PAD as u32,
        unk: 1,
        bos: BOS as u32,
        eos: EOS as u32,
    })
}

/// A small deterministic generator (the test must not depend on the order other tests run in).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n as u64) as usize
    }

    fn sequence(&mut self, min: usize, max: usize) -> Vec<u32> {
        let len = min + self.below(max - min + 1);
        (0..len)
            .map(|_| (4 + self.below(VOCAB - 4)) as u32)
            .collect()
    }
}

/// Rows padded with PAD to the longest.
fn padded(rows: &[Vec<u32>], device: &Device) -> Tensor<2, Int> {
    let len = rows.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let mut flat = vec![PAD as i64; rows.len() * len];
    for (i, row) in rows.iter().enumerate() {
        for (t, &id) in row.iter().enumerate() {
            flat[i * len + t] = i64::from(id);
        }
    }
    Tensor::from_data(TensorData::new(flat, [rows.len(), len]), device)
}

/// A source row: the symbols then EOS.
fn with_eos(symbols: &[u32]) -> Vec<u32> {
    let mut row = symbols.to_vec();
    row.push(EOS as u32);
    row
}

fn tiny_config(vocab: usize) -> TransformerConfig {
    TransformerConfig::new(vocab, vocab)
        .with_d_model(32)
        .with_n_heads(4)
        .with_d_ff(64)
        .with_n_encoder_layers(2)
        .with_n_decoder_layers(2)
        .with_dropout(0.0)
        .with_attention_dropout(0.0)
        .with_max_positions(24)
        .with_norm_position(NormPosition::Pre)
}

/// Trains the tiny model to reverse sequences of 2..=6 symbols (Adam, masked cross-entropy with
/// label smoothing `smoothing`, which keeps every token's probability above `smoothing / vocab`
/// as in real training runs).
fn train_reverser(smoothing: f32) -> Transformer {
    let device = Device::flex().autodiff();
    device.seed(5);
    let mut model = tiny_config(VOCAB).init(&device).expect("valid");
    let mut optimizer = AdamConfig::new().init();
    let mut rng = Lcg(17);
    let mut last_loss = f32::INFINITY;
    for _ in 0..600 {
        let batch: Vec<Vec<u32>> = (0..32).map(|_| rng.sequence(2, 6)).collect();
        let sources: Vec<Vec<u32>> = batch.iter().map(|s| with_eos(s)).collect();
        let reversed: Vec<Vec<u32>> = batch
            .iter()
            .map(|s| s.iter().rev().copied().collect())
            .collect();
        let inputs: Vec<Vec<u32>> = reversed
            .iter()
            .map(|r| {
                std::iter::once(BOS as u32)
                    .chain(r.iter().copied())
                    .collect()
            })
            .collect();
        let outputs: Vec<Vec<u32>> = reversed.iter().map(|r| with_eos(r)).collect();
        let logits = model.forward(padded(&sources, &device), padded(&inputs, &device));
        let [b, len, _] = logits.dims();
        let targets = padded(&outputs, &device);
        let mask = targets.clone().not_equal_elem(PAD as i64).float();
        let log_p = log_softmax(logits, 2);
        let picked = log_p
            .clone()
            .gather(2, targets.reshape([b, len, 1]))
            .reshape([b, len]);
        let uniform = log_p.mean_dim(2).reshape([b, len]);
        let nll = (picked.clone() * mask.clone()).sum().neg() / mask.clone().sum();
        let smoothed = picked * (1.0 - smoothing) + uniform * smoothing;
        let loss = (smoothed * mask.clone()).sum().neg() / mask.sum();
        last_loss = nll.into_scalar::<f32>();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optimizer.step(3e-3, model, grads);
    }
    assert!(
        last_loss < 0.1 + smoothing,
        "the toy model did not learn: negative log-likelihood {last_loss}"
    );
    model.valid()
}

/// The 12 symbol sequences the trained reversers are checked on, and the source batch of them.
fn reversal_inputs(device: &Device) -> (Vec<Vec<u32>>, Tensor<2, Int>) {
    let mut rng = Lcg(99);
    let symbols: Vec<Vec<u32>> = (0..12).map(|_| rng.sequence(2, 6)).collect();
    let sources: Vec<Vec<u32>> = symbols.iter().map(|s| with_eos(s)).collect();
    let source = padded(&sources, device);
    (symbols, source)
}

fn tokens(hypotheses: &[Hypothesis]) -> Vec<Vec<u32>> {
    hypotheses.iter().map(|h| h.tokens.clone()).collect()
}

fn close(a: f32, b: f32, tolerance: f32) -> bool {
    (a - b).abs() <= tolerance
}

#[test]
fn trained_model_cached_decoding_equals_recomputation() {
    let _serial = serial();
    let model = train_reverser(0.0);
    let device = Device::flex();
    let (symbols, source) = reversal_inputs(&device);

    // The model has learnt the task: greedy output is the reversal.
    let cached = greedy(&model, source.clone(), &search_config()).expect("search");
    let correct = cached
        .iter()
        .zip(&symbols)
        .filter(|(h, s)| h.tokens.iter().rev().eq(s.iter()))
        .count();
    assert!(
        correct >= 11,
        "{correct}/12 reversed: {:?}",
        tokens(&cached)
    );

    // Greedy with the cache = greedy re-running the decoder over the prefix.
    let uncached = greedy(
        &model,
        source.clone(),
        &search_config().with_use_cache(false),
    )
    .expect("search");
    assert_eq!(tokens(&cached), tokens(&uncached));
    for (a, b) in cached.iter().zip(&uncached) {
        assert!(close(a.log_prob, b.log_prob, 1e-4), "{a:?} vs {b:?}");
    }

    // Logits step by step along the greedy outputs, padded sources included.
    let encoded = model.encode(source.clone());
    let inputs: Vec<Vec<u32>> = cached
        .iter()
        .map(|h| {
            std::iter::once(BOS as u32)
                .chain(h.tokens.iter().copied())
                .collect()
        })
        .collect();
    let input = padded(&inputs, &device);
    let [batch, len] = input.dims();
    let full = model.decode(input.clone(), &encoded);
    let mut state = model.start_decoding(&encoded);
    let mut worst = 0.0f32;
    for t in 0..len {
        let step = model.decode_step(input.clone().slice([0..batch, t..t + 1]), &mut state);
        let expected = full
            .clone()
            .slice([0..batch, t..t + 1, 0..VOCAB])
            .reshape([batch, VOCAB]);
        let diff = (step - expected).abs().max_dim(1).into_data();
        let diff = diff.try_to_vec::<f32>().expect("f32");
        // Rows whose input is already padding at `t` are not compared: the full pass masks
        // padding keys, the cache (which never holds padding in a search) does not.
        for (row, d) in diff.iter().enumerate() {
            if t < inputs[row].len() {
                worst = worst.max(*d);
            }
        }
    }
    assert!(worst < 1e-5, "cached logits differ by {worst}");

    // Beam search, cached and not.
    let beam = search_config().with_beam_size(3).with_n_best(3);
    let cached = beam_search(&model, source.clone(), &beam).expect("search");
    let uncached =
        beam_search(&model, source.clone(), &beam.with_use_cache(false)).expect("search");
    for (a, b) in cached.iter().zip(&uncached) {
        assert_eq!(tokens(a), tokens(b));
        for (x, y) in a.iter().zip(b) {
            assert!(close(x.score, y.score, 1e-4), "{x:?} vs {y:?}");
        }
    }
}

/// A confident model trained with label smoothing: its greedy path is far more probable than
/// anything else, and the weak beams' EOS continuations, held up by the smoothing, finish early.
/// Beam search must still wait for the strong beam and find the reversal; a search that stops
/// at `k` finished hypotheses returns cut-off prefixes of it.
#[test]
fn confident_model_beam_search_waits_for_the_strong_beam() {
    let _serial = serial();
    let model = train_reverser(0.1);
    let device = Device::flex();
    let (symbols, source) = reversal_inputs(&device);
    let mut reversed = 0;
    for k in 2..=5 {
        for alpha in [0.0, 0.6, 1.0] {
            let config = search_config().with_beam_size(k).with_length_penalty(alpha);
            let greedy = greedy(&model, source.clone(), &config).expect("search");
            let beams = beam_search(&model, source.clone(), &config).expect("search");
            for ((g, n_best), s) in greedy.iter().zip(&beams).zip(&symbols) {
                let best = &n_best[0];
                assert!(
                    best.score >= g.score - 1e-4,
                    "beam {k}, alpha {alpha}: {best:?} below greedy {g:?}"
                );
                if g.tokens.iter().rev().eq(s.iter()) {
                    assert_eq!(best.tokens, g.tokens, "beam {k}, alpha {alpha}");
                    reversed += 1;
                }
            }
        }
    }
    assert!(
        reversed >= 11 * 12,
        "the model did not learn: {reversed} reversals"
    );
    // Stopping at k finished hypotheses (BeamStop::Count) returns cut-off prefixes here.
    let mut cut_off = 0;
    for k in 2..=5 {
        for alpha in [0.0, 0.6, 1.0] {
            let config = search_config()
                .with_beam_size(k)
                .with_length_penalty(alpha)
                .with_stop(BeamStop::Count);
            cut_off += beam_search(&model, source.clone(), &config)
                .expect("search")
                .iter()
                .zip(&symbols)
                .filter(|(n_best, s)| n_best[0].tokens.len() < s.len())
                .count();
        }
    }
    assert!(cut_off > 0, "the count rule waited for the strong beam");
}

fn random_model(seed: u64, device: &Device) -> Transformer {
    device.seed(seed);
    tiny_config(40)
        .with_max_positions(32)
        .init(device)
        .expect("valid")
}

fn random_sources(seed: u64, device: &Device) -> Tensor<2, Int> {
    let mut rng = Lcg(seed);
    let rows: Vec<Vec<u32>> = (0..5).map(|_| with_eos(&rng.sequence(1, 7))).collect();
    padded(&rows, device)
}

#[test]
fn beam_of_one_is_greedy() {
    let _serial = serial();
    let device = Device::flex();
    for seed in 0..4 {
        let model = random_model(seed, &device);
        let source = random_sources(seed + 100, &device);
        // Greedy under the count rule at any alpha, and under the bound rule at alpha 0 (with
        // alpha > 0 the bound rule may search on past an EOS).
        for (stop, alpha) in [
            (BeamStop::Count, 0.6),
            (BeamStop::Count, 1.0),
            (BeamStop::Bound, 0.0),
        ] {
            let config = search_config()
                .with_beam_size(1)
                .with_stop(stop)
                .with_length_penalty(alpha)
                .with_max_len_a(1.0)
                .with_max_len_b(4);
            let greedy = greedy(&model, source.clone(), &config).expect("search");
            let beam: Vec<Hypothesis> = beam_search(&model, source.clone(), &config)
                .expect("search")
                .into_iter()
                .map(|mut n_best| {
                    assert_eq!(n_best.len(), 1);
                    n_best.remove(0)
                })
                .collect();
            assert_eq!(tokens(&greedy), tokens(&beam), "seed {seed}, {stop:?}");
            for (g, b) in greedy.iter().zip(&beam) {
                assert!(close(g.score, b.score, 1e-5), "seed {seed}: {g:?} vs {b:?}");
            }
        }
    }
}

#[test]
fn beam_scores_at_least_greedy_and_reports_true_log_probs() {
    let _serial = serial();
    let device = Device::flex();
    let mut improved = 0;
    for seed in 0..6 {
        for alpha in [0.0, 1.0] {
            let model = random_model(seed, &device);
            let source = random_sources(seed + 200, &device);
            let config = search_config()
                .with_beam_size(4)
                .with_n_best(4)
                .with_length_penalty(alpha)
                .with_max_len_a(1.0)
                .with_max_len_b(3);
            let greedy = greedy(&model, source.clone(), &config).expect("search");
            let rescored =
                score_sequences(&model, source.clone(), &tokens(&greedy), &config).expect("search");
            let beams = beam_search(&model, source.clone(), &config).expect("search");
            for ((g, r), n_best) in greedy.iter().zip(&rescored).zip(&beams) {
                assert!(close(g.log_prob, r.log_prob, 1e-4), "greedy {g:?} vs {r:?}");
                assert_eq!(n_best.len(), 4);
                assert!(n_best.windows(2).all(|w| w[0].score >= w[1].score));
                let best = &n_best[0];
                assert!(
                    best.score >= r.score - 1e-4,
                    "seed {seed} alpha {alpha}: beam {best:?} below greedy {r:?}"
                );
                if best.score > r.score + 1e-4 {
                    improved += 1;
                }
                for h in n_best {
                    assert!(!h.tokens.contains(&(EOS as u32)) && !h.tokens.contains(&(PAD as u32)));
                }
            }
            // Every reported log-probability is the teacher-forced one, and so is the score.
            for rank in 0..4 {
                let hypotheses: Vec<Vec<u32>> =
                    beams.iter().map(|n| n[rank].tokens.clone()).collect();
                let forced =
                    score_sequences(&model, source.clone(), &hypotheses, &config).expect("search");
                for (n_best, f) in beams.iter().zip(&forced) {
                    let h = &n_best[rank];
                    assert!(
                        close(h.log_prob, f.log_prob, 1e-4),
                        "{h:?} vs teacher-forced {f:?}"
                    );
                    assert!(
                        close(h.score, f.score, 1e-4),
                        "{h:?} vs teacher-forced {f:?}"
                    );
                }
            }
        }
    }
    // Random models are flat enough for the beams to matter.
    assert!(improved > 0, "beam search never beat greedy");
}

#[test]
fn batched_search_equals_one_sentence_at_a_time() {
    let _serial = serial();
    let device = Device::flex();
    let model = random_model(7, &device);
    let mut rng = Lcg(300);
    let rows: Vec<Vec<u32>> = (0..4).map(|_| with_eos(&rng.sequence(1, 7))).collect();
    let config = search_config()
        .with_beam_size(3)
        .with_n_best(2)
        .with_max_len_b(3);
    let together = beam_search(&model, padded(&rows, &device), &config).expect("search");
    let greedy_together = greedy(&model, padded(&rows, &device), &config).expect("search");
    for (i, row) in rows.iter().enumerate() {
        let alone = beam_search(&model, padded(std::slice::from_ref(row), &device), &config)
            .expect("search");
        assert_eq!(tokens(&together[i]), tokens(&alone[0]), "row {i}");
        for (a, b) in together[i].iter().zip(&alone[0]) {
            assert!(close(a.score, b.score, 1e-4));
        }
        let greedy_alone =
            greedy(&model, padded(std::slice::from_ref(row), &device), &config).expect("search");
        assert_eq!(greedy_together[i].tokens, greedy_alone[0].tokens, "row {i}");
    }
}

#[test]
fn lengths_respect_min_len_max_len_and_max_positions() {
    let _serial = serial();
    let device = Device::flex();
    device.seed(3);
    let model = tiny_config(40)
        .with_max_positions(6)
        .init(&device)
        .expect("valid");
    // A source that is only EOS, and one of the full 6 positions.
    let source = padded(
        &[vec![EOS as u32], vec![5, 6, 7, 8, 9, EOS as u32]],
        &device,
    );
    // Asked for far more than 6 positions allow: every output stops at max_positions - 1 = 5.
    let long = search_config()
        .with_beam_size(3)
        .with_max_len_a(10.0)
        .with_min_len(100);
    for config in [long.clone(), long.clone().with_use_cache(false)] {
        for h in greedy(&model, source.clone(), &config).expect("search") {
            assert_eq!(h.tokens.len(), 5, "{h:?}");
        }
        for n_best in beam_search(&model, source.clone(), &config).expect("search") {
            assert_eq!(n_best[0].tokens.len(), 5, "{n_best:?}");
        }
    }
    // Exactly 4 tokens: max length 0·s + 4 and EOS forbidden before 4.
    let exact = search_config()
        .with_max_len_a(0.0)
        .with_max_len_b(4)
        .with_min_len(4);
    for h in greedy(&model, source.clone(), &exact).expect("search") {
        assert_eq!(h.tokens.len(), 4);
        assert!(h.log_prob.is_finite());
    }
    for n_best in beam_search(&model, source, &exact).expect("search") {
        assert!(
            n_best
                .iter()
                .all(|h| h.tokens.len() == 4 && h.log_prob.is_finite())
        );
    }
}

/// The next-token log-probabilities of an ensemble, computed the plain way: every model decodes
/// the whole prefix again (no cache), the models' log-softmaxes are averaged, and the average is
/// renormalized. One source row.
fn ensemble_log_probs(
    models: &[&Transformer],
    source: &Tensor<2, Int>,
    prefix: &[u32],
) -> Vec<f32> {
    let device = source.device();
    let mut input = vec![BOS as i64];
    input.extend(prefix.iter().map(|&t| i64::from(t)));
    let len = input.len();
    let input: Tensor<2, Int> = Tensor::from_data(TensorData::new(input, [1, len]), &device);
    let mut sum: Option<Tensor<1>> = None;
    for model in models {
        let logits = model.decode(input.clone(), &model.encode(source.clone()));
        let [_, _, vocab] = logits.dims();
        let last = logits
            .slice([0..1, len - 1..len, 0..vocab])
            .reshape([vocab]);
        let log_p = log_softmax(last, 0);
        sum = Some(match sum {
            Some(total) => total + log_p,
            None => log_p,
        });
    }
    let mean = sum.expect("models") / models.len() as f64;
    log_softmax(mean, 0)
        .into_data()
        .try_to_vec::<f32>()
        .expect("f32")
}

#[test]
fn an_ensemble_of_one_is_the_model_and_of_two_follows_the_averaged_distribution() {
    let _serial = serial();
    let device = Device::flex();
    let config = search_config()
        .with_beam_size(1)
        .with_max_len_a(1.0)
        .with_max_len_b(4);
    let beam = config.clone().with_beam_size(3).with_n_best(2);
    for seed in 0..3 {
        let first = random_model(seed, &device);
        let second = random_model(seed + 50, &device);
        let source = random_sources(seed + 100, &device);

        // One model: the same hypotheses, bit for bit.
        let alone = greedy(&first, source.clone(), &config).expect("search");
        let one = greedy_ensemble(&[&first], source.clone(), &config).expect("search");
        assert_eq!(alone, one, "seed {seed}");
        let alone = beam_search(&first, source.clone(), &beam).expect("search");
        let one = beam_search_ensemble(&[&first], source.clone(), &beam).expect("search");
        assert_eq!(alone, one, "seed {seed}");

        // Two models: each sentence, decoded greedily by the plain reference.
        let models = [&first, &second];
        let got = greedy_ensemble(&models, source.clone(), &config).expect("search");
        let [rows, src_len] = source.dims();
        for (row, hypothesis) in got.iter().enumerate() {
            let one_source = source.clone().slice([row..row + 1, 0..src_len]);
            let source_tokens = one_source
                .clone()
                .into_data()
                .convert::<i64>()
                .try_to_vec::<i64>()
                .expect("ids")
                .iter()
                .filter(|&&id| id != PAD as i64)
                .count();
            let limit = config.max_output_len(source_tokens, 32);
            let mut prefix = Vec::new();
            let mut log_prob = 0.0f32;
            loop {
                let log_p = ensemble_log_probs(&models, &one_source, &prefix);
                let (token, best) = log_p.iter().enumerate().filter(|&(t, _)| t != PAD).fold(
                    (0, f32::NEG_INFINITY),
                    |a, (t, &v)| if v > a.1 { (t, v) } else { a },
                );
                // At the length limit the sentence ends with EOS.
                let token = if prefix.len() >= limit { EOS } else { token };
                log_prob += if token == EOS { log_p[EOS] } else { best };
                if token == EOS {
                    break;
                }
                prefix.push(token as u32);
            }
            assert_eq!(
                prefix, hypothesis.tokens,
                "seed {seed}, row {row} of {rows}"
            );
            assert!(
                close(log_prob, hypothesis.log_prob, 1e-4),
                "seed {seed}, row {row}: {log_prob} vs {}",
                hypothesis.log_prob
            );
        }
        // Beam search over the same ensemble: every hypothesis has the log-probability the
        // reference gives its tokens (the models' caches follow the beams), and the best is
        // at least as good as greedy's.
        let beams = beam_search_ensemble(&models, source.clone(), &beam).expect("search");
        for (row, (g, n_best)) in got.iter().zip(&beams).enumerate() {
            assert!(
                n_best[0].score >= g.score - 1e-4,
                "seed {seed}: {n_best:?} vs {g:?}"
            );
            let one_source = source.clone().slice([row..row + 1, 0..src_len]);
            for hypothesis in n_best {
                let mut log_prob = 0.0f32;
                for i in 0..=hypothesis.tokens.len() {
                    let log_p = ensemble_log_probs(&models, &one_source, &hypothesis.tokens[..i]);
                    let token = hypothesis.tokens.get(i).map_or(EOS, |&t| t as usize);
                    log_prob += log_p[token];
                }
                assert!(
                    close(log_prob, hypothesis.log_prob, 1e-4),
                    "seed {seed}, row {row}: {log_prob} vs {hypothesis:?}"
                );
            }
        }

        // Models of different lengths: the shortest positions (9, room for the sources of at
        // most 8) limit the outputs, BOS included.
        let short = tiny_config(40)
            .with_max_positions(9)
            .init(&device)
            .expect("valid");
        for hypothesis in
            greedy_ensemble(&[&first, &short], source.clone(), &config).expect("search")
        {
            assert!(hypothesis.tokens.len() <= 8, "{hypothesis:?}");
        }
    }
}

/// Beam search by the count rule (fairseq's; CTranslate2's for a length penalty other than 0,
/// except at the length limit, where CTranslate2 closes beams without an EOS), written out
/// plainly for one source row: every step re-decodes each beam's whole prefix, ranks all
/// `beams × vocab` continuations by cumulative log-probability (ties by beam, then token),
/// finishes the EOS continuations among the first `k`, continues with the `k` best others, and
/// stops once `k` hypotheses have finished (or at the maximum length, where the open beams end
/// with a scored EOS). Scores by `log_prob / (n + 1)^alpha`.
fn count_rule_reference(
    model: &Transformer,
    source: &Tensor<2, Int>,
    k: usize,
    alpha: f64,
    max_len: usize,
) -> Vec<(Vec<u32>, f32)> {
    let score = |tokens: &[u32], log_prob: f32| {
        (f64::from(log_prob) / (tokens.len() as f64 + 1.0).powf(alpha)) as f32
    };
    let mut beams: Vec<(Vec<u32>, f32)> = vec![(Vec::new(), 0.0)];
    let mut finished: Vec<(Vec<u32>, f32)> = Vec::new();
    for step in 0..=max_len {
        let log_probs: Vec<Vec<f32>> = beams
            .iter()
            .map(|(prefix, _)| ensemble_log_probs(&[model], source, prefix))
            .collect();
        if step == max_len {
            for ((tokens, log_prob), log_p) in beams.iter().zip(&log_probs) {
                finished.push((tokens.clone(), log_prob + log_p[EOS]));
            }
            break;
        }
        let mut candidates: Vec<(f32, usize, usize)> = Vec::new();
        for (b, ((_, log_prob), log_p)) in beams.iter().zip(&log_probs).enumerate() {
            for (token, &lp) in log_p.iter().enumerate() {
                if token != PAD {
                    candidates.push((log_prob + lp, b, token));
                }
            }
        }
        candidates.sort_by(|x, y| y.0.total_cmp(&x.0).then((x.1, x.2).cmp(&(y.1, y.2))));
        let mut next = Vec::new();
        for (rank, &(value, b, token)) in candidates.iter().take(2 * k).enumerate() {
            if token == EOS {
                if rank < k {
                    finished.push((beams[b].0.clone(), value));
                }
            } else if next.len() < k {
                let mut tokens = beams[b].0.clone();
                tokens.push(token as u32);
                next.push((tokens, value));
            }
        }
        if finished.len() >= k {
            break;
        }
        beams = next;
    }
    let mut scored: Vec<(Vec<u32>, f32)> = finished
        .into_iter()
        .map(|(tokens, log_prob)| {
            let s = score(&tokens, log_prob);
            (tokens, s)
        })
        .collect();
    scored.sort_by(|x, y| y.1.total_cmp(&x.1));
    scored
}

#[test]
fn the_count_rule_with_the_power_penalty_matches_a_plain_reference() {
    let _serial = serial();
    let device = Device::flex();
    for seed in 0..4 {
        let model = random_model(seed, &device);
        for alpha in [0.0, 1.0] {
            let config = search_config()
                .with_beam_size(3)
                .with_length_norm(LengthNorm::Power)
                .with_length_penalty(alpha)
                .with_stop(BeamStop::Count)
                .with_max_len_a(0.0)
                .with_max_len_b(5);
            let sources = random_sources(seed + 300, &device);
            let [rows, width] = sources.dims();
            let batched = beam_search(&model, sources.clone(), &config).expect("search");
            for (row, found) in batched.iter().enumerate() {
                let source = sources.clone().slice([row..row + 1, 0..width]);
                let reference = count_rule_reference(&model, &source, 3, alpha, 5);
                assert_eq!(
                    found[0].tokens, reference[0].0,
                    "seed {seed}, alpha {alpha}, row {row}"
                );
                assert!(
                    close(found[0].score, reference[0].1, 1e-4),
                    "seed {seed}, alpha {alpha}, row {row}: {} vs {}",
                    found[0].score,
                    reference[0].1
                );
            }
            assert_eq!(batched.len(), rows);
        }
    }
}

/// An impossible search reaching the model crate is an error naming what is wrong, never a
/// panic: a setting out of range, a model of other ids, a source longer than the positions.
#[test]
fn impossible_searches_are_errors_not_panics() {
    let _guard = serial();
    let device = Device::flex();
    let model = random_model(5, &device);
    let sources = random_sources(5, &device);
    let setting = |result: Result<Vec<Hypothesis>, ModelError>| match result {
        Err(ModelError::InvalidSearch { setting, .. }) => setting,
        other => panic!("expected an invalid setting, got {other:?}"),
    };
    assert_eq!(
        setting(greedy(
            &model,
            sources.clone(),
            &search_config().with_beam_size(0)
        )),
        SearchSetting::BeamSize
    );
    let beam = search_config().with_beam_size(2).with_n_best(3);
    match beam_search(&model, sources.clone(), &beam) {
        Err(ModelError::InvalidSearch { setting, reason }) => {
            assert_eq!(setting, SearchSetting::NBest);
            assert!(
                reason.contains("between 1 and the beam size (2)"),
                "{reason}"
            );
        }
        other => panic!("expected n_best refused, got {other:?}"),
    }
    assert_eq!(
        setting(greedy(
            &model,
            sources.clone(),
            &search_config().with_max_len_a(f64::NAN)
        )),
        SearchSetting::MaxLenA
    );
    let eos = search_config().tokens.eos;
    assert_eq!(
        setting(greedy(
            &model,
            sources.clone(),
            &search_config().with_blocked_tokens(vec![eos])
        )),
        SearchSetting::BlockedTokens
    );
    // Padding with another id than the model's, and a source longer than its 32 positions.
    let mut other_padding = search_config();
    other_padding.tokens.pad += 1;
    assert!(matches!(
        greedy(&model, sources, &other_padding),
        Err(ModelError::Search { .. })
    ));
    let long = padded(&[with_eos(&[5; 40])], &device);
    match greedy(&model, long, &search_config()) {
        Err(ModelError::Search { reason }) => assert!(reason.contains("longer than"), "{reason}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
}
