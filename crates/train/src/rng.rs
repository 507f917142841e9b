//! Seeds derived from the run seed, so that randomness is a pure function of where the run is.

/// The seed for the dropout masks of batch `batch` of optimizer step `step`.
pub fn step_seed(seed: u64, step: u64, batch: u64) -> u64 {
    let mut z =
        seed ^ step.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ batch.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
