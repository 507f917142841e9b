//! Shared by the serving tests: one small trained run per test binary, and a `rosetta serve`
//! child process on an ephemeral loopback port.

#![allow(dead_code)]

pub mod browser;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the `rosetta` binary to completion.
pub fn rosetta(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rosetta"))
        .args(args)
        .output()
        .expect("run rosetta")
}

/// Fails the test with the command's stderr unless it exited successfully.
pub fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A run directory with a small model trained for 40 steps on the numbers corpus (English to
/// French), made once per test binary.
pub fn trained_run() -> &'static Path {
    static RUN: OnceLock<PathBuf> = OnceLock::new();
    RUN.get_or_init(|| train_numbers("fixture", "en", "fr"))
}

/// The same as [`trained_run`] from French to English.
pub fn trained_run_reverse() -> &'static Path {
    static RUN: OnceLock<PathBuf> = OnceLock::new();
    RUN.get_or_init(|| train_numbers("fixture-fr-en", "fr", "en"))
}

/// A run directory with a small multilingual model (English→French and French→English in one
/// model, 40 steps on the numbers corpus), made once per test binary.
pub fn trained_multilingual_run() -> &'static Path {
    static RUN: OnceLock<PathBuf> = OnceLock::new();
    RUN.get_or_init(|| {
        let data = |n: &str| {
            format!(
                r#"[[data.directions]]
source_lang = "en"
target_lang = "fr"
train = {{ source = "{n}/valid.en", target = "{n}/valid.fr" }}
valid = {{ source = "{n}/test.en", target = "{n}/test.fr" }}
[[data.directions]]
source_lang = "fr"
target_lang = "en"
train = {{ source = "{n}/valid.fr", target = "{n}/valid.en" }}
valid = {{ source = "{n}/test.fr", target = "{n}/test.en" }}
"#
            )
        };
        train_small("fixture-multilingual", &data)
    })
}

/// Trains a small model on the numbers corpus from `source` to `target` for 40 steps, in the
/// target directory's scratch area (`NAME` there, one per test binary, remade each run).
fn train_numbers(name: &str, source: &str, target: &str) -> PathBuf {
    let data = |n: &str| {
        format!(
            r#"train = {{ source = "{n}/valid.{source}", target = "{n}/valid.{target}" }}
valid = {{ source = "{n}/test.{source}", target = "{n}/test.{target}" }}
"#
        )
    };
    train_small(name, &data)
}

/// Trains a small model for 40 steps on the corpora `data` gives for the numbers directory
/// (the `[data]` section's splits), in the target directory's scratch area (`NAME` there, one
/// per test binary, remade each run).
fn train_small(name: &str, data: &dyn Fn(&str) -> String) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{}-{name}", env!("CARGO_CRATE_NAME")));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("remove the old fixture");
    }
    std::fs::create_dir_all(&dir).expect("create the fixture directory");
    let numbers = repo().join("data/numbers");
    let config = dir.join("run.toml");
    std::fs::write(
        &config,
        format!(
            r#"output_dir = "{run}"
[model]
d_model = 32
n_heads = 2
d_ff = 64
n_encoder_layers = 1
n_decoder_layers = 1
max_positions = 32
[data]
tokenizer = {{ vocab_size = 300 }}
filter = {{ max_source_tokens = 30, max_target_tokens = 30 }}
batch = {{ by = "tokens", max_tokens = 800 }}
{data}
[training]
validate_every = 40
log_every = 10
[checkpoint]
every = 40
"#,
            run = dir.join("run").display(),
            data = data(&numbers.display().to_string()),
        ),
    )
    .expect("write config");
    let out = rosetta(&[
        "train",
        "--config",
        config.to_str().expect("utf-8"),
        "--max-steps",
        "40",
    ]);
    assert_success(&out);
    dir.join("run")
}

/// Copies the directory tree `from` into `to` (created if missing; files already there are
/// overwritten, others kept).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// The first `n` English sentences of the numbers test split.
pub fn test_sentences(n: usize) -> Vec<String> {
    std::fs::read_to_string(repo().join("data/numbers/test.en"))
        .expect("test split")
        .lines()
        .take(n)
        .map(str::to_string)
        .collect()
}

/// `rosetta translate --checkpoint CHECKPOINT --beam BEAM` of `lines` (through a file).
pub fn translate_lines(checkpoint: &Path, lines: &[String], beam: usize) -> Output {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("input.txt");
    std::fs::write(&input, lines.join("\n") + "\n").expect("write input");
    rosetta(&[
        "translate",
        "--checkpoint",
        checkpoint.to_str().expect("utf-8 path"),
        "--beam",
        &beam.to_string(),
        "--input",
        input.to_str().expect("utf-8 path"),
    ])
}

/// A `rosetta serve` child process; killed when dropped. Its standard error goes to a file
/// (see [`ServerProcess::stderr`]), printed if the test fails.
pub struct ServerProcess {
    pub child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    stdout: BufReader<ChildStdout>,
    stderr: PathBuf,
}

impl ServerProcess {
    /// Starts `rosetta serve --checkpoint RUN --port 0 EXTRA...` and waits for its address.
    pub fn start(run: &Path, extra: &[&str]) -> Self {
        let mut args = vec!["--checkpoint", run.to_str().expect("utf-8 path")];
        args.extend(extra);
        Self::start_with(&args)
    }

    /// Starts `rosetta serve --host 127.0.0.1 --port 0 ARGS...` and waits for its address.
    pub fn start_with(args: &[&str]) -> Self {
        static SERVERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = SERVERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let stderr = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "{}-server-{}-{n}.stderr",
            env!("CARGO_CRATE_NAME"),
            std::process::id()
        ));
        let mut child = Command::new(env!("CARGO_BIN_EXE_rosetta"))
            .arg("serve")
            .args(["--host", "127.0.0.1", "--port", "0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).expect("create the stderr file"))
            .spawn()
            .expect("start rosetta serve");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        // The models are listed first, then the address.
        let mut printed = String::new();
        let url = loop {
            let mut line = String::new();
            let read = stdout
                .read_line(&mut line)
                .expect("read the server's output");
            printed.push_str(&line);
            if let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://")) {
                break url.to_string();
            }
            if read == 0 {
                let _ = child.kill();
                let _ = child.wait();
                let errors = std::fs::read_to_string(&stderr).unwrap_or_default();
                panic!("the server exited without printing its address: {printed:?}\n{errors}");
            }
        };
        Self {
            child,
            url,
            stdout,
            stderr,
        }
    }

    /// What the server has written to standard error so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// The rest of the server's standard output, once it has exited.
    pub fn remaining_stdout(&mut self) -> String {
        let mut rest = String::new();
        let mut line = String::new();
        while self.stdout.read_line(&mut line).unwrap_or(0) > 0 {
            rest.push_str(&line);
            line.clear();
        }
        rest
    }

    /// Sends SIGTERM and waits (at most 60 s) for the process to exit; its exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -TERM failed");
        for _ in 0..600 {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the server did not stop within 60 s of SIGTERM");
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- the server's standard error ---\n{}", self.stderr());
        }
        let _ = std::fs::remove_file(&self.stderr);
    }
}

/// An HTTP client that returns 4xx/5xx responses instead of errors.
pub fn client() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .new_agent()
}

/// POSTs raw `body` to `url`; status and parsed JSON body.
pub fn post_raw(url: &str, body: &[u8]) -> (u16, serde_json::Value) {
    let mut response = client()
        .post(url)
        .header("content-type", "application/json")
        .send(body)
        .expect("request");
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().expect("body");
    let json = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("status {status}: body is not JSON ({e}): {text:?}"));
    (status, json)
}

/// POSTs `json` to `url`; status and parsed JSON body.
pub fn post(url: &str, json: &serde_json::Value) -> (u16, serde_json::Value) {
    post_raw(url, json.to_string().as_bytes())
}

/// GETs `url`; status and body text.
pub fn get(url: &str) -> (u16, String) {
    let mut response = client().get(url).call().expect("request");
    let status = response.status().as_u16();
    (status, response.body_mut().read_to_string().expect("body"))
}
