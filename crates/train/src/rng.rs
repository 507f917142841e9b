//! Seeds derived from the run seed, so that randomness is a pure function of where the run is.

/// The seed for the dropout masks of batch `batch` of optimizer step `step`.
pub fn step_seed(seed: u64, step: u64, batch: u64) -> u64 {
    rosetta_model::rng::mix64(
        seed ^ step.wrapping_mul(rosetta_model::rng::GOLDEN_GAMMA)
            ^ batch.wrapping_mul(0xC2B2_AE3D_27D4_EB4F),
    )
}
