//! Reading a parallel corpus: two aligned files (one sentence per line) or one file of
//! tab-separated pairs, plain or gzip-compressed, validated line by line.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;
use serde::{Deserialize, Serialize};

use crate::error::DataError;

/// Where one split of a parallel corpus lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum CorpusFiles {
    /// Two aligned files, line `i` of one translating line `i` of the other
    /// (`train.en` + `train.de`).
    Parallel {
        /// Source-language file.
        source: PathBuf,
        /// Target-language file.
        target: PathBuf,
    },
    /// One file of `source<TAB>target` lines (further columns, such as the attribution of the
    /// Tatoeba/manythings `fra.txt`, are ignored).
    Tsv {
        /// The pair file.
        tsv: PathBuf,
    },
}

impl CorpusFiles {
    /// The files this split reads, in a fixed order (for hashing and messages).
    pub fn paths(&self) -> Vec<&Path> {
        match self {
            CorpusFiles::Parallel { source, target } => vec![source, target],
            CorpusFiles::Tsv { tsv } => vec![tsv],
        }
    }

    /// The same files with relative paths resolved against `base`.
    pub fn resolved(&self, base: &Path) -> CorpusFiles {
        let join = |p: &PathBuf| {
            if p.is_absolute() {
                p.clone()
            } else {
                base.join(p)
            }
        };
        match self {
            CorpusFiles::Parallel { source, target } => CorpusFiles::Parallel {
                source: join(source),
                target: join(target),
            },
            CorpusFiles::Tsv { tsv } => CorpusFiles::Tsv { tsv: join(tsv) },
        }
    }
}

/// What reading a corpus found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadStats {
    /// Pairs in the files.
    pub read: usize,
    /// Pairs kept.
    pub kept: usize,
    /// Pairs skipped because one side is empty or whitespace only.
    pub empty: usize,
}

/// Sentence pairs read from a [`CorpusFiles`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParallelCorpus {
    /// Source sentences.
    pub source: Vec<String>,
    /// Target sentences, aligned with `source`.
    pub target: Vec<String>,
    /// What reading found.
    pub stats: ReadStats,
}

impl ParallelCorpus {
    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.source.len()
    }

    /// Whether there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.source.is_empty()
    }
}

/// Reads and validates a split: misaligned files, invalid UTF-8 and TSV lines without a tab are
/// errors naming the file (and line); pairs with an empty or whitespace-only side are skipped
/// and counted; CRLF line ends are accepted; `.gz` files are decompressed transparently.
pub fn read_corpus(files: &CorpusFiles) -> Result<ParallelCorpus, DataError> {
    let (source, target) = match files {
        CorpusFiles::Parallel { source, target } => {
            let s = read_lines(source)?;
            let t = read_lines(target)?;
            if s.len() != t.len() {
                return Err(DataError::Misaligned {
                    source_path: source.clone(),
                    source_lines: s.len(),
                    target_path: target.clone(),
                    target_lines: t.len(),
                });
            }
            (s, t)
        }
        CorpusFiles::Tsv { tsv } => {
            let lines = read_lines(tsv)?;
            let mut s = Vec::with_capacity(lines.len());
            let mut t = Vec::with_capacity(lines.len());
            for (i, line) in lines.into_iter().enumerate() {
                if line.trim().is_empty() {
                    s.push(String::new());
                    t.push(String::new());
                    continue;
                }
                let mut columns = line.split('\t');
                let (Some(a), Some(b)) = (columns.next(), columns.next()) else {
                    return Err(DataError::MissingTab {
                        path: tsv.clone(),
                        line: i + 1,
                    });
                };
                s.push(a.to_string());
                t.push(b.to_string());
            }
            (s, t)
        }
    };
    let mut corpus = ParallelCorpus {
        stats: ReadStats {
            read: source.len(),
            ..ReadStats::default()
        },
        ..ParallelCorpus::default()
    };
    for (s, t) in source.into_iter().zip(target) {
        if s.trim().is_empty() || t.trim().is_empty() {
            corpus.stats.empty += 1;
        } else {
            corpus.source.push(s);
            corpus.target.push(t);
        }
    }
    corpus.stats.kept = corpus.source.len();
    Ok(corpus)
}

/// Opens a text file for buffered reading, decompressing it on the fly if its name ends in
/// `.gz`: what [`read_lines`] reads, and what a streaming reader (`rosetta translate`) uses.
pub fn open_text(path: &Path) -> Result<Box<dyn BufRead>, DataError> {
    let file = File::open(path).map_err(DataError::io(path))?;
    let reader: Box<dyn Read> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    Ok(Box::new(BufReader::with_capacity(1 << 16, reader)))
}

/// Reads the next line of `reader` into `buffer` (cleared first), without its line end (`\n`
/// or `\r\n`); `false` at the end of the input.
pub fn read_line_bytes(reader: &mut dyn BufRead, buffer: &mut Vec<u8>) -> std::io::Result<bool> {
    buffer.clear();
    if reader.read_until(b'\n', buffer)? == 0 {
        return Ok(false);
    }
    if buffer.last() == Some(&b'\n') {
        buffer.pop();
        if buffer.last() == Some(&b'\r') {
            buffer.pop();
        }
    }
    Ok(true)
}

/// Reads every line of a text file (gzip if its name ends in `.gz`), without line ends
/// (`\n` or `\r\n`), checking UTF-8 line by line.
pub fn read_lines(path: &Path) -> Result<Vec<String>, DataError> {
    let mut reader = open_text(path)?;
    let mut lines = Vec::new();
    let mut buffer = Vec::new();
    while read_line_bytes(reader.as_mut(), &mut buffer).map_err(DataError::io(path))? {
        let line =
            String::from_utf8(std::mem::take(&mut buffer)).map_err(|_| DataError::InvalidUtf8 {
                path: path.to_path_buf(),
                line: lines.len() + 1,
            })?;
        lines.push(line);
    }
    Ok(lines)
}
