//! The whole data pipeline on the repository's own numbers corpus.

use std::path::{Path, PathBuf};

use rosetta_data::pipeline::JOINT_TOKENIZER;
use rosetta_data::{
    BatchSize, Bucketing, CorpusFiles, DataConfig, DataError, EncodedCorpus, LengthFilter,
    PairSource, PreparedData, TokenizerSettings, TrainingCorpora, plan_epoch, prepare, read_corpus,
};

fn config() -> DataConfig {
    let numbers = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/numbers");
    DataConfig {
        tokenizer: TokenizerSettings {
            vocab_size: 400,
            ..TokenizerSettings::default()
        },
        filter: LengthFilter {
            max_source_tokens: 9,
            max_target_tokens: 11,
            max_length_ratio: None,
        },
        batch: BatchSize::Tokens {
            max_tokens: 1024,
            bucket: Bucketing::BothSides,
        },
        ..DataConfig::bilingual(
            CorpusFiles::Parallel {
                source: numbers.join("train.en"),
                target: numbers.join("train.fr"),
            },
            CorpusFiles::Parallel {
                source: numbers.join("valid.en"),
                target: numbers.join("valid.fr"),
            },
        )
    }
}

/// The training pairs of a prepared run, in memory.
fn train_pairs(data: &PreparedData) -> EncodedCorpus {
    let mut corpus = EncodedCorpus::default();
    let (mut s, mut t) = (Vec::new(), Vec::new());
    for i in 0..data.train().len() {
        data.train().read_pair(i, &mut s, &mut t).expect("read");
        corpus.source.push(&s);
        corpus.target.push(&t);
    }
    corpus
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn prepare_trains_saves_caches_and_reuses() {
    let run = tempfile::tempdir().expect("tempdir");
    let config = config();
    let first = prepare(&config, run.path(), run.path()).expect("prepare");
    assert!(first.trained_tokenizers);
    assert!(run.path().join(JOINT_TOKENIZER).is_file());
    assert!(!first.train_splits[0].from_cache);
    assert_eq!(first.train_splits[0].read().read, 20_000);
    let f = first.train_splits[0].filter();
    assert_eq!(f.offered, 20_000);
    assert_eq!(f.kept + f.too_long + f.bad_ratio, f.offered);
    assert_eq!(f.kept, first.train().len());
    assert!(
        f.too_long > 0,
        "the tight filter should drop the longest numbers: {f:?}"
    );
    let summary = first.to_string();
    assert!(
        summary.contains("train") && summary.contains("too long"),
        "{summary}"
    );

    // Chunked, streamed preparation gives exactly what encoding the whole corpus at once gives:
    // the same ids in the same order, the same counts (20,000 pairs: more than one chunk).
    const { assert!(20_000 > rosetta_data::pipeline::CHUNK_PAIRS) };
    let train = config.train.as_ref().expect("a bilingual config");
    let whole = read_corpus(&train.resolved(run.path())[0].0).expect("read");
    let (expected, expected_filter) = EncodedCorpus::encode(
        &whole,
        &first.tokenizers.source,
        &first.tokenizers.target,
        &config.filter,
    )
    .expect("encode");
    assert_eq!(train_pairs(&first), expected);
    assert_eq!(f, expected_filter);
    assert_eq!(first.train_splits[0].read(), whole.stats);

    // Second run: tokenizer reloaded, encoded corpora from the cache, identical content.
    let second = prepare(&config, run.path(), run.path()).expect("prepare again");
    assert!(!second.trained_tokenizers);
    assert!(second.train_splits[0].from_cache && second.valid[0].from_cache);
    assert_eq!(train_pairs(&second), expected);
    assert_eq!(second.valid(), first.valid());
    assert_eq!(
        second.tokenizers.fingerprint().expect("fp"),
        first.tokenizers.fingerprint().expect("fp")
    );

    // A corrupted cache file is not trusted: it is rebuilt.
    let cache = run.path().join("cache");
    for entry in std::fs::read_dir(&cache).expect("cache dir") {
        let path = entry.expect("entry").path().join("source.tokens");
        let mut bytes = std::fs::read(&path).expect("read");
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x55;
        std::fs::write(&path, bytes).expect("corrupt");
    }
    let third = prepare(&config, run.path(), run.path()).expect("prepare after corruption");
    assert!(!third.train_splits[0].from_cache);
    assert_eq!(train_pairs(&third), expected);
    // Only the two rebuilt entries are left: nothing stale or temporary.
    assert_eq!(entries(&cache).len(), 2, "{:?}", entries(&cache));

    // Batches of the prepared corpus respect the filter's lengths.
    let lengths = expected.framed_lengths();
    assert!(lengths.iter().all(|(s, t)| *s <= 9 && *t <= 11));
    let batches = plan_epoch(&lengths, config.batch, 1, 0).expect("plan");
    assert!(!batches.is_empty());
    // Planned from the corpus on disk, streamed: the same batches.
    assert_eq!(
        rosetta_data::plan(third.train(), config.batch, 1, 0)
            .expect("plan")
            .into_batches(),
        batches
    );
}

#[test]
fn an_error_in_any_corpus_names_its_file_and_line_and_caches_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let numbers = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/numbers");
    // A second corpus whose line 3 of the target side is not UTF-8 after 20,000 good pairs:
    // the error comes after the first chunk was written.
    let good = std::fs::read_to_string(numbers.join("train.en")).expect("read");
    let good_fr = std::fs::read_to_string(numbers.join("train.fr")).expect("read");
    let bad_en = dir.path().join("extra.en");
    let bad_fr = dir.path().join("extra.fr");
    std::fs::write(&bad_en, format!("{good}one\ntwo\nthree\n")).expect("write");
    let mut fr = format!("{good_fr}un\ndeux\n").into_bytes();
    fr.extend_from_slice(b"tr\xffois\n");
    std::fs::write(&bad_fr, fr).expect("write");
    let single = config();
    let mut config = config();
    let text = format!(
        "train = [{{ source = \"{}\", target = \"{}\" }}, {{ source = \"{}\", target = \"{}\", weight = 0.5 }}]",
        numbers.join("train.en").display(),
        numbers.join("train.fr").display(),
        bad_en.display(),
        bad_fr.display()
    );
    #[derive(serde::Deserialize)]
    struct Train {
        train: TrainingCorpora,
    }
    config.train = Some(toml::from_str::<Train>(&text).expect("config").train);

    // While the tokenizer is trained on both corpora, streamed.
    let fresh = dir.path().join("fresh");
    let err = prepare(&config, &fresh, &fresh).expect_err("bad UTF-8");
    assert!(
        matches!(&err, DataError::InvalidUtf8 { line: 20_003, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("extra.fr:20003"), "{err}");
    assert!(
        !fresh.join(JOINT_TOKENIZER).exists(),
        "no tokenizer from a failed read"
    );

    // While the second corpus is encoded (the tokenizer exists: a first run had one corpus).
    let run = dir.path().join("run");
    prepare(&single, &run, &run).expect("one corpus");
    let cache = run.join("cache");
    assert_eq!(
        entries(&cache).len(),
        2,
        "train and valid: {:?}",
        entries(&cache)
    );
    let err = prepare(&config, &run, &run).expect_err("bad UTF-8");
    assert!(
        matches!(&err, DataError::InvalidUtf8 { line: 20_003, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("extra.fr:20003"), "{err}");
    // The error came after a first chunk of the second corpus was written: nothing of it is
    // left in the cache to be trusted.
    assert_eq!(entries(&cache).len(), 2, "{:?}", entries(&cache));

    // Misaligned: named with both files' line counts.
    std::fs::write(&bad_fr, format!("{good_fr}un\ndeux\n")).expect("write");
    let err = prepare(&config, &run, &run).expect_err("misaligned");
    assert!(
        matches!(
            &err,
            DataError::Misaligned {
                source_lines: 20_003,
                target_lines: 20_002,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(entries(&cache).len(), 2, "{:?}", entries(&cache));

    // Mended: both corpora prepared, the first from the cache; the mix holds both.
    std::fs::write(&bad_fr, format!("{good_fr}un\ndeux\ntrois\n")).expect("write");
    let data = prepare(&config, &run, &run).expect("prepare");
    assert!(data.train_splits[0].from_cache && !data.train_splits[1].from_cache);
    let kept: usize = data.train_splits.iter().map(|s| s.filter().kept).sum();
    assert_eq!(data.train().len(), kept);
    assert!(data.to_string().contains("weight 0.5"), "{data}");
}

#[test]
fn data_config_refuses_unknown_keys() {
    let text = r#"
        train = { source = "a.en", target = "a.fr" }
        valid = { source = "b.en", target = "b.fr" }
        tokenizer = { model = "unigram", vocab_size = 500, jont = true }
    "#;
    let err = toml::from_str::<DataConfig>(text).expect_err("typo");
    assert!(err.to_string().contains("jont"), "{err}");
    let ok = toml::from_str::<DataConfig>(
        "train = { tsv = \"fra.txt\" }\nvalid = { source = \"b.en\", target = \"b.fr\" }\nbatch = { by = \"sentences\", sentences = 32 }\n",
    )
    .expect("valid config");
    assert_eq!(ok.batch, BatchSize::Sentences { sentences: 32 });
    assert_eq!(
        ok.train,
        Some(TrainingCorpora::One(CorpusFiles::Tsv {
            tsv: "fra.txt".into()
        }))
    );
    // Several corpora with weights (an integer weight is a number too); a misspelt key in one
    // of them is refused.
    let several = toml::from_str::<DataConfig>(
        "train = [{ source = \"a.en\", target = \"a.fr\", weight = 2 }, { tsv = \"b.tsv\" }]\nvalid = { tsv = \"v.tsv\" }\n",
    )
    .expect("several corpora");
    assert_eq!(
        several.train.as_ref().and_then(TrainingCorpora::weights),
        Some(vec![2.0, 1.0])
    );
    assert!(
        toml::from_str::<DataConfig>(
            "train = [{ source = \"a.en\", target = \"a.fr\", wieght = 2 }]\nvalid = { tsv = \"v.tsv\" }\n",
        )
        .is_err()
    );
}

#[test]
fn a_tokenizer_sample_is_deterministic_and_the_whole_corpus_when_large_enough() {
    let fingerprint = |sample: Option<usize>| {
        let run = tempfile::tempdir().expect("tempdir");
        let mut config = config();
        config.tokenizer.sample = sample;
        let data = prepare(&config, run.path(), run.path()).expect("prepare");
        data.tokenizers.fingerprint().expect("fingerprint")
    };
    let all = fingerprint(None);
    // A sample at least as large as the corpus is the corpus, in its order.
    assert_eq!(fingerprint(Some(20_000)), all);
    let small = fingerprint(Some(300));
    assert_ne!(
        small, all,
        "300 pairs should learn other merges than 20,000"
    );
    assert_eq!(fingerprint(Some(300)), small, "the same sample every time");
    let run = tempfile::tempdir().expect("tempdir");
    let mut config = config();
    config.tokenizer.sample = Some(0);
    let err = prepare(&config, run.path(), run.path()).expect_err("empty sample");
    assert!(err.to_string().contains("sample"), "{err}");
}

#[test]
fn bpe_dropout_epochs_are_pure_functions_of_seed_and_epoch() {
    let run = tempfile::tempdir().expect("tempdir");
    let mut config = config();
    config.tokenizer.dropout = 0.2;
    let data = prepare(&config, run.path(), run.path()).expect("prepare");
    let epoch = |seed: u64, epoch: u64| {
        let mix = rosetta_data::pipeline::dropout_epoch(
            &config,
            run.path(),
            run.path(),
            &data,
            seed,
            epoch,
            &rosetta_data::Silent,
        )
        .expect("dropout epoch");
        let mut pairs = Vec::new();
        let (mut s, mut t) = (Vec::new(), Vec::new());
        for i in 0..mix.len() {
            mix.read_pair(i, &mut s, &mut t).expect("read");
            pairs.push((s.clone(), t.clone()));
        }
        pairs
    };
    let first = epoch(1, 0);
    let next = epoch(1, 1);
    assert_ne!(next, first, "another epoch, another segmentation");
    // Epoch 0's segmentation left the cache when epoch 1's was made: made again, the same.
    assert_eq!(
        epoch(1, 0),
        first,
        "an epoch is a pure function of (seed, epoch)"
    );
    assert_ne!(epoch(2, 0), first, "another seed, another segmentation");
    // Every pair decodes to a training pair the plain segmentation kept (dropout only makes
    // sentences longer, so the filter keeps fewer), in more subwords than the plain one.
    let plain = train_pairs(&data);
    let texts: std::collections::HashSet<String> = (0..plain.len())
        .map(|i| {
            data.tokenizers
                .source
                .decode(plain.source.get(i))
                .expect("decode")
        })
        .collect();
    let (mut longer, mut total) = (0usize, 0usize);
    for (s, _) in &first {
        let text = data.tokenizers.source.decode(s).expect("decode");
        assert!(texts.contains(&text), "{text:?} is not a training sentence");
        let plain = data.tokenizers.source.encode(&text).expect("encode");
        assert!(s.len() >= plain.len());
        longer += s.len() - plain.len();
        total += plain.len();
    }
    assert!(
        longer * 20 > total,
        "{longer} more subwords over {total}: too few merges dropped"
    );
    // Unigram tokenizers have no merges to drop.
    let other = tempfile::tempdir().expect("tempdir");
    let mut unigram = config.clone();
    unigram.tokenizer.model = rosetta_data::SubwordModel::Unigram;
    let err = prepare(&unigram, other.path(), other.path()).expect_err("unigram + dropout");
    assert!(err.to_string().contains("BPE"), "{err}");
}
