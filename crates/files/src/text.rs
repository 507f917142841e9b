//! Text files read line by line, plain or gzip-compressed, naming the file and line of a fault.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;

/// What can go wrong reading a text file.
#[derive(Debug, thiserror::Error)]
pub enum TextError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file at fault.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A line is not valid UTF-8.
    #[error("{path}:{line}: invalid UTF-8")]
    InvalidUtf8 {
        /// The file at fault.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
    },
}

/// Wraps `reader` (the bytes of the file `path`) for buffered reading, decompressing it on the
/// fly if the name ends in `.gz`.
pub fn buffered<R: Read + Send + 'static>(path: &Path, reader: R) -> Box<dyn BufRead + Send> {
    let reader: Box<dyn Read + Send> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(MultiGzDecoder::new(reader))
    } else {
        Box::new(reader)
    };
    Box::new(BufReader::with_capacity(1 << 16, reader))
}

/// Opens a text file for buffered reading, decompressing it on the fly if its name ends in
/// `.gz`: what [`read_lines`] reads, and what a streaming reader (`rosetta translate`) uses.
pub fn open_text(path: &Path) -> Result<Box<dyn BufRead + Send>, TextError> {
    let file = File::open(path).map_err(|source| TextError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(buffered(path, file))
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
/// (`\n` or `\r\n`), checking UTF-8 line by line: a final line end is optional, so `"a\n\n"`
/// holds two lines, `"a"` and an empty one.
pub fn read_lines(path: &Path) -> Result<Vec<String>, TextError> {
    let mut reader = open_text(path)?;
    let mut lines = Vec::new();
    let mut buffer = Vec::new();
    while read_line_bytes(reader.as_mut(), &mut buffer).map_err(|source| TextError::Io {
        path: path.to_path_buf(),
        source,
    })? {
        let line =
            String::from_utf8(std::mem::take(&mut buffer)).map_err(|_| TextError::InvalidUtf8 {
                path: path.to_path_buf(),
                line: lines.len() + 1,
            })?;
        lines.push(line);
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_end_with_lf_or_crlf_and_the_last_end_is_optional() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.txt");
        for (text, lines) in [
            ("a b\r\n\nc\n", vec!["a b", "", "c"]),
            ("a\n\n", vec!["a", ""]),
            ("a", vec!["a"]),
            ("", vec![]),
            ("x\ry\n", vec!["x\ry"]),
        ] {
            std::fs::write(&path, text).expect("write");
            assert_eq!(read_lines(&path).expect("reads"), lines, "{text:?}");
        }
    }

    #[test]
    fn gzip_is_read_through_and_faults_name_the_file_and_line() {
        use std::io::Write;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("ref.de.gz");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all("Ein Hund.\r\n\nZwei Katzen.".as_bytes())
            .expect("compress");
        std::fs::write(&path, gz.finish().expect("finish")).expect("write");
        assert_eq!(
            read_lines(&path).expect("reads"),
            ["Ein Hund.", "", "Zwei Katzen."]
        );
        let bad = dir.path().join("hyp.txt");
        std::fs::write(&bad, b"fine\n\xff\n").expect("write");
        let error = read_lines(&bad).expect_err("invalid").to_string();
        assert!(error.contains("hyp.txt:2"), "{error}");
        let missing = read_lines(&dir.path().join("nope"))
            .expect_err("missing")
            .to_string();
        assert!(missing.contains("nope"), "{missing}");
    }
}
