//! An on-disk cache of encoded corpora, keyed by a hash of everything that determines them
//! (the corpus files' bytes, the tokenizers, the length filter), so that a second run skips
//! tokenization. A cache file that fails its checksum or does not parse is refused and rebuilt.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::corpus::{CorpusFiles, ReadStats};
use crate::error::DataError;
use crate::store::{EncodedCorpus, FilterStats, LengthFilter, TokenStore};
use crate::tokenizer::{SubwordTokenizer, hex};

/// Version 02: text spelling a special token (`</s>`) is encoded as text, not as the token.
const MAGIC: &[u8; 8] = b"RSTENC02";

/// The cache key of an encoded split: SHA-256 over the format version, every corpus file's
/// bytes, both tokenizers' JSON and the filter settings.
pub fn cache_key(
    files: &CorpusFiles,
    source_tokenizer: &SubwordTokenizer,
    target_tokenizer: &SubwordTokenizer,
    filter: &LengthFilter,
) -> Result<String, DataError> {
    let mut hasher = Sha256::new();
    hasher.update(MAGIC);
    for path in files.paths() {
        let mut file = std::fs::File::open(path).map_err(DataError::io(path))?;
        let mut buffer = vec![0u8; 1 << 16];
        hasher.update(
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        );
        loop {
            let n = file.read(&mut buffer).map_err(DataError::io(path))?;
            if n == 0 {
                break;
            }
            hasher.update(&buffer[..n]);
        }
        hasher.update([0xff]);
    }
    hasher.update(source_tokenizer.to_json()?);
    hasher.update([0xff]);
    hasher.update(target_tokenizer.to_json()?);
    hasher.update(
        serde_json::to_vec(filter).map_err(|e| DataError::InvalidSetting {
            key: "filter",
            reason: e.to_string(),
        })?,
    );
    Ok(hex(&hasher.finalize()))
}

/// An encoded split with the statistics of how it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedSplit {
    /// The encoded pairs.
    pub corpus: EncodedCorpus,
    /// What reading the files found.
    pub read: ReadStats,
    /// What length filtering dropped.
    pub filter: FilterStats,
}

/// Where the cache file for `key` lives in `dir`.
pub fn cache_path(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("encoded-{}.bin", &key[..32.min(key.len())]))
}

/// Writes `split` under `key` atomically.
pub fn store(path: &Path, key: &str, split: &CachedSplit) -> Result<(), DataError> {
    let mut out = Vec::with_capacity(
        64 + 4 * (split.corpus.source.total_tokens() + split.corpus.target.total_tokens()),
    );
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(key.as_bytes());
    let counts = [
        split.read.read,
        split.read.kept,
        split.read.empty,
        split.filter.offered,
        split.filter.kept,
        split.filter.too_long,
        split.filter.bad_ratio,
    ];
    for c in counts {
        out.extend_from_slice(&(c as u64).to_le_bytes());
    }
    for store in [&split.corpus.source, &split.corpus.target] {
        out.extend_from_slice(&(store.offsets().len() as u64).to_le_bytes());
        out.extend_from_slice(&(store.tokens().len() as u64).to_le_bytes());
        for o in store.offsets() {
            out.extend_from_slice(&o.to_le_bytes());
        }
        for t in store.tokens() {
            out.extend_from_slice(&t.to_le_bytes());
        }
    }
    let checksum = Sha256::digest(&out);
    out.extend_from_slice(&checksum);
    crate::atomic::write(path, &out)
}

/// Reads the split cached under `key`; `Ok(None)` if there is no cache file, an error if the
/// file exists but is corrupt or was written for another key.
pub fn load(path: &Path, key: &str) -> Result<Option<CachedSplit>, DataError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(DataError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let corrupt = |reason: &str| DataError::CorruptCache {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    };
    if bytes.len() < MAGIC.len() + key.len() + 32 {
        return Err(corrupt("truncated"));
    }
    let (body, checksum) = bytes.split_at(bytes.len() - 32);
    if Sha256::digest(body).as_slice() != checksum {
        return Err(corrupt("checksum mismatch"));
    }
    let mut reader = Reader {
        bytes: body,
        pos: 0,
    };
    if reader
        .take(MAGIC.len())
        .ok_or_else(|| corrupt("truncated"))?
        != MAGIC
    {
        return Err(corrupt("not an encoded-corpus cache"));
    }
    if reader.take(key.len()).ok_or_else(|| corrupt("truncated"))? != key.as_bytes() {
        return Err(corrupt("written for other inputs"));
    }
    let mut counts = [0usize; 7];
    for c in &mut counts {
        *c = reader.u64().ok_or_else(|| corrupt("truncated"))? as usize;
    }
    let mut stores = Vec::with_capacity(2);
    for _ in 0..2 {
        let n_offsets = reader.u64().ok_or_else(|| corrupt("truncated"))? as usize;
        let n_tokens = reader.u64().ok_or_else(|| corrupt("truncated"))? as usize;
        let mut offsets = Vec::with_capacity(n_offsets.min(body.len() / 8));
        for _ in 0..n_offsets {
            offsets.push(reader.u64().ok_or_else(|| corrupt("truncated"))?);
        }
        let mut tokens = Vec::with_capacity(n_tokens.min(body.len() / 4));
        for _ in 0..n_tokens {
            tokens.push(reader.u32().ok_or_else(|| corrupt("truncated"))?);
        }
        stores.push(TokenStore::from_parts(tokens, offsets).map_err(|r| corrupt(&r))?);
    }
    if reader.pos != body.len() {
        return Err(corrupt("trailing bytes"));
    }
    let target = stores.pop().ok_or_else(|| corrupt("missing target"))?;
    let source = stores.pop().ok_or_else(|| corrupt("missing source"))?;
    if source.len() != target.len() {
        return Err(corrupt("source and target counts differ"));
    }
    Ok(Some(CachedSplit {
        corpus: EncodedCorpus { source, target },
        read: ReadStats {
            read: counts[0],
            kept: counts[1],
            empty: counts[2],
        },
        filter: FilterStats {
            offered: counts[3],
            kept: counts[4],
            too_long: counts[5],
            bad_ratio: counts[6],
        },
    }))
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let slice = self.bytes.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(slice)
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split() -> CachedSplit {
        let mut corpus = EncodedCorpus::default();
        corpus.source.push(&[4, 5, 6]);
        corpus.target.push(&[7]);
        corpus.source.push(&[8]);
        corpus.target.push(&[9, 10]);
        CachedSplit {
            corpus,
            read: ReadStats {
                read: 3,
                kept: 2,
                empty: 1,
            },
            filter: FilterStats {
                offered: 2,
                kept: 2,
                too_long: 0,
                bad_ratio: 0,
            },
        }
    }

    #[test]
    fn round_trip_and_refusals() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = cache_path(dir.path(), "abc123");
        assert_eq!(load(&path, "abc123").expect("no file is fine"), None);
        store(&path, "abc123", &split()).expect("store");
        assert_eq!(load(&path, "abc123").expect("load"), Some(split()));
        assert!(matches!(
            load(&path, "abc124"),
            Err(DataError::CorruptCache { .. })
        ));

        let mut bytes = std::fs::read(&path).expect("read");
        bytes[20] ^= 1;
        std::fs::write(&path, &bytes).expect("write");
        assert!(matches!(
            load(&path, "abc123"),
            Err(DataError::CorruptCache { .. })
        ));
        std::fs::write(&path, &bytes[..10]).expect("write");
        assert!(matches!(
            load(&path, "abc123"),
            Err(DataError::CorruptCache { .. })
        ));
    }
}
