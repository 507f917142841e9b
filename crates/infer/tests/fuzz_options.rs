//! Property-based tests of the translation options: any values are either refused naming their
//! option or give a search whose output-length limit is within the model's positions, never a
//! panic (`--max-len-a 1e300` used to overflow). Case count: 256, or `ROSETTA_FUZZ_CASES`.

use proptest::prelude::*;
use rosetta_infer::{BeamStop, InferError, LengthNorm, TranslateOptions};

fn cases() -> u32 {
    std::env::var("ROSETTA_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn any_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        prop_oneof![
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(-1.0),
            Just(0.0),
            Just(1e300)
        ],
        0.0f64..5.0,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn options_are_refused_by_name_or_bound_the_output(
        beam in 0usize..12,
        nbest in 0usize..12,
        alpha in any_f64(),
        max_len_a in any_f64(),
        max_len_b in prop_oneof![any::<usize>(), 0usize..200],
        batch_size in 0usize..100,
        length_norm in prop_oneof![Just(LengthNorm::Gnmt), Just(LengthNorm::Power)],
        beam_stop in prop_oneof![Just(BeamStop::Bound), Just(BeamStop::Count), Just(BeamStop::Transformers)],
        source_len in 0usize..10_000,
        max_positions in 0usize..4096,
    ) {
        let options = TranslateOptions {
            beam, alpha, length_norm, beam_stop, max_len_a, max_len_b, nbest, batch_size,
            ..TranslateOptions::default()
        };
        match options.search_config(rosetta_data::SPECIAL_TOKEN_IDS) {
            Ok(config) => {
                prop_assert!(beam >= 1 && (1..=beam).contains(&nbest) && batch_size >= 1);
                prop_assert!(config.validate().is_ok());
                prop_assert_eq!((config.length_norm, config.stop), (length_norm, beam_stop));
                let len = config.max_output_len(source_len, max_positions);
                prop_assert!(len <= max_positions.saturating_sub(1));
            }
            Err(InferError::InvalidOption { option, reason }) => {
                prop_assert!(
                    ["beam", "nbest", "alpha", "max-len-a", "batch-size"].contains(&option),
                    "{} {}", option, reason
                );
            }
            Err(other) => prop_assert!(false, "unexpected error {}", other),
        }
    }
}
