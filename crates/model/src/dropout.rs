//! Dropout: during training, zero each element with probability `prob` and scale the rest by
//! `1 / (1 - prob)`; the identity otherwise.
//!
//! The same module and the same parameters as Burn's `burn::nn::Dropout` (its records load
//! either way), with one difference in how the mask is drawn. Burn draws every element from
//! its device generator (ChaCha, one sample at a time on the CPU backends), which cost a fifth
//! of a training step on `flex` (docs/performance.md). On the CPU backends (`flex`, `ndarray`)
//! this module instead draws one 64-bit seed from the device generator and expands it with a
//! fast counter-based generator on the host, on all cores; the mask is as random, still a pure
//! function of the device seed (so resumed runs replay it), and an order of magnitude cheaper.
//! On other devices (GPUs) the mask is drawn on the device, as Burn does.

use burn::config::Config;
use burn::module::{Content, DisplaySettings, Flag, Module, ModuleDisplay, Param};
use burn::tensor::{Device, Distribution, Tensor, TensorData};

// Draw `i` (from 0) of a mask hashes `seed + (i + 1) * GOLDEN_GAMMA` (SplitMix64 over a counter).
use crate::rng::{GOLDEN_GAMMA, mix64 as split_mix};

/// Configuration of a [`Dropout`].
#[derive(Config, Debug)]
pub struct DropoutConfig {
    /// Probability of zeroing an element during training, in `[0, 1)`.
    pub prob: f64,
}

impl DropoutConfig {
    /// The dropout layer. Panics if `prob` is not in `[0, 1)` (model configurations are
    /// validated before layers are built).
    pub fn init(&self) -> Dropout {
        assert!(
            self.prob.is_finite() && (0.0..1.0).contains(&self.prob),
            "dropout probability must be in [0, 1), got {}",
            self.prob
        );
        Dropout {
            prob: self.prob,
            training: Param::from_bool(true),
        }
    }
}

/// Dropout with probability `prob`, active only on an autodiff (training) device.
#[derive(Module, Debug)]
#[module(custom_display)]
pub struct Dropout {
    /// Probability of zeroing an element during training.
    pub prob: f64,
    /// Whether to behave as during training (cleared by `freeze`).
    pub training: Param<Flag>,
}

impl Dropout {
    /// Applies dropout to `input` when training (autodiff device, not frozen, `prob > 0`).
    pub fn forward<const D: usize>(&self, input: Tensor<D>) -> Tensor<D> {
        let device = input.device();
        if !self.training.is_enabled() || !device.is_autodiff() || self.prob == 0.0 {
            return input;
        }
        let keep = 1.0 - self.prob;
        if crate::device::computes_in_host_memory(&device) {
            let shape = input.shape();
            let seed = draw_seed(&device);
            let mask = bernoulli_mask(shape.num_elements(), keep, seed);
            let mask = Tensor::<D>::from_data(TensorData::new(mask, shape), &device);
            input * mask
        } else {
            let random = input.random_like(Distribution::Bernoulli(keep));
            (input * random).mul_scalar(1.0 / keep)
        }
    }
}

impl ModuleDisplay for Dropout {
    fn custom_settings(&self) -> Option<DisplaySettings> {
        DisplaySettings::new()
            .with_new_line_after_attribute(false)
            .optional()
    }

    fn custom_content(&self, content: Content) -> Option<Content> {
        content.add("prob", &self.prob).optional()
    }
}

/// One 64-bit seed from the device's generator (two 32-bit draws), so that masks follow
/// `device.seed(..)` as Burn's own draws do.
fn draw_seed(device: &Device) -> u64 {
    let inner = device.clone().inner();
    let draws = Tensor::<1>::random([2], Distribution::Uniform(0.0, 1.0), &inner)
        .into_data()
        .convert::<f64>()
        .try_into_vec::<f64>()
        .unwrap_or_default();
    let bits = |i: usize| (draws.get(i).copied().unwrap_or(0.0) * 4_294_967_296.0) as u64;
    (bits(0) << 32) ^ bits(1)
}

/// Elements a rayon task fills at once (even, so that no draw straddles two tasks).
const MASK_CHUNK: usize = 1 << 16;

/// `n` values, each `1 / keep` with probability `keep` and `0` otherwise, from `seed`
/// (SplitMix64 over a counter; two 32-bit uniforms per draw, low half first). Each draw depends
/// only on its index, so the mask is filled in parallel chunks and is the same for any number
/// of threads.
fn bernoulli_mask(n: usize, keep: f64, seed: u64) -> Vec<f32> {
    let threshold = (keep * 4_294_967_296.0).min(4_294_967_295.0) as u64;
    let scale = (1.0 / keep) as f32;
    let mut mask = vec![0.0f32; n];
    crate::parallel::for_each_chunk_mut(&mut mask, MASK_CHUNK, |chunk, values| {
        let first_draw = (chunk * MASK_CHUNK / 2) as u64;
        fill_mask(values, first_draw, seed, threshold, scale);
    });
    mask
}

/// Fills `values` from draws `first_draw, first_draw + 1, ...` (two values a draw).
#[inline]
fn fill_mask(values: &mut [f32], first_draw: u64, seed: u64, threshold: u64, scale: f32) {
    let value = |bits: u64| if bits < threshold { scale } else { 0.0 };
    let mut counter = seed.wrapping_add(first_draw.wrapping_mul(GOLDEN_GAMMA));
    let mut pairs = values.chunks_exact_mut(2);
    for pair in &mut pairs {
        counter = counter.wrapping_add(GOLDEN_GAMMA);
        let z = split_mix(counter);
        pair[0] = value(z & 0xFFFF_FFFF);
        pair[1] = value(z >> 32);
    }
    if let [last] = pairs.into_remainder() {
        *last = value(split_mix(counter.wrapping_add(GOLDEN_GAMMA)) & 0xFFFF_FFFF);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_keeps_the_requested_fraction_and_scales() {
        let mask = bernoulli_mask(200_000, 0.9, 42);
        let kept = mask.iter().filter(|&&v| v != 0.0).count() as f64 / mask.len() as f64;
        assert!((kept - 0.9).abs() < 0.003, "kept {kept}");
        let scale = (1.0 / 0.9) as f32;
        assert!(mask.iter().all(|&v| v == 0.0 || v == scale));
        // The mean is preserved.
        let mean = mask.iter().map(|&v| v as f64).sum::<f64>() / mask.len() as f64;
        assert!((mean - 1.0).abs() < 0.004, "mean {mean}");
    }

    /// The mask as first written: one sequential pass. The chunked, parallel fill must give the
    /// same values, so that runs stay reproducible across versions and thread counts.
    fn sequential_mask(n: usize, keep: f64, seed: u64) -> Vec<f32> {
        let threshold = (keep * 4_294_967_296.0).min(4_294_967_295.0) as u64;
        let scale = (1.0 / keep) as f32;
        let mut mask = Vec::with_capacity(n);
        let mut counter = seed;
        while mask.len() < n {
            counter = counter.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = counter;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            for half in [z & 0xFFFF_FFFF, z >> 32] {
                if mask.len() < n {
                    mask.push(if half < threshold { scale } else { 0.0 });
                }
            }
        }
        mask
    }

    #[test]
    fn parallel_mask_equals_the_sequential_one() {
        for n in [0, 1, 2, 7, MASK_CHUNK - 1, MASK_CHUNK, 3 * MASK_CHUNK + 5] {
            assert_eq!(
                bernoulli_mask(n, 0.9, 11),
                sequential_mask(n, 0.9, 11),
                "n = {n}"
            );
        }
    }

    #[test]
    fn mask_depends_on_the_seed_only() {
        assert_eq!(bernoulli_mask(1000, 0.5, 7), bernoulli_mask(1000, 0.5, 7));
        assert_ne!(bernoulli_mask(1000, 0.5, 7), bernoulli_mask(1000, 0.5, 8));
        // No correlation between neighbours: pairs (kept, kept) occur about keep² of the time.
        let mask = bernoulli_mask(100_001, 0.5, 3);
        let both = mask
            .windows(2)
            .filter(|w| w[0] != 0.0 && w[1] != 0.0)
            .count() as f64
            / 100_000.0;
        assert!((both - 0.25).abs() < 0.01, "pairs {both}");
    }

    /// That the mask follows `device.seed(..)` is checked in `tests/dropout_seed.rs`, a process
    /// of its own: the generator is global, and other tests here draw from it concurrently.
    #[test]
    fn identity_without_autodiff_and_scaled_with_it() {
        let dropout = DropoutConfig::new(0.5).init();
        let device = Device::flex();
        let x = Tensor::<2>::ones([4, 8], &device);
        dropout
            .forward(x.clone())
            .into_data()
            .assert_eq(&x.into_data(), true);

        let device = Device::flex().autodiff();
        let x = Tensor::<2>::ones([64, 64], &device);
        let a = dropout.forward(x.clone()).into_data();
        let values = a.try_into_vec::<f32>().expect("f32");
        let zeros = values.iter().filter(|&&v| v == 0.0).count() as f64 / values.len() as f64;
        assert!((zeros - 0.5).abs() < 0.05, "zeroed {zeros}");
        assert!(values.iter().all(|&v| v == 0.0 || v == 2.0));
    }

    #[test]
    fn gradient_flows_through_kept_elements_only() {
        let device = Device::flex().autodiff();
        device.seed(9);
        let dropout = DropoutConfig::new(0.25).init();
        let x = Tensor::<1>::ones([1000], &device).require_grad();
        let y = dropout.forward(x.clone());
        let grads = y.clone().sum().backward();
        let grad = x.grad(&grads).expect("gradient");
        grad.into_data().assert_eq(&y.into_data(), true);
    }
}
