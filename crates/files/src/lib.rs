//! # rosetta-files
//!
//! How Rosetta reads and writes files, written once:
//!
//! - [`text`]: text files read line by line, plain or gzip-compressed (a name ending in `.gz`),
//!   lines ending with `\n` or `\r\n`, UTF-8 checked line by line: what corpora, hypothesis and
//!   reference files are. The data pipeline, `rosetta eval`'s metrics and `rosetta translate`
//!   read through it (and the metrics need nothing more: no Burn).
//! - [`atomic`]: a file written whole or not at all ([`write_atomic`]), and a directory put in
//!   place whole or not at all ([`StagedDir`]): checkpoints, the encoded-corpus cache, imports
//!   and exports.
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path().join("hyp.txt");
//! rosetta_files::write_atomic(&path, "un\r\n\ndeux\n".as_bytes()).unwrap();
//! assert_eq!(rosetta_files::read_lines(&path).unwrap(), ["un", "", "deux"]);
//! ```

pub mod atomic;
pub mod text;

pub use atomic::{StagedDir, write_atomic};
pub use text::{TextError, buffered, open_text, read_line_bytes, read_lines};
