//! The translation page in a real browser: headless Chromium, driven over WebDriver by
//! chromedriver, opens the page of a running `rosetta serve`, types a sentence, clicks
//! Translate, reads the translation from the DOM (it must be what `rosetta translate` gives),
//! checks the n-best table and the attention heatmap, and saves a screenshot.
//!
//! Ignored by default, since it needs Debian's `chromium` and `chromium-driver`; `.ci/run`
//! installs them and runs it with `--ignored`. The screenshot goes to `ROSETTA_SCREENSHOT`
//! if set, else to the target directory's scratch area. `ROSETTA_BROWSER_RUN` names a run to
//! serve instead of the small one the test trains (the README's screenshot uses the quickstart).

mod common;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use common::{ServerProcess, assert_success, client, rosetta, trained_run};
use serde_json::{Value, json};

/// The W3C WebDriver key of an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A chromedriver process and one browser session on it; both ended when dropped.
struct Browser {
    driver: Child,
    base: String,
    session: String,
}

impl Browser {
    fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let driver =
            Command::new(std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".into()))
                .arg(format!("--port={port}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start chromedriver (apt-get install chromium-driver)");
        let base = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        while client().get(&format!("{base}/status")).call().is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "chromedriver did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let binary = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
        let mut browser = Self {
            driver,
            base,
            session: String::new(),
        };
        let created = browser.call(
            "POST",
            "/session",
            json!({ "capabilities": { "alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": binary,
                    "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                             "--disable-dev-shm-usage", "--window-size=1100,1000"]
                }
            }}}),
        );
        browser.session = created["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {created}"))
            .to_string();
        browser
    }

    /// One WebDriver command; its `value`.
    fn call(&self, method: &str, path: &str, body: Value) -> Value {
        let url = if path == "/session" {
            format!("{}{path}", self.base)
        } else {
            format!("{}/session/{}{path}", self.base, self.session)
        };
        let agent = client();
        let mut response = match method {
            "GET" => agent.get(&url).call(),
            "DELETE" => agent.delete(&url).call(),
            _ => agent.post(&url).send_json(body),
        }
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = response.status().as_u16();
        let json: Value = response.body_mut().read_json().expect("WebDriver JSON");
        assert_eq!(status, 200, "{method} {path}: {json}");
        json["value"].clone()
    }

    fn element(&self, css: &str) -> String {
        let found = self.call(
            "POST",
            "/element",
            json!({ "using": "css selector", "value": css }),
        );
        found[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {found}"))
            .to_string()
    }

    fn text(&self, css: &str) -> String {
        let id = self.element(css);
        self.call("GET", &format!("/element/{id}/text"), Value::Null)
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Waits (at most 60 s) until `condition` holds.
    fn wait_until(&self, what: &str, condition: impl Fn(&Self) -> bool) {
        let started = Instant::now();
        while !condition(self) {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "timed out waiting for {what}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = client()
                .delete(&format!("{}/session/{}", self.base, self.session))
                .call();
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

#[test]
#[ignore = "needs Debian's chromium and chromium-driver; .ci/run installs them and runs this test with --ignored"]
fn a_person_translates_on_the_page() {
    let own_run;
    let run = match std::env::var_os("ROSETTA_BROWSER_RUN") {
        Some(path) => {
            own_run = PathBuf::from(path);
            own_run.as_path()
        }
        None => trained_run(),
    };
    let sentence = "three hundred forty-two";
    // What the offline translator gives, with the server's search.
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("input.en");
    std::fs::write(&input, format!("{sentence}\n")).expect("write input");
    let offline = rosetta(&[
        "translate",
        "--checkpoint",
        run.to_str().expect("utf-8"),
        "--beam",
        "4",
        "--input",
        input.to_str().expect("utf-8"),
    ]);
    assert_success(&offline);
    let expected = String::from_utf8_lossy(&offline.stdout)
        .trim_end()
        .to_string();

    let server = ServerProcess::start(run, &["--beam", "4"]);
    let browser = Browser::start();
    browser.call("POST", "/url", json!({ "url": format!("{}/", server.url) }));
    browser.wait_until("the model line", |b| b.text("#model").contains("en → fr"));

    let source = browser.element("#source");
    browser.call(
        "POST",
        &format!("/element/{source}/value"),
        json!({ "text": sentence }),
    );
    let button = browser.element("#translate");
    browser.call("POST", &format!("/element/{button}/click"), json!({}));
    browser.wait_until("the translation", |b| {
        b.text("#status").starts_with("Done in")
    });

    assert_eq!(browser.text("#output"), expected);
    // The n-best table: the best (row 1) and the page's default of 3 alternatives.
    let rows = browser.call(
        "POST",
        "/elements",
        json!({ "using": "css selector", "value": "#nbest tr" }),
    );
    assert_eq!(rows.as_array().map(Vec::len), Some(4), "{rows}");
    // The heatmap was drawn: its canvas is wider than the 10-pixel placeholder.
    let width = browser.call(
        "POST",
        "/execute/sync",
        json!({
            "script": "return document.getElementById('heatmap').width;", "args": []
        }),
    );
    assert!(width.as_u64().unwrap_or(0) > 100, "heatmap width {width}");

    // An error from the server is shown in plain words.
    browser.call("POST", "/execute/sync", json!({
        "script": "document.getElementById('alternatives').innerHTML = '<option value=\"9\">9</option>';", "args": []
    }));
    browser.call("POST", &format!("/element/{button}/click"), json!({}));
    browser.wait_until("the error", |b| {
        b.text("#status").starts_with("Could not translate")
    });
    assert!(browser.text("#status").contains("alternatives"));
    browser.call("POST", "/execute/sync", json!({
        "script": "document.getElementById('alternatives').innerHTML = '<option value=\"3\">3</option>';", "args": []
    }));
    browser.call("POST", &format!("/element/{button}/click"), json!({}));
    browser.wait_until("the translation", |b| {
        b.text("#status").starts_with("Done in")
    });

    let shot = browser.call("GET", "/screenshot", Value::Null);
    let png = base64::engine::general_purpose::STANDARD
        .decode(shot.as_str().expect("base64 screenshot"))
        .expect("valid base64");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let path = std::env::var("ROSETTA_SCREENSHOT")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("serve-page.png"));
    std::fs::write(&path, &png).expect("write the screenshot");
    eprintln!("screenshot: {}", path.display());
}
