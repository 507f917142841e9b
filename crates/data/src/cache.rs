//! An on-disk cache of encoded corpora, keyed by a hash of everything that determines them
//! (the corpus files' bytes, the tokenizers, the length filter), so that a second run skips
//! tokenization. Each entry is a [`StoredCorpus`] directory; one that fails its checks is
//! refused and rebuilt.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::corpus::CorpusFiles;
use crate::error::DataError;
use crate::store::LengthFilter;
use crate::stored::StoredCorpus;
use crate::tokenizer::{SubwordTokenizer, hex};

/// Version 02: text spelling a special token (`</s>`) is encoded as text, not as the token.
/// Version 03: the stored-corpus directory layout of [`crate::stored`].
const MAGIC: &[u8; 8] = b"RSTENC03";

/// The cache key of an encoded split: SHA-256 over the format version, every corpus file's
/// bytes, both tokenizers' JSON, the filter settings and the id of the language tag starting
/// every source, if any (a bilingual split's key is as before tags existed).
pub fn cache_key(
    files: &CorpusFiles,
    source_tokenizer: &SubwordTokenizer,
    target_tokenizer: &SubwordTokenizer,
    filter: &LengthFilter,
    tag: Option<u32>,
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
    hasher.update(source_tokenizer.identity()?);
    hasher.update([0xff]);
    hasher.update(target_tokenizer.identity()?);
    hasher.update(
        serde_json::to_vec(filter).map_err(|e| DataError::InvalidSetting {
            key: "data.filter",
            reason: e.to_string(),
        })?,
    );
    if let Some(tag) = tag {
        hasher.update(b"tag");
        hasher.update(tag.to_le_bytes());
    }
    Ok(hex(&hasher.finalize()))
}

/// Where the cache entry for `key` lives in `dir`.
pub fn entry_dir(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("encoded-{}", &key[..32.min(key.len())]))
}

/// Opens the corpus cached under `key` in `entry`: `Ok(None)` if there is none, an error
/// ([`DataError::CorruptCache`]) if there is one that fails its checks.
pub fn load(entry: &Path, key: &str) -> Result<Option<StoredCorpus>, DataError> {
    if !entry.exists() {
        return Ok(None);
    }
    StoredCorpus::open(entry, key).map(Some)
}
