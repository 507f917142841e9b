//! Properties of the epoch plan: budget respected, every pair exactly once, a pure function
//! of `(seed, epoch)`.

use proptest::prelude::*;
use rosetta_data::plan::padded_tokens;
use rosetta_data::{BatchSize, plan_epoch};

fn lengths() -> impl Strategy<Value = Vec<(usize, usize)>> {
    prop::collection::vec((1usize..60, 1usize..60), 1..400)
}

fn sorted_indices(batches: &[Vec<u32>]) -> Vec<u32> {
    let mut all: Vec<u32> = batches.iter().flatten().copied().collect();
    all.sort_unstable();
    all
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn token_batches_respect_the_budget_and_cover_every_pair_once(
        lengths in lengths(),
        max_tokens in 60usize..2000,
        seed in any::<u64>(),
        epoch in 0u64..1000,
    ) {
        let batches = plan_epoch(&lengths, BatchSize::Tokens { max_tokens }, seed, epoch).expect("plan");
        for batch in &batches {
            prop_assert!(!batch.is_empty());
            prop_assert!(padded_tokens(&lengths, batch) <= max_tokens);
        }
        prop_assert_eq!(sorted_indices(&batches), (0..lengths.len() as u32).collect::<Vec<_>>());
    }

    #[test]
    fn sentence_batches_cover_every_pair_once(
        lengths in lengths(),
        sentences in 1usize..50,
        seed in any::<u64>(),
    ) {
        let batches = plan_epoch(&lengths, BatchSize::Sentences { sentences }, seed, 3).expect("plan");
        prop_assert!(batches.iter().all(|b| !b.is_empty() && b.len() <= sentences));
        prop_assert_eq!(sorted_indices(&batches), (0..lengths.len() as u32).collect::<Vec<_>>());
    }

    #[test]
    fn order_is_a_pure_function_of_seed_and_epoch(
        lengths in prop::collection::vec((1usize..60, 1usize..60), 50..300),
        seed in any::<u64>(),
        epoch in 0u64..1000,
    ) {
        for size in [BatchSize::Tokens { max_tokens: 400 }, BatchSize::Sentences { sentences: 8 }] {
            let a = plan_epoch(&lengths, size, seed, epoch).expect("plan");
            let b = plan_epoch(&lengths, size, seed, epoch).expect("plan");
            prop_assert_eq!(&a, &b);
            let next = plan_epoch(&lengths, size, seed, epoch + 1).expect("plan");
            prop_assert_ne!(&a, &next);
        }
    }
}

#[test]
fn a_pair_larger_than_the_budget_is_a_clear_error() {
    let err = plan_epoch(
        &[(5, 5), (90, 3)],
        BatchSize::Tokens { max_tokens: 50 },
        1,
        0,
    )
    .expect_err("too long");
    assert!(
        err.to_string().contains("max_tokens") && err.to_string().contains("90"),
        "{err}"
    );
}

#[test]
fn bucketing_keeps_padding_low() {
    // 1000 pairs of lengths 1..=100: sorted batching should waste little of the budget.
    let lengths: Vec<(usize, usize)> = (0..1000)
        .map(|i| (1 + i % 100, 1 + (i * 7) % 100))
        .collect();
    let batches = plan_epoch(&lengths, BatchSize::Tokens { max_tokens: 2000 }, 9, 0).expect("plan");
    let real: usize = lengths.iter().map(|(s, t)| *s.max(t)).sum();
    let padded: usize = batches.iter().map(|b| padded_tokens(&lengths, b)).sum();
    assert!(
        (padded as f64) < 1.1 * real as f64,
        "padded {padded} vs real {real}"
    );
}
