//! Writing to standard output when the reader may go away.
//!
//! `println!` panics when standard output is a pipe whose reader has exited (`rosetta eval …
//! | head -1`). The commands print with [`outln!`] instead: a closed pipe ends the process
//! quietly with status 0 (what the reader asked for is already written, as with ripgrep), and
//! any other write error ends it with a message and status 1. Bulk output goes through
//! [`Stdout`], whose closed pipe `main` recognises ([`is_stdout_closed`]) and ends quietly too.

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

/// Standard output for bulk writers (`rosetta translate`): a write to a pipe whose reader has
/// gone fails with an [`io::Error`] that carries [`StdoutClosed`], so that it is told apart from
/// a broken pipe anywhere else (a socket of `serve` or `bench-serve`), which stays an error.
pub struct Stdout;

impl io::Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        io::stdout().write(buf).map_err(mark_closed)
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stdout().flush().map_err(mark_closed)
    }
}

fn mark_closed(error: io::Error) -> io::Error {
    if error.kind() == io::ErrorKind::BrokenPipe {
        io::Error::new(io::ErrorKind::BrokenPipe, StdoutClosed)
    } else {
        error
    }
}

/// The reader of standard output has gone.
#[derive(Debug)]
pub struct StdoutClosed;

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("standard output was closed by its reader")
    }
}

impl std::error::Error for StdoutClosed {}

/// Whether `error` comes from writing to [`Stdout`] after its reader has gone (anywhere in its
/// chain). A broken pipe elsewhere (a network socket) does not count.
pub fn is_stdout_closed(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .and_then(|e| e.get_ref())
            .is_some_and(|inner| inner.is::<StdoutClosed>())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn only_a_closed_stdout_is_found_in_the_chain() {
        let closed = mark_closed(io::Error::new(io::ErrorKind::BrokenPipe, "pipe"));
        let wrapped = Err::<(), _>(closed)
            .context("writing translations")
            .context("translate failed")
            .unwrap_err();
        assert!(is_stdout_closed(&wrapped));
        // A broken pipe of a socket is a real failure.
        let socket = anyhow::Error::new(io::Error::new(io::ErrorKind::BrokenPipe, "socket"))
            .context("request 3");
        assert!(!is_stdout_closed(&socket));
        let other = anyhow::Error::new(mark_closed(io::Error::other("disk full")));
        assert!(!is_stdout_closed(&other));
    }
}
