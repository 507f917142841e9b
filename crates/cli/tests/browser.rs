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

use std::path::PathBuf;

use common::browser::Browser;
use common::{ServerProcess, assert_success, rosetta, trained_run};
use serde_json::json;

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

    browser.screenshot("ROSETTA_SCREENSHOT", "serve-page.png");
}

#[test]
#[ignore = "needs Debian's chromium and chromium-driver; .ci/run installs them and runs this test with --ignored"]
fn a_page_on_another_origin_calls_the_server_only_when_its_origin_is_allowed() {
    let run = trained_run();
    // The other site: a server whose page is the origin the calls come from.
    let site = ServerProcess::start(run, &[]);
    let allowed = ServerProcess::start(run, &["--cors-origin", &site.url, "--beam", "1"]);
    let refused = ServerProcess::start(run, &["--cors-origin", "https://elsewhere.example.org"]);
    let browser = Browser::start();
    browser.call("POST", "/url", json!({ "url": format!("{}/", site.url) }));
    // A JSON POST with an Authorization header: a preflighted request.
    let call = |url: &str| {
        browser.execute_async(
            "const [url, done] = arguments;
             fetch(url, { method: 'POST',
                          headers: { 'Content-Type': 'application/json', 'Authorization': 'Bearer none' },
                          body: JSON.stringify({ q: 'one' }) })
               .then((r) => r.json().then((b) => done({ status: r.status, text: b.translatedText })))
               .catch((e) => done({ error: String(e) }));",
            json!([format!("{url}/translate")]),
        )
    };
    let answer = call(&allowed.url);
    assert_eq!(answer["status"], 200, "{answer}");
    assert!(answer["text"].is_string(), "{answer}");
    let answer = call(&refused.url);
    assert!(
        answer["error"]
            .as_str()
            .is_some_and(|e| e.contains("Failed to fetch")),
        "the browser let a page of an origin not allowed read the answer: {answer}"
    );
}
