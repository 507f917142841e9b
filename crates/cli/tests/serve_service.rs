//! `rosetta serve` as a service: several models in one server (routed by LibreTranslate's
//! `source`/`target` and OpenNMT-py's `id`, loaded on first use, unloaded when idle), API keys
//! and per-client limits, CORS, hot reload under load, and deadlines.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{
    ServerProcess, assert_success, client, copy_dir, get, post, rosetta, test_sentences,
    trained_run, trained_run_reverse, translate_lines,
};
use serde_json::{Value, json};

/// What `rosetta translate` gives for `lines` with `checkpoint` at beam 1, one line each.
fn offline(checkpoint: &Path, lines: &[String]) -> Vec<String> {
    let out = translate_lines(checkpoint, lines, 1);
    assert_success(&out);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The value of the metric line that starts with `prefix` (`name{labels}`).
fn metric(metrics: &str, prefix: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(prefix)?.trim().parse().ok())
}

/// POSTs `body` to `url` with `headers`; status, the response's headers, and its JSON body.
fn post_with(
    url: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> (u16, Vec<(String, String)>, Value) {
    let mut request = client()
        .post(url)
        .header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let mut response = request.send(body.to_string()).expect("request");
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let text = response.body_mut().read_to_string().expect("body");
    (status, headers, serde_json::from_str(&text).expect("JSON"))
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Replaces directory `to` with a copy of `from`.
fn replace_dir(from: &Path, to: &Path) {
    if to.exists() {
        std::fs::remove_dir_all(to).expect("remove");
    }
    copy_dir(from, to);
}

#[test]
fn three_models_in_one_server_are_routed_by_languages_and_id() {
    let en_fr = trained_run();
    let fr_en = trained_run_reverse();
    let dir = tempfile::tempdir().expect("tempdir");
    let models = dir.path().join("serve.toml");
    std::fs::write(
        &models,
        format!(
            "[[model]]\nid = \"en-fr\"\ncheckpoint = \"{}\"\n\n\
             [[model]]\nid = \"fr-en\"\ncheckpoint = \"{}\"\n\n\
             [[model]]\nid = \"en-fr-lazy\"\ncheckpoint = \"{}\"\nsource = \"en\"\ntarget = \"fr-CA\"\nload = \"first-use\"\n",
            en_fr.display(),
            fr_en.display(),
            en_fr.display()
        ),
    )
    .expect("write the models file");
    let server =
        ServerProcess::start_with(&["--models", models.to_str().expect("utf-8"), "--beam", "1"]);
    let url = &server.url;

    let (_, body) = get(&format!("{url}/languages"));
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("json"),
        json!([
            { "code": "en", "name": "en", "targets": ["fr", "fr-CA"] },
            { "code": "fr", "name": "fr", "targets": ["en"] },
        ])
    );
    let (_, body) = get(&format!("{url}/models"));
    let listed: Value = serde_json::from_str(&body).expect("json");
    let loaded = |listed: &Value| -> Vec<bool> {
        listed
            .as_array()
            .expect("array")
            .iter()
            .map(|m| m["loaded"].as_bool().expect("loaded"))
            .collect()
    };
    assert_eq!(loaded(&listed), [true, true, false], "{listed}");
    assert_eq!(listed[1]["source"], "fr");

    // Each direction gives what its own model gives offline.
    let english = test_sentences(4);
    let french: Vec<String> = std::fs::read_to_string(common::repo().join("data/numbers/test.fr"))
        .expect("test.fr")
        .lines()
        .take(4)
        .map(str::to_string)
        .collect();
    let want_fr = offline(en_fr, &english);
    let want_en = offline(fr_en, &french);
    assert_ne!(want_fr, want_en);
    let translate = format!("{url}/translate");
    let (status, got) = post(
        &translate,
        &json!({ "q": english, "source": "en", "target": "fr" }),
    );
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["translatedText"], json!(want_fr));
    let (status, got) = post(&translate, &json!({ "q": french, "source": "fr" }));
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["translatedText"], json!(want_en));
    // OpenNMT-py's id.
    let (status, got) = post(
        &format!("{url}/translator/translate"),
        &json!([{ "src": french[0], "id": "fr-en" }]),
    );
    assert_eq!(status, 200, "{got}");
    assert_eq!(got[0][0]["tgt"], json!(want_en[0]));
    // Ambiguous or unknown requests name what the server has.
    let (status, got) = post(&translate, &json!({ "q": "one", "source": "en" }));
    assert_eq!(status, 400);
    let message = got["error"].as_str().expect("error");
    assert!(message.contains("en->fr, fr->en, en->fr-CA"), "{message}");
    let (status, got) = post(
        &format!("{url}/translator/translate"),
        &json!([{ "src": "one", "id": "en-fr" }, { "src": "un", "id": "fr-en" }]),
    );
    assert_eq!(status, 400);
    assert!(
        got["error"]
            .as_str()
            .expect("error")
            .contains("different models")
    );
    let (status, _) = post(
        &format!("{url}/translator/translate"),
        &json!([{ "src": "one", "id": "de-en" }]),
    );
    assert_eq!(status, 400);

    // The lazy model loads on its first request and then translates as its checkpoint does.
    let (status, got) = post(
        &translate,
        &json!({ "q": english, "source": "en", "target": "fr-CA" }),
    );
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["translatedText"], json!(want_fr));
    let (_, body) = get(&format!("{url}/models"));
    assert_eq!(
        loaded(&serde_json::from_str(&body).expect("json")),
        [true, true, true]
    );

    // The metrics are labelled by model.
    let (_, metrics) = get(&format!("{url}/metrics"));
    assert_eq!(
        metric(&metrics, "rosetta_sentences_total{model=\"en-fr\"}"),
        Some(4.0),
        "{metrics}"
    );
    assert_eq!(
        metric(&metrics, "rosetta_sentences_total{model=\"fr-en\"}"),
        Some(5.0)
    );
    assert_eq!(
        metric(&metrics, "rosetta_sentences_total{model=\"en-fr-lazy\"}"),
        Some(4.0)
    );
    assert_eq!(
        metric(
            &metrics,
            "rosetta_requests_total{route=\"/translate\",status=\"200\",model=\"fr-en\"}"
        ),
        Some(1.0)
    );
}

#[test]
fn a_bad_models_file_or_open_host_is_refused_before_anything_loads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let models = dir.path().join("serve.toml");
    std::fs::write(&models, "[[model]]\nid = \"a\"\ncheckpint = \"x\"\n").expect("write");
    let out = rosetta(&[
        "serve",
        "--models",
        models.to_str().expect("utf-8"),
        "--port",
        "0",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("serve.toml") && stderr.contains("checkpint"),
        "{stderr}"
    );
    // Beyond loopback without keys: refused, naming the way out.
    let run = trained_run().to_str().expect("utf-8");
    let out = rosetta(&[
        "serve",
        "--checkpoint",
        run,
        "--host",
        "0.0.0.0",
        "--port",
        "0",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--api-keys") && stderr.contains("--allow-anonymous"),
        "{stderr}"
    );
    // A key file with a bad line names its line and never the key.
    let keys = dir.path().join("keys.txt");
    std::fs::write(&keys, "k-secret-1\nk-secret-2 requests_per_minute=many\n").expect("write");
    let out = rosetta(&[
        "serve",
        "--checkpoint",
        run,
        "--api-keys",
        keys.to_str().expect("utf-8"),
        "--port",
        "0",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("keys.txt") && stderr.contains("line 2"),
        "{stderr}"
    );
    assert!(!stderr.contains("k-secret"), "{stderr}");
}

#[test]
fn api_keys_are_required_limited_and_never_shown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let keys = dir.path().join("keys.txt");
    std::fs::write(
        &keys,
        "# two clients\nk-alpha-7c1e\nk-beta-09ff requests_per_minute=2\n",
    )
    .expect("write keys");
    let mut server = ServerProcess::start(
        trained_run(),
        &["--api-keys", keys.to_str().expect("utf-8")],
    );
    let translate = format!("{}/translate", server.url);
    let one = json!({ "q": "one" });

    let (status, _, body) = post_with(&translate, &[], &one);
    assert_eq!(status, 401, "{body}");
    assert!(body["error"].as_str().expect("error").contains("API key"));
    let (status, _, body) = post_with(&translate, &[], &json!({ "q": "one", "api_key": "k-nope" }));
    assert_eq!(status, 403, "{body}");
    // LibreTranslate's field and the bearer header.
    let (status, _, body) = post_with(
        &translate,
        &[],
        &json!({ "q": "one", "api_key": "k-alpha-7c1e" }),
    );
    assert_eq!(status, 200, "{body}");
    let bearer = [("authorization", "Bearer k-beta-09ff")];
    for _ in 0..2 {
        let (status, _, body) = post_with(&translate, &bearer, &one);
        assert_eq!(status, 200, "{body}");
    }
    // The third request of the minute is over k-beta's limit; k-alpha has none.
    let (status, headers, body) = post_with(&translate, &bearer, &one);
    assert_eq!(status, 429, "{body}");
    let wait: u64 = header(&headers, "retry-after")
        .expect("Retry-After")
        .parse()
        .expect("seconds");
    assert!((1..=31).contains(&wait), "Retry-After {wait}");
    // (The scheme's case does not matter.)
    let (status, _, _) = post_with(
        &translate,
        &[("authorization", "bearer k-alpha-7c1e")],
        &one,
    );
    assert_eq!(status, 200);
    // OpenNMT-py's endpoint takes the bearer header.
    let (status, _, _) = post_with(
        &format!("{}/translator/translate", server.url),
        &[],
        &json!([{ "src": "one" }]),
    );
    assert_eq!(status, 401);

    let (_, metrics) = get(&format!("{}/metrics", server.url));
    assert!(metrics.contains("status=\"429\""), "{metrics}");
    server.terminate();
    let logs = format!("{}{}{metrics}", server.remaining_stdout(), server.stderr());
    for key in ["k-alpha", "k-beta", "k-nope"] {
        assert!(!logs.contains(key), "{key} appears in the logs or metrics");
    }
}

#[test]
fn anonymous_clients_are_limited_by_characters() {
    let server = ServerProcess::start(trained_run(), &["--anonymous-chars-per-minute", "20"]);
    let translate = format!("{}/translate", server.url);
    let (status, _, _) = post_with(&translate, &[], &json!({ "q": "twenty-one" }));
    assert_eq!(status, 200);
    let (status, headers, body) = post_with(&translate, &[], &json!({ "q": "twenty-two" }));
    assert_eq!(status, 200, "{body}");
    let (status, headers_429, body) = post_with(&translate, &[], &json!({ "q": "three" }));
    assert_eq!(status, 429, "{body} {headers:?}");
    assert!(header(&headers_429, "retry-after").is_some());
    // One request over the whole minute's allowance can never pass: 413, not 429.
    let (status, _, body) = post_with(
        &translate,
        &[],
        &json!({ "q": "one hundred twenty-three thousand" }),
    );
    assert_eq!(status, 413, "{body}");
}

#[test]
fn cors_answers_preflights_for_allowed_origins_only() {
    let server = ServerProcess::start(trained_run(), &["--cors-origin", "https://app.example.org"]);
    let translate = format!("{}/translate", server.url);
    let preflight = |origin: &str| {
        let response = client()
            .options(&translate)
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "content-type,authorization",
            )
            .call()
            .expect("preflight");
        let status = response.status().as_u16();
        let headers: Vec<(String, String)> = response
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect();
        (status, headers)
    };
    let (status, headers) = preflight("https://app.example.org");
    assert_eq!(status, 200);
    assert_eq!(
        header(&headers, "access-control-allow-origin"),
        Some("https://app.example.org")
    );
    let methods = header(&headers, "access-control-allow-methods").expect("methods");
    assert!(methods.contains("POST"), "{methods}");
    let allowed = header(&headers, "access-control-allow-headers")
        .expect("headers")
        .to_ascii_lowercase();
    assert!(
        allowed.contains("content-type") && allowed.contains("authorization"),
        "{allowed}"
    );
    let (_, headers) = preflight("https://evil.example.net");
    assert_eq!(header(&headers, "access-control-allow-origin"), None);
    // A simple request from the allowed origin is answered with the header too.
    let (status, headers, _) = post_with(
        &translate,
        &[("origin", "https://app.example.org")],
        &json!({ "q": "one" }),
    );
    assert_eq!(status, 200);
    assert_eq!(
        header(&headers, "access-control-allow-origin"),
        Some("https://app.example.org")
    );
    // Without --cors-origin, no origin is allowed.
    let closed = ServerProcess::start(trained_run(), &[]);
    let (_, headers, _) = post_with(
        &format!("{}/translate", closed.url),
        &[("origin", "https://app.example.org")],
        &json!({ "q": "one" }),
    );
    assert_eq!(header(&headers, "access-control-allow-origin"), None);
}

#[test]
fn a_reload_swaps_the_model_under_load_and_a_bad_checkpoint_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let served = dir.path().join("served");
    replace_dir(trained_run(), &served);
    let admin = dir.path().join("admin.key");
    std::fs::write(&admin, "adm-5e1f\n").expect("write the admin key");
    let server = ServerProcess::start(
        &served,
        &[
            "--admin-key-file",
            admin.to_str().expect("utf-8"),
            "--beam",
            "1",
        ],
    );
    let sentences = test_sentences(6);
    let old = offline(trained_run(), &sentences);
    let new = offline(trained_run_reverse(), &sentences);
    assert_ne!(old, new);

    // Clients translate the six sentences in a loop while the model is replaced.
    let translate = format!("{}/translate", server.url);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let clients: Vec<_> = (0..3)
        .map(|_| {
            let (translate, sentences) = (translate.clone(), sentences.clone());
            let stop = std::sync::Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut answers = Vec::new();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let (status, body) = post(&translate, &json!({ "q": sentences }));
                    answers.push((status, body["translatedText"].clone()));
                }
                answers
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));

    let reload = format!("{}/admin/reload", server.url);
    let (status, _, _) = post_with(&reload, &[], &json!({}));
    assert_eq!(status, 401);
    let (status, _, _) = post_with(&reload, &[("authorization", "Bearer nope")], &json!({}));
    assert_eq!(status, 403);
    // The new checkpoint: another model in the same place.
    replace_dir(trained_run_reverse(), &served);
    let bearer = [("authorization", "Bearer adm-5e1f")];
    let (status, _, body) = post_with(&reload, &bearer, &json!({}));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reloaded"], json!(["en-fr"]));
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut saw = (0, 0);
    for client in clients {
        for (status, texts) in client.join().expect("client") {
            assert_eq!(status, 200, "a request failed during the reload: {texts}");
            // Every answer is wholly the old model's or wholly the new one's.
            if texts == json!(old) {
                saw.0 += 1;
            } else {
                assert_eq!(texts, json!(new), "a request mixed the two models");
                saw.1 += 1;
            }
        }
    }
    assert!(saw.0 > 0 && saw.1 > 0, "old and new answers: {saw:?}");

    // A corrupt checkpoint is refused and the model loaded keeps serving.
    let weights = served.join("best/model.bpk");
    let mut bytes = std::fs::read(&weights).expect("read the weights");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&weights, &bytes).expect("corrupt the weights");
    let (status, _, body) = post_with(&reload, &bearer, &json!({ "id": "en-fr" }));
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]
            .as_str()
            .expect("error")
            .contains("keeps serving"),
        "{body}"
    );
    let (status, body) = post(&translate, &json!({ "q": sentences }));
    assert_eq!(status, 200);
    assert_eq!(body["translatedText"], json!(new));
    let (status, _, _) = post_with(&reload, &bearer, &json!({ "id": "nope" }));
    assert_eq!(status, 404);
}

#[test]
fn a_late_request_gets_504_and_a_client_that_left_costs_no_decoding() {
    // Many long outputs in one batch, so that the first request keeps the decoder busy for a
    // while (about 0.6 s here).
    let server = ServerProcess::start(
        trained_run(),
        &[
            "--beam",
            "5",
            "--max-len-a",
            "3",
            "--max-len-b",
            "30",
            "--request-timeout-ms",
            "1500",
            "--max-sentences",
            "500",
            "--max-batch-tokens",
            "100000",
        ],
    );
    let translate = format!("{}/translate", server.url);
    let metrics_url = format!("{}/metrics", server.url);
    let busy = {
        let translate = translate.clone();
        std::thread::spawn(move || post(&translate, &json!({ "q": test_sentences(500) })))
    };
    let started = Instant::now();
    while !get(&metrics_url)
        .1
        .contains("rosetta_decoding_sentences{model=\"en-fr\"} 500")
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "never decoding"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // Queued behind it: one client that gives up after 100 ms, one that waits for its answer.
    let impatient = client()
        .post(&translate)
        .config()
        .timeout_global(Some(Duration::from_millis(100)))
        .build()
        .header("content-type", "application/json")
        .send(json!({ "q": ["seven", "eight"] }).to_string());
    assert!(impatient.is_err(), "answered within 100 ms: {impatient:?}");
    let (busy_status, busy_body) = busy.join().expect("busy client");
    if busy_status == 504 {
        assert!(
            busy_body["error"]
                .as_str()
                .expect("error")
                .contains("--request-timeout-ms"),
            "{busy_body}"
        );
    } else {
        // The machine was fast enough to decode it within the deadline.
        assert_eq!(busy_status, 200, "{busy_body}");
    }
    // The impatient client's two sentences were dropped when their turn came, not decoded.
    let started = Instant::now();
    let metrics = loop {
        let (_, metrics) = get(&metrics_url);
        let abandoned = metric(
            &metrics,
            "rosetta_abandoned_requests_total{model=\"en-fr\"}",
        );
        let decoded = metric(&metrics, "rosetta_sentences_total{model=\"en-fr\"}");
        if abandoned > Some(0.0) || decoded > Some(500.0) {
            break metrics;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{metrics}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(
        metric(
            &metrics,
            "rosetta_abandoned_requests_total{model=\"en-fr\"}"
        ),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(
        metric(&metrics, "rosetta_sentences_total{model=\"en-fr\"}"),
        Some(500.0),
        "{metrics}"
    );
    // A request that cannot finish in time is answered 504 with a JSON message.
    let strict = ServerProcess::start(
        trained_run(),
        &[
            "--beam",
            "5",
            "--max-len-a",
            "3",
            "--max-len-b",
            "30",
            "--request-timeout-ms",
            "1",
        ],
    );
    let (status, body) = post(
        &format!("{}/translate", strict.url),
        &json!({ "q": test_sentences(64) }),
    );
    assert_eq!(status, 504, "{body}");
    assert!(
        body["error"].as_str().expect("error").contains("1 ms"),
        "{body}"
    );
}

#[test]
fn an_idle_model_is_unloaded_and_loads_again_on_its_next_request() {
    let server = ServerProcess::start(trained_run(), &["--unload-after-secs", "1", "--beam", "1"]);
    let url = &server.url;
    let loaded = || -> bool {
        let (_, body) = get(&format!("{url}/models"));
        serde_json::from_str::<Value>(&body).expect("json")[0]["loaded"]
            .as_bool()
            .expect("loaded")
    };
    let sentences = test_sentences(3);
    let want = offline(trained_run(), &sentences);
    let (status, body) = post(&format!("{url}/translate"), &json!({ "q": sentences }));
    assert_eq!((status, &body["translatedText"]), (200, &json!(want)));
    let started = Instant::now();
    while loaded() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "still loaded after 30 s idle"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, body) = post(&format!("{url}/translate"), &json!({ "q": sentences }));
    assert_eq!((status, &body["translatedText"]), (200, &json!(want)));
    assert!(loaded());
}

/// The inline elements of the HTML test inputs (the others separate words).
const INLINE: &[&str] = &["a", "b", "em", "i", "strong", "span"];

/// The tags (as written, attributes included) and the text (entities resolved, blocks apart)
/// of an XML-well-formed HTML fragment; panics, naming it, if it is not well formed.
fn xml_parts(fragment: &str) -> (Vec<String>, String) {
    use quick_xml::events::Event;
    let wrapped = format!("<root>{fragment}</root>");
    let mut reader = quick_xml::Reader::from_str(&wrapped);
    let (mut tags, mut text) = (Vec::new(), String::new());
    loop {
        match reader.read_event() {
            Ok(Event::Start(tag)) => {
                if !INLINE.contains(&tag.name().as_ref()) {
                    text.push(' ');
                }
                tags.push(format!("<{}>", &*tag));
            }
            Ok(Event::End(tag)) => {
                if !INLINE.contains(&tag.name().as_ref()) {
                    text.push(' ');
                }
                tags.push(format!("</{}>", &*tag));
            }
            Ok(Event::Empty(tag)) => {
                text.push(' ');
                tags.push(format!("<{}/>", &*tag));
            }
            Ok(Event::Text(t)) => text.push_str(&t.xml10_content()),
            Ok(Event::GeneralRef(r)) => {
                let name = r.xml10_content().into_owned();
                let c =
                    match name.as_str() {
                        "amp" => '&',
                        "lt" => '<',
                        "gt" => '>',
                        "quot" => '"',
                        "apos" => '\'',
                        _ => r.resolve_char_ref().ok().flatten().unwrap_or_else(|| {
                            panic!("unknown reference &{name}; in {fragment:?}")
                        }),
                    };
                text.push(c);
            }
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(error) => panic!("not well formed ({error}): {fragment:?}"),
        }
    }
    tags.remove(0);
    tags.pop();
    (tags, text.split_whitespace().collect::<Vec<_>>().join(" "))
}

#[test]
fn html_keeps_the_markup_and_translates_the_text_whole() {
    let server = ServerProcess::start(trained_run(), &["--beam", "1"]);
    let translate = format!("{}/translate", server.url);
    let plain = |text: &str| -> String {
        let (status, body) = post(&translate, &json!({ "q": text }));
        assert_eq!(status, 200, "{body}");
        body["translatedText"].as_str().expect("text").to_string()
    };
    let html = |q: &str| -> String {
        let (status, body) = post(&translate, &json!({ "q": q, "format": "html" }));
        assert_eq!(status, 200, "{body}");
        body["translatedText"].as_str().expect("text").to_string()
    };
    // Block and inline tags, attributes and entities: the same tags, well formed, and the
    // text of each block the plain translation of its whole sentence.
    for (input, blocks) in [
        (
            "<p>three hundred <b>forty-two</b></p>",
            vec!["three hundred forty-two"],
        ),
        (
            "<div class=\"card\" data-n=\"1\"><h1>twenty-one</h1><p>four &amp; <a href=\"/x?a=1&amp;b=2\" title=\"a &lt; b\">five</a> hundred</p></div>",
            vec!["twenty-one", "four & five hundred"],
        ),
        (
            "<ul><li>seven <em>thousand <i>two</i></em> hundred</li><li>nine<br/>ten</li></ul>",
            vec!["seven thousand two hundred", "nine", "ten"],
        ),
    ] {
        let output = html(input);
        let (in_tags, _) = xml_parts(input);
        let (out_tags, out_text) = xml_parts(&output);
        assert_eq!(out_tags, in_tags, "{input} -> {output}");
        let want: Vec<String> = blocks.iter().map(|b| plain(b)).collect();
        assert_eq!(out_text, want.join(" "), "{input} -> {output}");
    }
    // An inline tag keeps its text: <b> wraps words of the output.
    let output = html("<p>one hundred <b>twelve</b></p>");
    let inside = output
        .split("<b>")
        .nth(1)
        .and_then(|rest| rest.split("</b>").next())
        .expect("<b> kept");
    assert!(!inside.trim().is_empty(), "{output}");
    // Untranslated content is copied byte for byte.
    let kept = "<script>if (a < b) { s = \"<b>six</b>\"; }</script><style>p > b { color: red }</style><p translate=\"no\">forty-two</p><pre>eight</pre>";
    let output = html(&format!("<p>eleven</p>{kept}"));
    assert!(output.ends_with(kept), "{output}");
    assert_eq!(
        output.strip_suffix(kept),
        Some(format!("<p>{}</p>", plain("eleven")).as_str())
    );
    // Malformed input: nothing added, nothing lost.
    let markup = |s: &str| -> Vec<String> {
        s.split('<')
            .skip(1)
            .filter_map(|part| part.split_once('>').map(|(tag, _)| format!("<{tag}>")))
            .collect()
    };
    for input in ["<p>seven <b>eight</p>", "<b>one</i> two</b>", "five < six"] {
        let output = html(input);
        assert_eq!(
            markup(&output),
            markup(&input.replace(" < ", " ")),
            "{input} -> {output}"
        );
    }
    // An array of documents gets an array.
    let (status, body) = post(
        &translate,
        &json!({ "q": ["<b>one</b>", "<i>two</i>"], "format": "html" }),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["translatedText"].as_array().map(Vec::len), Some(2));
}

#[test]
fn sighup_reloads_every_loaded_model_from_its_checkpoint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let served = dir.path().join("served");
    replace_dir(trained_run(), &served);
    let mut server = ServerProcess::start(&served, &["--beam", "1"]);
    let sentences = test_sentences(4);
    let old = offline(trained_run(), &sentences);
    let new = offline(trained_run_reverse(), &sentences);
    let translate = format!("{}/translate", server.url);
    let (_, body) = post(&translate, &json!({ "q": sentences }));
    assert_eq!(body["translatedText"], json!(old));
    replace_dir(trained_run_reverse(), &served);
    let sent = std::process::Command::new("kill")
        .args(["-HUP", &server.child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(sent.success());
    let started = Instant::now();
    loop {
        let (status, body) = post(&translate, &json!({ "q": sentences }));
        assert_eq!(status, 200, "{body}");
        if body["translatedText"] == json!(new) {
            break;
        }
        assert_eq!(body["translatedText"], json!(old), "neither model's answer");
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no reload after SIGHUP"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server.terminate();
    assert!(
        server
            .remaining_stdout()
            .contains("reloaded model \"en-fr\""),
        "the reload is reported"
    );
}

/// `rosetta translate --target-lang TARGET` of `lines` with `checkpoint` at beam 1.
fn offline_into(checkpoint: &Path, lines: &[String], target: &str) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("input.txt");
    std::fs::write(&input, lines.join("\n") + "\n").expect("write input");
    let out = rosetta(&[
        "translate",
        "--checkpoint",
        checkpoint.to_str().expect("utf-8"),
        "--beam",
        "1",
        "--target-lang",
        target,
        "--input",
        input.to_str().expect("utf-8"),
    ]);
    assert_success(&out);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_multilingual_model_serves_each_direction_and_names_them_for_another() {
    let run = common::trained_multilingual_run();
    let server = ServerProcess::start(run, &["--beam", "1"]);
    // `/languages` lists both directions of the one model.
    let (status, body) = get(&format!("{}/languages", server.url));
    assert_eq!(status, 200);
    let languages: Value = serde_json::from_str(&body).expect("JSON");
    let targets = |code: &str| -> Vec<String> {
        languages
            .as_array()
            .expect("array")
            .iter()
            .find(|l| l["code"] == code)
            .map(|l| {
                l["targets"]
                    .as_array()
                    .expect("targets")
                    .iter()
                    .map(|t| t.as_str().expect("code").to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(targets("en"), ["fr"]);
    assert_eq!(targets("fr"), ["en"]);

    // Each direction as `rosetta translate --target-lang` gives it; a batch mixing both
    // directions' requests is decoded apart by target (8 concurrent clients, 4 each way).
    let english = test_sentences(8);
    let french: Vec<String> = offline_into(run, &english, "fr");
    let back = offline_into(run, &french, "en");
    let url = format!("{}/translate", server.url);
    std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for i in 0..8 {
            let (source, target, text, expected) = if i % 2 == 0 {
                ("en", "fr", english[i].clone(), french[i].clone())
            } else {
                ("fr", "en", french[i].clone(), back[i].clone())
            };
            let url = url.clone();
            handles.push(scope.spawn(move || {
                let (status, body) = post(
                    &url,
                    &json!({ "q": text, "source": source, "target": target }),
                );
                assert_eq!(status, 200, "{body}");
                assert_eq!(
                    body["translatedText"],
                    expected.as_str(),
                    "{source}->{target}"
                );
            }));
        }
        for handle in handles {
            handle.join().expect("client");
        }
    });
    // `source: "auto"` with a target picks the one direction into it.
    let (status, body) = post(
        &url,
        &json!({ "q": english[0], "source": "auto", "target": "fr" }),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["detectedLanguage"]["language"], "en");

    // OpenNMT-py's endpoint names no target language: refused before any work, naming the
    // model's directions.
    let (status, body) = post(
        &format!("{}/translator/translate", server.url),
        &json!([{ "src": "twelve", "id": 1 }]),
    );
    assert_eq!(status, 422, "{body}");
    let error = body["error"].as_str().expect("error");
    assert!(
        error.contains("multilingual") && error.contains("en->fr, fr->en"),
        "{error}"
    );

    // A direction the model was not trained for: 400, naming the ones it was.
    let (status, body) = post(
        &url,
        &json!({ "q": "twelve", "source": "en", "target": "de" }),
    );
    assert_eq!(status, 400, "{body}");
    let error = body["error"].as_str().expect("error");
    assert!(
        error.contains("`target` de") && error.contains("en->fr, fr->en"),
        "{error}"
    );
}
