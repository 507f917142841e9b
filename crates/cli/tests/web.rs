//! Rosetta in the browser, tested in headless Chromium: the page in `web/` loads the WebAssembly
//! build (`web/pkg`, made by `scripts/build_web.sh`) and a bundle from `rosetta export --web`,
//! and must translate the quickstart test set exactly as `rosetta translate` does with the same
//! bundle, greedy and with beam 5; a person types a sentence and reads the translation from the
//! page; a damaged bundle is refused on the page in plain words.
//!
//! Ignored by default, since it needs `web/pkg` and Debian's `chromium` and `chromium-driver`;
//! `.ci/run` builds the module and runs it with `--ignored`. The model is the quickstart
//! configuration trained for 200 steps, or the run named by `ROSETTA_WEB_RUN`; the screenshot
//! goes to `ROSETTA_WEB_SCREENSHOT`, else to the target directory's scratch area.

mod common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::browser::Browser;
use common::{assert_success, client, repo, rosetta, translate_lines};
use serde_json::{Value, json};

/// `python3 -m http.server` serving a directory on a free loopback port; stopped when dropped.
struct StaticServer {
    child: Child,
    url: String,
}

impl StaticServer {
    fn start(dir: &Path) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new("python3")
            .args(["-m", "http.server", "--bind", "127.0.0.1", "--directory"])
            .arg(dir)
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start python3 -m http.server");
        let url = format!("http://127.0.0.1:{port}/");
        let started = Instant::now();
        while client().get(&url).call().is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the file server did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Self { child, url }
    }
}

impl Drop for StaticServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Copies directory `from` to `to` (files only, one level of subdirectories deep is enough here).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create directory");
    for entry in std::fs::read_dir(from).expect("read directory") {
        let entry = entry.expect("directory entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy file");
        }
    }
}

/// The quickstart configuration trained for 200 steps (about a minute on 2 cores), or the run
/// in `ROSETTA_WEB_RUN`.
fn quickstart_run(scratch: &Path) -> PathBuf {
    if let Some(run) = std::env::var_os("ROSETTA_WEB_RUN") {
        return PathBuf::from(run);
    }
    let run = scratch.join("quickstart");
    let out = Command::new(env!("CARGO_BIN_EXE_rosetta"))
        .current_dir(repo())
        .args([
            "train",
            "--config",
            "configs/quickstart.toml",
            "--max-steps",
            "200",
        ])
        .arg("--output")
        .arg(&run)
        .output()
        .expect("run rosetta train");
    assert_success(&out);
    run
}

/// `rosetta translate` of `lines` with the bundle and `beam`, one line per input line.
fn native(bundle: &Path, lines: &[String], beam: usize) -> Vec<String> {
    let out = translate_lines(bundle, lines, beam);
    assert_success(&out);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

const TRANSLATE_ALL: &str = r#"
const [lines, options, done] = arguments;
window.rosetta.ready
  .then((translator) => done(translator.translateBatch(lines, options).map((t) => t.translation)))
  .catch((error) => done({ error: String(error) }));
"#;

#[test]
#[ignore = "needs web/pkg (scripts/build_web.sh) and Debian's chromium and chromium-driver; .ci/run builds and runs it with --ignored"]
fn the_page_translates_the_quickstart_test_set_as_rosetta_translate_does() {
    let pkg = repo().join("web/pkg");
    assert!(
        pkg.join("rosetta_web_bg.wasm").is_file(),
        "{} is missing: run scripts/build_web.sh",
        pkg.display()
    );
    let scratch = tempfile::tempdir().expect("tempdir");
    let run = quickstart_run(scratch.path());
    let bundle = scratch.path().join("bundle");
    assert_success(&rosetta(&[
        "export",
        "--checkpoint",
        run.to_str().expect("utf-8"),
        "--web",
        "--output",
        bundle.to_str().expect("utf-8"),
    ]));
    let input = repo().join("data/numbers/test.en");
    let lines: Vec<String> = std::fs::read_to_string(&input)
        .expect("read the test set")
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(lines.len(), 500);

    // The site: the page, the module, the bundle, and a copy of the bundle with one byte of
    // its weights changed.
    let site = scratch.path().join("site");
    for name in ["index.html", "main.js"] {
        std::fs::create_dir_all(&site).expect("create the site");
        std::fs::copy(repo().join("web").join(name), site.join(name)).expect("copy the page");
    }
    copy_dir(&pkg, &site.join("pkg"));
    copy_dir(&bundle, &site.join("model"));
    copy_dir(&bundle, &site.join("damaged"));
    let weights = site.join("damaged/model.bpk");
    let mut bytes = std::fs::read(&weights).expect("read the weights");
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    std::fs::write(&weights, bytes).expect("damage the weights");
    let server = StaticServer::start(&site);
    let browser = Browser::start();

    browser.call("POST", "/url", json!({ "url": server.url }));
    for beam in [1, 5] {
        let expected = native(&bundle, &lines, beam);
        let got = browser.execute_async(TRANSLATE_ALL, json!([lines, { "beam": beam }]));
        let got: Vec<String> = serde_json::from_value(got.clone())
            .unwrap_or_else(|_| panic!("the page returned {got}"));
        assert_eq!(got.len(), expected.len(), "beam {beam}");
        let differing: Vec<usize> = (0..got.len()).filter(|&i| got[i] != expected[i]).collect();
        assert!(
            differing.is_empty(),
            "beam {beam}: {} of 500 differ from rosetta translate, first line {}: {:?} in the \
             browser, {:?} natively",
            differing.len(),
            differing[0] + 1,
            got[differing[0]],
            expected[differing[0]]
        );
    }

    // A person types a sentence and reads the translation (the page's default: beam 5).
    let sentence = "three hundred forty-two";
    let expected = native(&bundle, &[sentence.to_string()], 5).join("\n");
    browser.wait_until("the Translate button", |b| {
        b.execute(
            "return document.getElementById('translate').disabled;",
            json!([]),
        ) == Value::Bool(false)
    });
    browser.type_into("#source", sentence);
    browser.click("#translate");
    browser.wait_until("the translation", |b| b.text("#timing").contains("words/s"));
    assert_eq!(browser.text("#output"), expected);
    assert!(
        browser.text("#model").starts_with("en → fr"),
        "{}",
        browser.text("#model")
    );
    browser.screenshot("ROSETTA_WEB_SCREENSHOT", "web-page.png");

    // A damaged bundle: the page says what is wrong, naming the file.
    browser.call(
        "POST",
        "/url",
        json!({ "url": format!("{}?model=damaged/", server.url) }),
    );
    browser.wait_until("the error", |b| !b.text("#status").is_empty());
    let status = browser.text("#status");
    assert!(
        status.starts_with("The model could not be loaded: model bundle model.bpk: its SHA-256"),
        "{status}"
    );
}

#[test]
#[ignore = "needs web/pkg (scripts/build_web.sh) and Debian's chromium and chromium-driver; .ci/run builds and runs it with --ignored"]
fn the_page_translates_with_an_imported_marian_model_as_rosetta_translate_does() {
    let pkg = repo().join("web/pkg");
    assert!(
        pkg.join("rosetta_web_bg.wasm").is_file(),
        "{} is missing: run scripts/build_web.sh",
        pkg.display()
    );
    let scratch = tempfile::tempdir().expect("tempdir");
    let opus = scratch.path().join("opus");
    assert_success(&rosetta(&[
        "import-hf",
        repo()
            .join("crates/convert/tests/fixtures/marian/tiny")
            .to_str()
            .expect("utf-8"),
        "--output",
        opus.to_str().expect("utf-8"),
        "--source-lang",
        "en",
        "--target-lang",
        "fr",
    ]));
    let bundle = scratch.path().join("bundle");
    assert_success(&rosetta(&[
        "export",
        "--checkpoint",
        opus.to_str().expect("utf-8"),
        "--web",
        "--output",
        bundle.to_str().expect("utf-8"),
    ]));
    let lines: Vec<String> = std::fs::read_to_string(repo().join("data/numbers/test.en"))
        .expect("read the test set")
        .lines()
        .take(200)
        .map(str::to_string)
        .collect();
    let site = scratch.path().join("site");
    std::fs::create_dir_all(&site).expect("create the site");
    for name in ["index.html", "main.js"] {
        std::fs::copy(repo().join("web").join(name), site.join(name)).expect("copy the page");
    }
    copy_dir(&pkg, &site.join("pkg"));
    copy_dir(&bundle, &site.join("marian"));
    let server = StaticServer::start(&site);
    let browser = Browser::start();
    browser.call(
        "POST",
        "/url",
        json!({ "url": format!("{}?model=marian/", server.url) }),
    );
    // Greedy, and the model's own decoding (beam 4 under transformers' rules).
    for (beam, options) in [(1, json!({ "beam": 1 })), (4, json!({}))] {
        let expected = native(&bundle, &lines, beam);
        let got = browser.execute_async(TRANSLATE_ALL, json!([lines, options]));
        let got: Vec<String> = serde_json::from_value(got.clone())
            .unwrap_or_else(|_| panic!("the page returned {got}"));
        assert_eq!(got, expected, "beam {beam}");
    }
}
