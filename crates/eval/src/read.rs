//! Reading hypothesis and reference files: one segment per line.

use std::path::Path;

use rosetta_files::TextError;

use super::MetricError;

/// The segments of a UTF-8 text file (gzip if its name ends in `.gz`, as the corpus files of
/// a run config may), one per line: lines end with `\n` or `\r\n`, and a final line end is
/// optional (so `"a\n\n"` holds two segments, `"a"` and an empty one).
pub fn read_segments(path: &Path) -> Result<Vec<String>, MetricError> {
    rosetta_files::read_lines(path).map_err(|e| MetricError::Read {
        path: path.to_path_buf(),
        message: match e {
            TextError::Io { source, .. } => source.to_string(),
            TextError::InvalidUtf8 { line, .. } => format!("line {line} is not valid UTF-8"),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_with_empty_segments_and_crlf() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hyp.txt");
        std::fs::write(&path, "a b\r\n\nc\n").unwrap();
        assert_eq!(read_segments(&path).unwrap(), ["a b", "", "c"]);
        std::fs::write(&path, "").unwrap();
        assert!(read_segments(&path).unwrap().is_empty());
    }

    #[test]
    fn gzip_files_are_read_as_their_text() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ref.de.gz");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all("Ein Hund.\r\n\nZwei Katzen.".as_bytes())
            .unwrap();
        std::fs::write(&path, gz.finish().unwrap()).unwrap();
        assert_eq!(
            read_segments(&path).unwrap(),
            ["Ein Hund.", "", "Zwei Katzen."]
        );
    }

    #[test]
    fn invalid_utf8_names_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hyp.txt");
        std::fs::write(&path, b"fine\n\xff\n").unwrap();
        let err = read_segments(&path).unwrap_err().to_string();
        assert!(err.contains("hyp.txt") && err.contains("line 2"), "{err}");
    }

    #[test]
    fn missing_file_names_the_file() {
        let err = read_segments(Path::new("/nonexistent/hyp.txt")).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/hyp.txt"), "{err}");
    }
}
