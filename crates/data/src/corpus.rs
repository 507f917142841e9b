//! Reading a parallel corpus: two aligned files (one sentence per line) or one file of
//! tab-separated pairs, plain or gzip-compressed, validated line by line.

use std::fs::File;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::error::DataError;

/// Extensions of corpus files that name no language.
const NOT_LANGUAGES: [&str; 10] = [
    "src", "tgt", "txt", "tok", "bpe", "raw", "out", "ref", "hyp", "tsv",
];

/// The language code a corpus file name suggests: its extension (`train.en` → `en`,
/// `train.pt_br.gz` → `pt_br`), if it looks like one: two or three letters, optionally followed
/// by `-` or `_` and two to four letters or digits, and not an extension such as `src` or `txt`.
pub fn language_of(path: &Path) -> Option<String> {
    let name = path.to_str()?;
    let name = name.strip_suffix(".gz").unwrap_or(name);
    let ext = Path::new(name).extension()?.to_str()?;
    let (language, region) = match ext.split_once(['-', '_']) {
        Some((language, region)) => (language, Some(region)),
        None => (ext, None),
    };
    let language_ok = (2..=3).contains(&language.len())
        && language.chars().all(|c| c.is_ascii_alphabetic())
        && !NOT_LANGUAGES.contains(&language.to_ascii_lowercase().as_str());
    let region_ok = region
        .is_none_or(|r| (2..=4).contains(&r.len()) && r.chars().all(|c| c.is_ascii_alphanumeric()));
    (language_ok && region_ok).then(|| ext.to_string())
}

/// Where one split of a parallel corpus lives. Read from a table with `source` and `target`, or
/// `tsv`; any other shape is refused saying which key is missing or extra.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged, try_from = "crate::config::RawCorpus")]
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

    /// The source and target language codes the file names suggest (`train.en` + `train.fr` →
    /// `en`, `fr`; see [`language_of`]), if both look like language codes.
    pub fn language_pair(&self) -> Option<(String, String)> {
        match self {
            CorpusFiles::Parallel { source, target } => {
                Some((language_of(source)?, language_of(target)?))
            }
            CorpusFiles::Tsv { .. } => None,
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

impl ReadStats {
    /// `pairs` pairs read, all kept.
    pub fn all_kept(pairs: usize) -> Self {
        Self {
            read: pairs,
            kept: pairs,
            empty: 0,
        }
    }
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
/// Holds the whole split in memory; [`PairReader`] streams it.
pub fn read_corpus(files: &CorpusFiles) -> Result<ParallelCorpus, DataError> {
    let mut reader = PairReader::open(files)?;
    let mut corpus = ParallelCorpus::default();
    let (mut source, mut target) = (String::new(), String::new());
    while reader.next_pair(&mut source, &mut target)? {
        corpus.source.push(std::mem::take(&mut source));
        corpus.target.push(std::mem::take(&mut target));
    }
    corpus.stats = reader.stats();
    Ok(corpus)
}

/// A split read pair by pair, validated as [`read_corpus`] validates it, holding one line of
/// each file at a time. Misaligned files are detected when the shorter one ends.
pub struct PairReader {
    input: Input,
    stats: ReadStats,
    consumed: Arc<AtomicU64>,
    source_bytes: Vec<u8>,
    target_bytes: Vec<u8>,
}

enum Input {
    Parallel {
        source: Box<dyn BufRead + Send>,
        target: Box<dyn BufRead + Send>,
        source_path: PathBuf,
        target_path: PathBuf,
    },
    Tsv {
        reader: Box<dyn BufRead + Send>,
        path: PathBuf,
    },
}

impl PairReader {
    /// Opens the files of a split.
    pub fn open(files: &CorpusFiles) -> Result<Self, DataError> {
        let consumed = Arc::new(AtomicU64::new(0));
        let input = match files {
            CorpusFiles::Parallel { source, target } => Input::Parallel {
                source: open_counted(source, consumed.clone())?,
                target: open_counted(target, consumed.clone())?,
                source_path: source.clone(),
                target_path: target.clone(),
            },
            CorpusFiles::Tsv { tsv } => Input::Tsv {
                reader: open_counted(tsv, consumed.clone())?,
                path: tsv.clone(),
            },
        };
        Ok(Self {
            input,
            stats: ReadStats::default(),
            consumed,
            source_bytes: Vec::new(),
            target_bytes: Vec::new(),
        })
    }

    /// The total size of a split's files on disk (compressed size for `.gz`): the end of
    /// [`consumed`](Self::consumed)'s count, for progress.
    pub fn total_bytes(files: &CorpusFiles) -> u64 {
        files
            .paths()
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum()
    }

    /// A counter of the bytes read from the files so far (compressed bytes for `.gz`), which
    /// another thread may watch.
    pub fn consumed(&self) -> Arc<AtomicU64> {
        self.consumed.clone()
    }

    /// What has been read so far (all of it once [`next_pair`](Self::next_pair) returned
    /// `false`).
    pub fn stats(&self) -> ReadStats {
        self.stats
    }

    /// Reads the next pair with two non-empty sides into `source` and `target` (replacing
    /// their content), skipping and counting pairs with an empty side; `false` at the end.
    pub fn next_pair(
        &mut self,
        source: &mut String,
        target: &mut String,
    ) -> Result<bool, DataError> {
        loop {
            if !self.next_line_pair()? {
                return Ok(false);
            }
            let line = self.stats.read;
            let (s, t) = match &self.input {
                Input::Parallel {
                    source_path,
                    target_path,
                    ..
                } => (
                    utf8(&self.source_bytes, source_path, line)?,
                    utf8(&self.target_bytes, target_path, line)?,
                ),
                Input::Tsv { path, .. } => {
                    let text = utf8(&self.source_bytes, path, line)?;
                    if text.trim().is_empty() {
                        ("", "")
                    } else {
                        let mut columns = text.split('\t');
                        match (columns.next(), columns.next()) {
                            (Some(a), Some(b)) => (a, b),
                            _ => {
                                return Err(DataError::MissingTab {
                                    path: path.clone(),
                                    line,
                                });
                            }
                        }
                    }
                }
            };
            if s.trim().is_empty() || t.trim().is_empty() {
                self.stats.empty += 1;
                continue;
            }
            source.clear();
            source.push_str(s);
            target.clear();
            target.push_str(t);
            self.stats.kept += 1;
            return Ok(true);
        }
    }

    /// Reads up to `max_pairs` kept pairs into `chunk` (cleared first); `false` when the split
    /// has no pair left.
    pub fn next_chunk(
        &mut self,
        max_pairs: usize,
        chunk: &mut ParallelCorpus,
    ) -> Result<bool, DataError> {
        chunk.source.clear();
        chunk.target.clear();
        let (mut s, mut t) = (String::new(), String::new());
        while chunk.source.len() < max_pairs && self.next_pair(&mut s, &mut t)? {
            chunk.source.push(std::mem::take(&mut s));
            chunk.target.push(std::mem::take(&mut t));
        }
        chunk.stats = self.stats;
        Ok(!chunk.source.is_empty())
    }

    /// The next line of each file (or the next TSV line) into the byte buffers; `false` at
    /// the end, an error if only one of two files ended.
    fn next_line_pair(&mut self) -> Result<bool, DataError> {
        match &mut self.input {
            Input::Parallel {
                source,
                target,
                source_path,
                target_path,
            } => {
                let more_source = read_line_bytes(source.as_mut(), &mut self.source_bytes)
                    .map_err(DataError::io(source_path.as_path()))?;
                let more_target = read_line_bytes(target.as_mut(), &mut self.target_bytes)
                    .map_err(DataError::io(target_path.as_path()))?;
                if more_source != more_target {
                    // Count what is left of the longer file, to name both lengths.
                    let (longer, path) = if more_source {
                        (source, &*source_path)
                    } else {
                        (target, &*target_path)
                    };
                    let mut rest = 1;
                    while read_line_bytes(longer.as_mut(), &mut self.source_bytes)
                        .map_err(DataError::io(path))?
                    {
                        rest += 1;
                    }
                    let read = self.stats.read;
                    let (source_lines, target_lines) = if more_source {
                        (read + rest, read)
                    } else {
                        (read, read + rest)
                    };
                    return Err(DataError::Misaligned {
                        source_path: source_path.clone(),
                        source_lines,
                        target_path: target_path.clone(),
                        target_lines,
                    });
                }
                if !more_source {
                    return Ok(false);
                }
            }
            Input::Tsv { reader, path } => {
                if !read_line_bytes(reader.as_mut(), &mut self.source_bytes)
                    .map_err(DataError::io(path.as_path()))?
                {
                    return Ok(false);
                }
            }
        }
        self.stats.read += 1;
        Ok(true)
    }
}

fn utf8<'a>(bytes: &'a [u8], path: &Path, line: usize) -> Result<&'a str, DataError> {
    std::str::from_utf8(bytes).map_err(|_| DataError::InvalidUtf8 {
        path: path.to_path_buf(),
        line,
    })
}

/// Counts the bytes read from the file underneath a decoder.
struct Counted<R> {
    inner: R,
    consumed: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.consumed.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

fn open_counted(
    path: &Path,
    consumed: Arc<AtomicU64>,
) -> Result<Box<dyn BufRead + Send>, DataError> {
    let file = Counted {
        inner: File::open(path).map_err(DataError::io(path))?,
        consumed,
    };
    Ok(rosetta_files::buffered(path, file))
}

/// Opens a text file for buffered reading, decompressing it on the fly if its name ends in
/// `.gz` ([`rosetta_files::open_text`]).
pub fn open_text(path: &Path) -> Result<Box<dyn BufRead + Send>, DataError> {
    Ok(rosetta_files::open_text(path)?)
}

pub use rosetta_files::read_line_bytes;

/// Reads every line of a text file (gzip if its name ends in `.gz`), without line ends
/// (`\n` or `\r\n`), checking UTF-8 line by line ([`rosetta_files::read_lines`]).
pub fn read_lines(path: &Path) -> Result<Vec<String>, DataError> {
    Ok(rosetta_files::read_lines(path)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_codes_come_from_corpus_extensions() {
        let of = |p: &str| language_of(Path::new(p));
        assert_eq!(of("data/numbers/train.en").as_deref(), Some("en"));
        assert_eq!(of("data/tatoeba/train.fr.gz").as_deref(), Some("fr"));
        assert_eq!(of("corpus"), None);
        assert_eq!(of("corpus.2024"), None);
        assert_eq!(of("train.pt_br.gz").as_deref(), Some("pt_br"));
        assert_eq!(of("train.zh-Hant").as_deref(), Some("zh-Hant"));
        for not_a_language in ["train.src", "train.txt", "corpus.json", "train.english"] {
            assert_eq!(of(not_a_language), None, "{not_a_language}");
        }
        let files = CorpusFiles::Parallel {
            source: "a/train.de".into(),
            target: "a/train.en".into(),
        };
        assert_eq!(files.language_pair(), Some(("de".into(), "en".into())));
        assert_eq!(
            CorpusFiles::Tsv {
                tsv: "fra.txt".into()
            }
            .language_pair(),
            None
        );
    }
}
