//! Headless Chromium for the page tests, driven over the W3C WebDriver protocol by Debian's
//! chromedriver.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

use super::client;

/// The W3C WebDriver key of an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A chromedriver process and one browser session on it; both ended when dropped.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
}

impl Browser {
    /// Starts chromedriver on a free loopback port and opens a headless Chromium session.
    pub fn start() -> Self {
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
                             "--disable-dev-shm-usage", "--window-size=1100,1000",
                             // The closed network here refuses Chromium's own connections.
                             "--disable-background-networking",
                             "--disable-component-update", "--no-first-run"]
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
    pub fn call(&self, method: &str, path: &str, body: Value) -> Value {
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

    /// The reference of the first element matching `css`.
    pub fn element(&self, css: &str) -> String {
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

    /// The visible text of the first element matching `css`.
    pub fn text(&self, css: &str) -> String {
        let id = self.element(css);
        self.call("GET", &format!("/element/{id}/text"), Value::Null)
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Waits (at most 60 s) until `condition` holds.
    pub fn wait_until(&self, what: &str, condition: impl Fn(&Self) -> bool) {
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

impl Browser {
    /// Runs `script` in the page (a function body; `arguments` holds `args`) and returns its
    /// value.
    pub fn execute(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            json!({ "script": script, "args": args }),
        )
    }

    /// Runs asynchronous `script` (its last argument is the callback to call with the result)
    /// and returns what it passes back.
    pub fn execute_async(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            "/execute/async",
            json!({ "script": script, "args": args }),
        )
    }

    /// Types `text` into the element matching `css`.
    pub fn type_into(&self, css: &str, text: &str) {
        let id = self.element(css);
        self.call(
            "POST",
            &format!("/element/{id}/value"),
            json!({ "text": text }),
        );
    }

    /// Clicks the element matching `css`.
    pub fn click(&self, css: &str) {
        let id = self.element(css);
        self.call("POST", &format!("/element/{id}/click"), json!({}));
    }

    /// Saves a screenshot of the page as a PNG to the path in environment variable `env`, or
    /// else to `default_name` in the target directory's scratch area; checks it is a PNG.
    pub fn screenshot(&self, env: &str, default_name: &str) -> PathBuf {
        let shot = self.call("GET", "/screenshot", Value::Null);
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot.as_str().expect("base64 screenshot"))
            .expect("valid base64");
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let path = std::env::var(env)
            .map(PathBuf::from)
            .unwrap_or_else(|_| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(default_name));
        std::fs::write(&path, &png).expect("write the screenshot");
        eprintln!("screenshot: {}", path.display());
        path
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
