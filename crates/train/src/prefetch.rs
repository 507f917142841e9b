//! The pairs of the coming optimizer steps, read from the training corpora in plan order:
//! either when the step asks for them, or by a thread that stays a bounded number of steps
//! ahead (`data.prefetch`, tutorial 003's `prefetch`). Both give the same pairs in the same
//! order; only when the reading happens differs.

use std::sync::mpsc::{Receiver, sync_channel};
use std::thread::Scope;

use rosetta_data::batcher::read_pairs;
use rosetta_data::{CorpusMix, DataError, EpochPlan, PairTokens};

/// The batches of one optimizer step, as pairs of subword ids.
pub type Group = Vec<Vec<PairTokens>>;

/// Reads the groups of `accumulate` batches of an epoch's plan, from a given batch on.
pub enum GroupReader<'a> {
    /// Each group read when asked for.
    Direct {
        /// The training corpora.
        train: &'a CorpusMix,
        /// The epoch's plan.
        plan: &'a EpochPlan,
        /// The first batch of the next group.
        next: usize,
        /// Batches per group.
        accumulate: usize,
    },
    /// Groups read ahead by a thread, at most the channel's bound in advance.
    Ahead(Receiver<Result<Group, DataError>>),
}

/// The batches `start..start + accumulate` of `plan` (fewer at the end), read.
fn read_group(
    train: &CorpusMix,
    plan: &EpochPlan,
    start: usize,
    accumulate: usize,
) -> Result<Group, DataError> {
    (start..(start + accumulate).min(plan.len()))
        .map(|b| read_pairs(train, plan.batch(b)))
        .collect()
}

impl<'a> GroupReader<'a> {
    /// Starts reading `plan` at batch `start` in groups of `accumulate`; with `ahead > 0`, on a
    /// thread of `scope` that keeps up to `ahead` groups queued and reads the next one (it stops
    /// when the reader is dropped).
    pub fn start<'scope>(
        scope: &'scope Scope<'scope, '_>,
        train: &'a CorpusMix,
        plan: &'a EpochPlan,
        start: usize,
        accumulate: usize,
        ahead: usize,
    ) -> Self
    where
        'a: 'scope,
    {
        let accumulate = accumulate.max(1);
        if ahead == 0 {
            return GroupReader::Direct {
                train,
                plan,
                next: start,
                accumulate,
            };
        }
        let (sender, receiver) = sync_channel(ahead);
        scope.spawn(move || {
            let mut next = start;
            while next < plan.len() {
                let group = read_group(train, plan, next, accumulate);
                let failed = group.is_err();
                // The receiver is gone: training stopped (a limit, an error, Ctrl-C).
                if sender.send(group).is_err() || failed {
                    return;
                }
                next += accumulate;
            }
        });
        GroupReader::Ahead(receiver)
    }

    /// The next group. Asking past the end of the plan is an error.
    pub fn next_group(&mut self) -> Result<Group, DataError> {
        match self {
            GroupReader::Direct {
                train,
                plan,
                next,
                accumulate,
            } => {
                let group = read_group(train, plan, *next, *accumulate)?;
                *next += *accumulate;
                Ok(group)
            }
            GroupReader::Ahead(receiver) => {
                receiver.recv().map_err(|_| DataError::InvalidSetting {
                    key: "data.prefetch",
                    reason: "the reading thread ended before the epoch did".into(),
                })?
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rosetta_data::stored::StoredCorpusWriter;
    use rosetta_data::{BatchSize, Bucketing, FilterStats, ReadStats};

    #[test]
    fn read_ahead_gives_the_same_groups_in_the_same_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer =
            StoredCorpusWriter::create(&dir.path().join("encoded"), "key").expect("create");
        for i in 0..500u32 {
            let len = (i % 17 + 1) as usize;
            writer
                .push(&vec![i; len], &vec![i + 1; len / 2 + 1])
                .expect("push");
        }
        let (read, filter) = (ReadStats::all_kept(500), FilterStats::all_kept(500));
        let stored = writer.finish(read, filter).expect("finish");
        let train = CorpusMix::new(vec![(stored, 1.0)]).expect("mix");
        let size = BatchSize::Tokens {
            max_tokens: 120,
            bucket: Bucketing::BothSides,
        };
        let plan = rosetta_data::plan(&train, size, 3, 1).expect("plan");
        assert!(plan.len() > 20);
        for (start, accumulate) in [(0, 1), (0, 3), (7, 2)] {
            let groups = (start..plan.len()).step_by(accumulate).count();
            let read = |ahead: usize| {
                std::thread::scope(|scope| {
                    let mut reader =
                        GroupReader::start(scope, &train, &plan, start, accumulate, ahead);
                    (0..groups)
                        .map(|_| reader.next_group().expect("group"))
                        .collect::<Vec<Group>>()
                })
            };
            let direct = read(0);
            assert_eq!(
                direct.iter().map(Vec::len).sum::<usize>(),
                plan.len() - start
            );
            assert_eq!(read(1), direct, "start {start}, accumulate {accumulate}");
            assert_eq!(read(4), direct, "start {start}, accumulate {accumulate}");
        }
        // A reader dropped early (training stopped) ends its thread: the scope returns.
        std::thread::scope(|scope| {
            let mut reader = GroupReader::start(scope, &train, &plan, 0, 1, 2);
            reader.next_group().expect("first group");
        });
    }
}
