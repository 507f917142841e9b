//! Writing to standard output when the reader may go away.
//!
//! `println!` panics when standard output is a pipe whose reader has exited (`rosetta eval …
//! | head -1`). The commands print with [`outln!`] instead: a closed pipe ends the process
//! quietly with status 0 (what the reader asked for is already written, as with ripgrep), and
//! any other write error ends it with a message and status 1.

use std::io;

/// `println!` to standard output that ends the process quietly when the reader has gone
/// (see the module documentation).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(error) = writeln!(std::io::stdout(), $($arg)*) {
            $crate::output::write_failed(&error)
        }
    }};
}
pub(crate) use outln;

/// Ends the process after a failed write to standard output: quietly (status 0) if the reader
/// has gone, else with the error on standard error (status 1).
pub fn write_failed(error: &io::Error) -> ! {
    if error.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("Error: cannot write to standard output: {error}");
    std::process::exit(1);
}

/// Whether `error` comes from writing to a pipe whose reader has gone (anywhere in its chain).
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn a_broken_pipe_is_found_anywhere_in_the_chain() {
        let pipe = io::Error::new(io::ErrorKind::BrokenPipe, "pipe");
        let wrapped = Err::<(), _>(pipe)
            .context("writing translations")
            .context("translate failed")
            .unwrap_err();
        assert!(is_broken_pipe(&wrapped));
        let other = anyhow::Error::new(io::Error::other("disk full")).context("writing");
        assert!(!is_broken_pipe(&other));
    }
}
