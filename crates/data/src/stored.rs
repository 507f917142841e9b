//! An encoded corpus on disk, read by positioned reads so that training holds no per-pair data
//! in memory.
//!
//! A stored corpus is a directory of four little-endian arrays and a manifest:
//!
//! | file | content |
//! | --- | --- |
//! | `source.offsets`, `target.offsets` | `u64` × (pairs + 1): where each sentence starts |
//! | `source.tokens`, `target.tokens` | `u32` subword ids, sentence after sentence |
//! | `manifest.json` | format, version, cache key, counts, and each file's size and CRC-32C |
//!
//! It is written into a temporary directory, manifest last, and renamed into place, so a
//! reader never sees a half-written corpus; opening one checks every file against the
//! manifest (a damaged corpus is refused, never trusted).
//!
//! Reading a pair costs four positioned reads of the files (through the operating system's
//! page cache, not the process's memory): a few microseconds, where a training step takes
//! hundreds of milliseconds. Memory-mapping the arrays instead would count every page read in
//! an epoch as the process's resident memory, up to the size of the corpus.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::corpus::ReadStats;
use crate::error::DataError;
use crate::store::{EncodedCorpus, FilterStats, PairSource};

/// The `format` field of a stored corpus's manifest.
pub const FORMAT: &str = "rosetta-encoded";
/// The version of the layout described in this module.
pub const VERSION: u32 = 3;
/// The manifest's file name.
pub const MANIFEST: &str = "manifest.json";

const SIDES: [&str; 2] = ["source", "target"];

/// Size and checksum of one file of a stored corpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileDigest {
    /// Length in bytes.
    pub bytes: u64,
    /// CRC-32C (Castagnoli) of the whole file.
    pub crc32c: u32,
}

/// What `manifest.json` records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`VERSION`].
    pub version: u32,
    /// The cache key the corpus was encoded for (see [`crate::cache::cache_key`]).
    pub key: String,
    /// Pairs stored.
    pub pairs: u64,
    /// What reading the corpus files found.
    pub read: ReadStats,
    /// What length filtering dropped.
    pub filter: FilterStats,
    /// Every array file's size and checksum, by file name.
    pub files: BTreeMap<String, FileDigest>,
}

struct Side {
    offsets: File,
    tokens: File,
    offsets_path: PathBuf,
    tokens_path: PathBuf,
    total_tokens: u64,
    /// Offsets in `offsets`: pairs + 1.
    offset_count: u64,
}

/// An encoded corpus in a directory (see the module documentation), opened and verified.
pub struct StoredCorpus {
    dir: PathBuf,
    manifest: Manifest,
    sides: [Side; 2],
}

impl std::fmt::Debug for StoredCorpus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredCorpus")
            .field("dir", &self.dir)
            .field("pairs", &self.manifest.pairs)
            .finish()
    }
}

impl StoredCorpus {
    /// Opens the corpus in `dir`, written for cache key `key`, checking every file's size and
    /// checksum against the manifest, and the manifest's counts against each other: anything
    /// amiss is [`DataError::CorruptCache`]. The files checked are the files then read.
    pub fn open(dir: &Path, key: &str) -> Result<Self, DataError> {
        let corrupt = |reason: String| DataError::CorruptCache {
            path: dir.to_path_buf(),
            reason,
        };
        let manifest_path = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&manifest_path)
            .map_err(|e| corrupt(format!("{MANIFEST}: {e}")))?;
        let manifest: Manifest =
            serde_json::from_str(&text).map_err(|e| corrupt(format!("{MANIFEST}: {e}")))?;
        if manifest.format != FORMAT || manifest.version != VERSION {
            return Err(corrupt(format!(
                "{MANIFEST} describes {} version {}, not {FORMAT} version {VERSION}",
                manifest.format, manifest.version
            )));
        }
        if manifest.key != key {
            return Err(corrupt("written for other inputs".into()));
        }
        Self::open_with(dir, manifest, true)
    }

    /// Opens the files of `dir` described by `manifest`; with `verify`, each file's checksum is
    /// computed (through the handle kept for reading) and compared with the manifest's.
    fn open_with(dir: &Path, manifest: Manifest, verify: bool) -> Result<Self, DataError> {
        let corrupt = |reason: String| DataError::CorruptCache {
            path: dir.to_path_buf(),
            reason,
        };
        let (r, f) = (&manifest.read, &manifest.filter);
        let consistent = f.kept as u64 == manifest.pairs
            && r.kept.checked_add(r.empty) == Some(r.read)
            && r.kept == f.offered
            && f.kept
                .checked_add(f.too_long)
                .and_then(|n| n.checked_add(f.bad_ratio))
                == Some(f.offered);
        if !consistent {
            return Err(corrupt(format!(
                "{MANIFEST}'s counts disagree ({} pairs; read {r:?}; filter {f:?})",
                manifest.pairs
            )));
        }
        let offsets_bytes = manifest
            .pairs
            .checked_add(1)
            .and_then(|n| n.checked_mul(8))
            .ok_or_else(|| corrupt(format!("{MANIFEST} claims {} pairs", manifest.pairs)))?;
        let mut sides = Vec::with_capacity(2);
        for side in SIDES {
            let offsets_path = dir.join(format!("{side}.offsets"));
            let tokens_path = dir.join(format!("{side}.tokens"));
            let mut handles = Vec::with_capacity(2);
            for path in [&offsets_path, &tokens_path] {
                let name = file_name(path);
                let expected = manifest
                    .files
                    .get(&name)
                    .ok_or_else(|| corrupt(format!("{MANIFEST} lists no {name}")))?;
                let mut file = File::open(path).map_err(|e| corrupt(format!("{name}: {e}")))?;
                let found = if verify {
                    digest(&mut file).map_err(|e| corrupt(format!("{name}: {e}")))?
                } else {
                    let bytes = file
                        .metadata()
                        .map_err(|e| corrupt(format!("{name}: {e}")))?
                        .len();
                    FileDigest {
                        bytes,
                        crc32c: expected.crc32c,
                    }
                };
                if found != *expected {
                    return Err(corrupt(format!(
                        "{name} has {} bytes with CRC-32C {:08x}; the manifest says {} bytes with {:08x}",
                        found.bytes, found.crc32c, expected.bytes, expected.crc32c
                    )));
                }
                handles.push((file, found.bytes));
            }
            let (tokens, tokens_bytes) = handles.pop().ok_or_else(|| corrupt("no ids".into()))?;
            let (offsets, found_offsets_bytes) =
                handles.pop().ok_or_else(|| corrupt("no offsets".into()))?;
            if found_offsets_bytes != offsets_bytes || tokens_bytes % 4 != 0 {
                return Err(corrupt(format!(
                    "{side} arrays of {found_offsets_bytes} and {tokens_bytes} bytes do not hold {} pairs",
                    manifest.pairs
                )));
            }
            let mut ends = [0u8; 8];
            read_exact_at(&offsets, &mut ends, 0).map_err(DataError::io(&offsets_path))?;
            let first = u64::from_le_bytes(ends);
            read_exact_at(&offsets, &mut ends, offsets_bytes - 8)
                .map_err(DataError::io(&offsets_path))?;
            let last = u64::from_le_bytes(ends);
            if first != 0 || last != tokens_bytes / 4 {
                return Err(corrupt(format!(
                    "{side} offsets run from {first} to {last} over {} tokens",
                    tokens_bytes / 4
                )));
            }
            sides.push(Side {
                offsets,
                tokens,
                offsets_path,
                tokens_path,
                total_tokens: last,
                offset_count: offsets_bytes / 8,
            });
        }
        let target = sides
            .pop()
            .ok_or_else(|| corrupt("no target side".into()))?;
        let source = sides
            .pop()
            .ok_or_else(|| corrupt("no source side".into()))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            manifest,
            sides: [source, target],
        })
    }

    /// Another handle on the same files (no second check): for a reader that must own one.
    pub fn try_clone(&self) -> Result<Self, DataError> {
        let clone = |side: &Side| -> Result<Side, DataError> {
            Ok(Side {
                offsets: side
                    .offsets
                    .try_clone()
                    .map_err(DataError::io(&side.offsets_path))?,
                tokens: side
                    .tokens
                    .try_clone()
                    .map_err(DataError::io(&side.tokens_path))?,
                offsets_path: side.offsets_path.clone(),
                tokens_path: side.tokens_path.clone(),
                total_tokens: side.total_tokens,
                offset_count: side.offset_count,
            })
        };
        Ok(Self {
            dir: self.dir.clone(),
            manifest: self.manifest.clone(),
            sides: [clone(&self.sides[0])?, clone(&self.sides[1])?],
        })
    }

    /// The directory the corpus is stored in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The manifest (counts and checksums).
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.manifest.pairs as usize
    }

    /// Whether there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.manifest.pairs == 0
    }

    /// Bytes on disk (the four arrays).
    pub fn disk_bytes(&self) -> u64 {
        self.manifest.files.values().map(|f| f.bytes).sum()
    }

    /// The whole corpus in memory (for validation and test splits, and for tests).
    pub fn load(&self) -> Result<EncodedCorpus, DataError> {
        let mut corpus = EncodedCorpus::default();
        let (mut source, mut target) = (Vec::new(), Vec::new());
        for i in 0..self.len() {
            self.read_pair(i, &mut source, &mut target)?;
            corpus.source.push(&source);
            corpus.target.push(&target);
        }
        Ok(corpus)
    }

    /// Start and end of sentence `index` on side `side`, checked against the token array.
    fn span(&self, side: usize, index: usize) -> Result<(u64, u64), DataError> {
        if index >= self.len() {
            return Err(DataError::IndexOutOfRange {
                index,
                len: self.len(),
            });
        }
        let s = &self.sides[side];
        let mut bytes = [0u8; 16];
        read_exact_at(&s.offsets, &mut bytes, 8 * index as u64)
            .map_err(DataError::io(&s.offsets_path))?;
        let (head, tail) = bytes.split_at(8);
        let start = u64::from_le_bytes(head.try_into().unwrap_or_default());
        let end = u64::from_le_bytes(tail.try_into().unwrap_or_default());
        if start > end || end > s.total_tokens {
            return Err(DataError::CorruptCache {
                path: s.offsets_path.clone(),
                reason: format!("sentence {index} spans {start}..{end}"),
            });
        }
        Ok((start, end))
    }

    fn read_side(&self, side: usize, index: usize, out: &mut Vec<u32>) -> Result<(), DataError> {
        let (start, end) = self.span(side, index)?;
        let s = &self.sides[side];
        let mut bytes = vec![0u8; 4 * (end - start) as usize];
        read_exact_at(&s.tokens, &mut bytes, 4 * start).map_err(DataError::io(&s.tokens_path))?;
        out.clear();
        out.extend(
            bytes
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        );
        Ok(())
    }
}

impl PairSource for StoredCorpus {
    fn pair_count(&self) -> usize {
        self.len()
    }

    fn read_pair(
        &self,
        index: usize,
        source: &mut Vec<u32>,
        target: &mut Vec<u32>,
    ) -> Result<(), DataError> {
        self.read_side(0, index, source)?;
        self.read_side(1, index, target)
    }

    fn for_each_framed_len(
        &self,
        f: &mut dyn FnMut(usize, usize, usize) -> Result<(), DataError>,
    ) -> Result<(), DataError> {
        // Both offset arrays, block by block through the handles that were checked.
        let [source, target] = &self.sides;
        let mut streams = [OffsetStream::new(source), OffsetStream::new(target)];
        let mut previous = [0u64; 2];
        for (stream, start) in streams.iter_mut().zip(previous.iter_mut()) {
            *start = stream.next()?;
        }
        for i in 0..self.len() {
            let mut lens = [0usize; 2];
            for (side, stream) in streams.iter_mut().enumerate() {
                let end = stream.next()?;
                let Some(len) = end.checked_sub(previous[side]) else {
                    return Err(DataError::CorruptCache {
                        path: self.sides[side].offsets_path.clone(),
                        reason: format!("sentence {i} ends before it starts"),
                    });
                };
                lens[side] = len as usize + 1;
                previous[side] = end;
            }
            f(i, lens[0], lens[1])?;
        }
        Ok(())
    }
}

/// The offsets of one side, read in order in blocks of 64 Ki offsets by positioned reads.
struct OffsetStream<'a> {
    side: &'a Side,
    /// Index of the first offset in `block`.
    start: u64,
    block: Vec<u8>,
    /// Offsets of `block` already returned.
    used: usize,
}

impl<'a> OffsetStream<'a> {
    const BLOCK: usize = 1 << 16;

    fn new(side: &'a Side) -> Self {
        Self {
            side,
            start: 0,
            block: Vec::new(),
            used: 0,
        }
    }

    fn next(&mut self) -> Result<u64, DataError> {
        if self.used * 8 == self.block.len() {
            self.start += self.used as u64;
            self.used = 0;
            let available = self.side.offset_count.saturating_sub(self.start);
            let count = (Self::BLOCK as u64).min(available) as usize;
            if count == 0 {
                return Err(DataError::CorruptCache {
                    path: self.side.offsets_path.clone(),
                    reason: "fewer offsets than the manifest says".into(),
                });
            }
            self.block.resize(8 * count, 0);
            read_exact_at(&self.side.offsets, &mut self.block, 8 * self.start)
                .map_err(DataError::io(&self.side.offsets_path))?;
        }
        let at = 8 * self.used;
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&self.block[at..at + 8]);
        self.used += 1;
        Ok(u64::from_le_bytes(bytes))
    }
}

struct SideWriter {
    offsets: CheckedWriter,
    tokens: CheckedWriter,
    written: u64,
}

/// A file being written, with its size and CRC-32C kept as it grows.
struct CheckedWriter {
    path: PathBuf,
    out: BufWriter<File>,
    digest: FileDigest,
}

impl CheckedWriter {
    fn create(path: PathBuf) -> Result<Self, DataError> {
        let file = File::create(&path).map_err(DataError::io(&path))?;
        Ok(Self {
            out: BufWriter::with_capacity(1 << 20, file),
            path,
            digest: FileDigest {
                bytes: 0,
                crc32c: 0,
            },
        })
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), DataError> {
        self.digest.crc32c = crc32c::crc32c_append(self.digest.crc32c, bytes);
        self.digest.bytes += bytes.len() as u64;
        self.out.write_all(bytes).map_err(DataError::io(&self.path))
    }

    fn finish(self) -> Result<(String, FileDigest), DataError> {
        let file = self
            .out
            .into_inner()
            .map_err(|e| DataError::io(&self.path)(e.into_error()))?;
        file.sync_all().map_err(DataError::io(&self.path))?;
        Ok((file_name(&self.path), self.digest))
    }
}

/// Writes a [`StoredCorpus`] pair by pair into a temporary directory beside its destination;
/// [`finish`](Self::finish) puts it in place. Dropped unfinished (an error, an interrupted
/// run), it removes its temporary directory: nothing half-written is left to be trusted.
pub struct StoredCorpusWriter {
    dir: PathBuf,
    staged: rosetta_files::StagedDir,
    key: String,
    sides: Vec<SideWriter>,
    pairs: u64,
    buffer: Vec<u8>,
}

impl StoredCorpusWriter {
    /// Starts writing the corpus that will live in `dir` under cache key `key`.
    pub fn create(dir: &Path, key: &str) -> Result<Self, DataError> {
        let parent = dir
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(DataError::io(parent))?;
        let name = file_name(dir);
        remove_abandoned(parent, &name);
        let staged = rosetta_files::StagedDir::new(dir).map_err(DataError::io(dir))?;
        let mut writer = Self {
            dir: dir.to_path_buf(),
            staged,
            key: key.to_string(),
            sides: Vec::with_capacity(2),
            pairs: 0,
            buffer: Vec::new(),
        };
        for side in SIDES {
            let mut offsets =
                CheckedWriter::create(writer.staged.path().join(format!("{side}.offsets")))?;
            offsets.write(&0u64.to_le_bytes())?;
            let tokens =
                CheckedWriter::create(writer.staged.path().join(format!("{side}.tokens")))?;
            writer.sides.push(SideWriter {
                offsets,
                tokens,
                written: 0,
            });
        }
        Ok(writer)
    }

    /// Appends one pair (unframed subword ids).
    pub fn push(&mut self, source: &[u32], target: &[u32]) -> Result<(), DataError> {
        for (side, ids) in self.sides.iter_mut().zip([source, target]) {
            self.buffer.clear();
            self.buffer.extend(ids.iter().flat_map(|t| t.to_le_bytes()));
            side.tokens.write(&self.buffer)?;
            side.written += ids.len() as u64;
            side.offsets.write(&side.written.to_le_bytes())?;
        }
        self.pairs += 1;
        Ok(())
    }

    /// Pairs written so far.
    pub fn pairs(&self) -> u64 {
        self.pairs
    }

    /// Writes the manifest, moves the corpus into place (replacing what was there) and opens it.
    pub fn finish(
        mut self,
        read: ReadStats,
        filter: FilterStats,
    ) -> Result<StoredCorpus, DataError> {
        let mut files = BTreeMap::new();
        for side in std::mem::take(&mut self.sides) {
            for file in [side.offsets, side.tokens] {
                let (name, digest) = file.finish()?;
                files.insert(name, digest);
            }
        }
        let manifest = Manifest {
            format: FORMAT.to_string(),
            version: VERSION,
            key: self.key.clone(),
            pairs: self.pairs,
            read,
            filter,
            files,
        };
        let json =
            serde_json::to_string_pretty(&manifest).map_err(|e| DataError::CorruptCache {
                path: self.staged.path().to_path_buf(),
                reason: format!("writing {MANIFEST}: {e}"),
            })?;
        crate::atomic::write(&self.staged.path().join(MANIFEST), json.as_bytes())?;
        // Something may be at the destination: the same corpus, finished meanwhile by another
        // run sharing the cache (used, ours dropped), or an entry that was refused (moved
        // aside and replaced).
        let (dir, key) = (self.dir.clone(), self.key.clone());
        let ours = self
            .staged
            .commit_unless(|existing| StoredCorpus::open(existing, &key).is_ok())
            .map_err(DataError::io(&dir))?;
        if !ours {
            return StoredCorpus::open(&dir, &key);
        }
        // Just written and checksummed while writing: only the sizes are checked again.
        StoredCorpus::open_with(&self.dir, manifest, false)
    }
}

/// Removes what interrupted runs left beside entry `name`: entries moved aside to be replaced
/// (`.NAME.stale-*`), and temporary directories (`.NAME.partial-PID-*`) of processes that no
/// longer run and that nothing has written to for ten minutes (a writer in another PID
/// namespace is alive but invisible in `/proc`; a live writer writes every few seconds).
/// Where `/proc` does not exist, temporary directories are left alone.
fn remove_abandoned(parent: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let can_check = Path::new("/proc/self").exists();
    let (partial, stale) = (format!(".{name}.partial-"), format!(".{name}.stale-"));
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        if file.starts_with(&stale) {
            let _ = std::fs::remove_dir_all(entry.path());
            continue;
        }
        let Some(rest) = file.strip_prefix(&partial) else {
            continue;
        };
        let pid = rest.split('-').next().unwrap_or_default();
        let dead =
            can_check && pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists();
        if dead && untouched_for(&entry.path(), std::time::Duration::from_secs(600)) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether nothing in directory `dir` was modified within `age`.
fn untouched_for(dir: &Path, age: std::time::Duration) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    let now = std::time::SystemTime::now();
    entries.flatten().all(|e| {
        e.metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|elapsed| elapsed >= age)
    })
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Size and CRC-32C of a file, read as a stream from its start (through the page cache, not
/// into memory).
fn digest(file: &mut File) -> std::io::Result<FileDigest> {
    let mut buffer = vec![0u8; 1 << 20];
    let mut digest = FileDigest {
        bytes: 0,
        crc32c: 0,
    };
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            return Ok(digest);
        }
        digest.crc32c = crc32c::crc32c_append(digest.crc32c, &buffer[..n]);
        digest.bytes += n as u64;
    }
}

/// Reads exactly `buf.len()` bytes at `offset` without moving a shared cursor (so one open
/// file serves every thread).
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < buf.len() {
            let n = std::os::windows::fs::FileExt::seek_read(
                file,
                &mut buf[done..],
                offset + done as u64,
            )?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            done += n;
        }
        Ok(())
    }
    #[cfg(not(any(unix, windows)))]
    {
        let _ = (file, buf, offset);
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "positioned reads are not available on this platform",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, key: &str, pairs: &[(&[u32], &[u32])]) -> StoredCorpus {
        let mut writer = StoredCorpusWriter::create(dir, key).expect("create");
        for (s, t) in pairs {
            writer.push(s, t).expect("push");
        }
        let read = ReadStats {
            read: pairs.len() + 1,
            kept: pairs.len(),
            empty: 1,
        };
        let filter = FilterStats {
            offered: pairs.len(),
            kept: pairs.len(),
            ..FilterStats::default()
        };
        writer.finish(read, filter).expect("finish")
    }

    #[test]
    fn pairs_read_back_by_index_and_as_a_stream() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("encoded-abc");
        let pairs: [(&[u32], &[u32]); 3] = [(&[4, 5, 6], &[7]), (&[], &[9, 10]), (&[8], &[])];
        let stored = write(&dir, "abc", &pairs);
        assert_eq!(stored.len(), 3);
        assert_eq!(stored.manifest().read.empty, 1);
        let (mut s, mut t) = (Vec::new(), Vec::new());
        for (i, (es, et)) in pairs.iter().enumerate() {
            stored.read_pair(i, &mut s, &mut t).expect("read");
            assert_eq!((s.as_slice(), t.as_slice()), (*es, *et));
        }
        assert!(matches!(
            stored.read_pair(3, &mut s, &mut t),
            Err(DataError::IndexOutOfRange { index: 3, len: 3 })
        ));
        let mut lens = Vec::new();
        stored
            .for_each_framed_len(&mut |i, a, b| {
                lens.push((i, a, b));
                Ok(())
            })
            .expect("stream");
        assert_eq!(lens, vec![(0, 4, 2), (1, 1, 3), (2, 2, 1)]);
        let memory = stored.load().expect("load");
        assert_eq!(memory.source.get(0), &[4, 5, 6]);
        assert_eq!(memory.target.get(1), &[9, 10]);
        // Reopened: the same corpus.
        let again = StoredCorpus::open(&dir, "abc").expect("reopen");
        assert_eq!(again.load().expect("load"), memory);
        // Nothing temporary is left beside it.
        let names: Vec<String> = std::fs::read_dir(root.path())
            .expect("ls")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["encoded-abc".to_string()]);
    }

    #[test]
    fn damage_of_any_kind_is_refused() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("encoded-abc");
        write(&dir, "abc", &[(&[4, 5, 6], &[7]), (&[8], &[9, 10])]);
        assert!(matches!(
            StoredCorpus::open(&dir, "abd"),
            Err(DataError::CorruptCache { .. })
        ));
        for file in ["source.tokens", "target.offsets"] {
            let path = dir.join(file);
            let original = std::fs::read(&path).expect("read");
            let mut flipped = original.clone();
            flipped[original.len() / 2] ^= 0x10;
            for damaged in [flipped, original[..original.len() - 1].to_vec()] {
                std::fs::write(&path, &damaged).expect("damage");
                let err = StoredCorpus::open(&dir, "abc").expect_err(file);
                assert!(
                    matches!(err, DataError::CorruptCache { .. }),
                    "{file}: {err}"
                );
            }
            std::fs::write(&path, &original).expect("restore");
            StoredCorpus::open(&dir, "abc").expect("restored");
        }
        // The manifest: cut short, or with counts that disagree (a pair count out of range
        // included), it is refused, never trusted.
        let path = dir.join(MANIFEST);
        let original = std::fs::read_to_string(&path).expect("read");
        for damaged in [
            original[..original.len() / 2].to_string(),
            original.replacen("\"pairs\": 2", "\"pairs\": 1", 1),
            original.replacen("\"pairs\": 2", "\"pairs\": 18446744073709551615", 1),
            original.replacen("\"offered\": 2", "\"offered\": 3", 1),
            original.replacen("\"empty\": 1", "\"empty\": 0", 1),
        ] {
            assert_ne!(damaged, original, "the damage must change the manifest");
            std::fs::write(&path, &damaged).expect("damage");
            let err = StoredCorpus::open(&dir, "abc").expect_err("damaged manifest");
            assert!(matches!(err, DataError::CorruptCache { .. }), "{err}");
        }
        std::fs::write(&path, &original).expect("restore");
        StoredCorpus::open(&dir, "abc").expect("restored");
        std::fs::remove_file(dir.join("target.tokens")).expect("remove");
        assert!(matches!(
            StoredCorpus::open(&dir, "abc"),
            Err(DataError::CorruptCache { .. })
        ));
    }

    #[test]
    fn two_writers_of_one_entry_both_end_with_a_good_corpus_and_nothing_left_over() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("encoded-abc");
        let mut first = StoredCorpusWriter::create(&dir, "abc").expect("create");
        let mut second = StoredCorpusWriter::create(&dir, "abc").expect("create");
        for writer in [&mut first, &mut second] {
            writer.push(&[4, 5], &[6]).expect("push");
        }
        let (read, filter) = (ReadStats::all_kept(1), FilterStats::all_kept(1));
        let a = first.finish(read, filter).expect("first");
        // The second finds the first's corpus in place: it uses it and drops its own.
        let b = second.finish(read, filter).expect("second");
        assert_eq!(a.load().expect("a"), b.load().expect("b"));
        let names: Vec<String> = std::fs::read_dir(root.path())
            .expect("ls")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["encoded-abc".to_string()]);
        // A refused entry in place (damaged) is moved aside and replaced; nothing stale stays.
        std::fs::write(dir.join("source.tokens"), b"damaged").expect("damage");
        let mut third = StoredCorpusWriter::create(&dir, "abc").expect("create");
        third.push(&[4, 5], &[6]).expect("push");
        third.finish(read, filter).expect("third");
        StoredCorpus::open(&dir, "abc").expect("replaced");
        let names: Vec<String> = std::fs::read_dir(root.path())
            .expect("ls")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["encoded-abc".to_string()]);
    }

    #[test]
    fn an_unfinished_writer_leaves_nothing_and_a_finished_one_replaces() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("encoded-abc");
        write(&dir, "abc", &[(&[4], &[5])]);
        {
            let mut writer = StoredCorpusWriter::create(&dir, "abc").expect("create");
            writer.push(&[1, 2], &[3]).expect("push");
            // Dropped: an error or an interruption while encoding.
        }
        let names: Vec<String> = std::fs::read_dir(root.path())
            .expect("ls")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["encoded-abc".to_string()]);
        assert_eq!(StoredCorpus::open(&dir, "abc").expect("kept").len(), 1);
        // An entry for other inputs in place is refused, so replaced.
        let replaced = write(&dir, "abd", &[(&[6], &[7]), (&[8], &[9])]);
        assert_eq!(replaced.len(), 2);
        assert_eq!(StoredCorpus::open(&dir, "abd").expect("replaced").len(), 2);
    }
}
