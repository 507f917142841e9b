//! Reading corpora: real ones from `../shared/data`, and broken ones the tests write.

use std::io::Write;
use std::path::{Path, PathBuf};

use rosetta_data::{CorpusFiles, DataError, read_corpus};

mod common;
use common::shared_data;

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write test file");
    path
}

fn gzip(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    let file = std::fs::File::create(&path).expect("create");
    let mut encoder = flate2::write::GzEncoder::new(file, flate2::Compression::default());
    encoder.write_all(text.as_bytes()).expect("gzip");
    encoder.finish().expect("finish gzip");
    path
}

#[test]
fn misaligned_files_name_both_files_and_counts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = write(dir.path(), "a.en", b"one\ntwo\nthree\n");
    let target = write(dir.path(), "a.fr", b"un\ndeux\n");
    let err = read_corpus(&CorpusFiles::Parallel { source, target }).expect_err("misaligned");
    let text = err.to_string();
    assert!(matches!(
        err,
        DataError::Misaligned {
            source_lines: 3,
            target_lines: 2,
            ..
        }
    ));
    assert!(
        text.contains("a.en") && text.contains("a.fr") && text.contains('3') && text.contains('2'),
        "{text}"
    );
}

#[test]
fn invalid_utf8_names_file_and_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = write(dir.path(), "b.en", b"fine\nbad \xff byte\n");
    let target = write(dir.path(), "b.fr", b"bien\nmal\n");
    let err = read_corpus(&CorpusFiles::Parallel { source, target }).expect_err("invalid utf-8");
    assert!(
        matches!(err, DataError::InvalidUtf8 { line: 2, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("b.en:2"), "{err}");
}

#[test]
fn empty_pairs_are_skipped_and_counted_and_crlf_is_accepted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = write(dir.path(), "c.en", b"one\r\n\r\n  \r\nfour\r\nfive\n");
    let target = write(dir.path(), "c.fr", b"un\r\ndeux\r\ntrois\r\nquatre\r\n\t\n");
    let corpus = read_corpus(&CorpusFiles::Parallel { source, target }).expect("read");
    assert_eq!(corpus.source, vec!["one", "four"]);
    assert_eq!(corpus.target, vec!["un", "quatre"]);
    assert_eq!(
        (corpus.stats.read, corpus.stats.kept, corpus.stats.empty),
        (5, 2, 3)
    );
}

#[test]
fn gzip_is_read_transparently() {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = gzip(dir.path(), "d.en.gz", "hello\nworld\n");
    let target = write(dir.path(), "d.fr", b"bonjour\nmonde\n");
    let corpus = read_corpus(&CorpusFiles::Parallel { source, target }).expect("read");
    assert_eq!(corpus.source, vec!["hello", "world"]);
}

#[test]
fn tsv_pairs_and_a_missing_tab() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = write(
        dir.path(),
        "fra.txt",
        b"Go.\tVa !\tCC-BY 2.0 (France) Attribution\nHi.\tSalut !\n",
    );
    let corpus = read_corpus(&CorpusFiles::Tsv { tsv: good }).expect("read");
    assert_eq!(corpus.source, vec!["Go.", "Hi."]);
    assert_eq!(corpus.target, vec!["Va !", "Salut !"]);
    let bad = write(dir.path(), "bad.tsv", b"Go.\tVa !\nno tab here\n");
    let err = read_corpus(&CorpusFiles::Tsv { tsv: bad }).expect_err("missing tab");
    assert!(
        matches!(err, DataError::MissingTab { line: 2, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("bad.tsv:2"), "{err}");
}

#[test]
fn missing_file_names_the_file() {
    let err = read_corpus(&CorpusFiles::Parallel {
        source: "/nonexistent/x.en".into(),
        target: "/nonexistent/x.fr".into(),
    })
    .expect_err("missing");
    assert!(err.to_string().contains("/nonexistent/x.en"), "{err}");
}

#[test]
#[ignore = "needs ../shared/data (the shared corpora); .ci/run runs it with --ignored"]
fn shared_corpora_read_with_their_documented_sizes() {
    let data = shared_data();
    let multi30k = read_corpus(&CorpusFiles::Parallel {
        source: data.join("multi30k/val.en"),
        target: data.join("multi30k/val.de"),
    })
    .expect("multi30k val");
    assert_eq!(multi30k.stats.read, 1014);
    let tatoeba = read_corpus(&CorpusFiles::Parallel {
        source: data.join("tatoeba-fra-eng/valid.en.gz"),
        target: data.join("tatoeba-fra-eng/valid.fr.gz"),
    })
    .expect("tatoeba valid");
    // PROVENANCE.md: 1,558 validation pairs, no empty lines.
    assert_eq!((tatoeba.stats.read, tatoeba.stats.kept), (1558, 1558));
}

#[test]
fn a_longer_target_file_is_misaligned_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = write(dir.path(), "c.en", b"one\ntwo\n");
    let target = write(dir.path(), "c.fr", b"un\ndeux\ntrois\nquatre\n");
    let err = read_corpus(&CorpusFiles::Parallel { source, target }).expect_err("misaligned");
    assert!(
        matches!(
            err,
            DataError::Misaligned {
                source_lines: 2,
                target_lines: 4,
                ..
            }
        ),
        "{err}"
    );
}
