//! Reading hypothesis and reference files: one segment per line.

use std::path::Path;

use super::MetricError;

/// The segments of a UTF-8 text file, one per line: lines end with `\n` or `\r\n`, and a final
/// line end is optional (so `"a\n\n"` holds two segments, `"a"` and an empty one).
pub fn read_segments(path: &Path) -> Result<Vec<String>, MetricError> {
    let text = std::fs::read_to_string(path).map_err(|e| MetricError::Read {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    Ok(text.lines().map(str::to_owned).collect())
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
    fn missing_file_names_the_file() {
        let err = read_segments(Path::new("/nonexistent/hyp.txt")).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/hyp.txt"), "{err}");
    }
}
