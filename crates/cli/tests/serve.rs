//! `rosetta serve` as a client sees it: every endpoint, every kind of bad input, concurrent
//! clients getting what offline `rosetta translate` gives, and a graceful stop.

mod common;

use common::{
    ServerProcess, assert_success, get, post, post_raw, rosetta, test_sentences, trained_run,
};
use serde_json::{Value, json};

#[test]
fn endpoints_answer_in_their_apis_shapes() {
    let mut server = ServerProcess::start(trained_run(), &["--beam", "3", "--nbest", "2"]);
    let url = &server.url;

    let (status, body) = get(&format!("{url}/health"));
    assert_eq!((status, body.as_str()), (200, r#"{"status":"ok"}"#));

    let (status, body) = get(&format!("{url}/models"));
    assert_eq!(status, 200);
    let models: Value = serde_json::from_str(&body).expect("json");
    let model = &models[0];
    assert_eq!(model["source"], "en", "{body}");
    assert_eq!(model["target"], "fr", "{body}");
    assert_eq!(model["step"], 40);
    assert_eq!(model["d_model"], 32);
    assert_eq!(model["search"]["beam"], 3);
    assert_eq!(model["search"]["length_norm"], "gnmt");
    assert_eq!(model["search"]["beam_stop"], "bound");
    assert!(model["parameters"].as_u64().expect("parameters") > 10_000);
    assert!(model["source_vocab_size"].as_u64().expect("vocabulary") > 0);

    let (status, body) = get(&format!("{url}/languages"));
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("json"),
        json!([{ "code": "en", "name": "en", "targets": ["fr"] }])
    );

    // LibreTranslate: a string gets a string, an array an array; alternatives and scores.
    let (status, one) = post(
        &format!("{url}/translate"),
        &json!({ "q": "twenty-one", "source": "en", "target": "fr", "format": "text" }),
    );
    assert_eq!(status, 200, "{one}");
    assert!(one["translatedText"].is_string(), "{one}");
    assert!(one.get("alternatives").is_none());
    let (status, many) = post(
        &format!("{url}/translate"),
        &json!({ "q": ["twenty-one", "", "four"], "source": "auto", "alternatives": 2 }),
    );
    assert_eq!(status, 200, "{many}");
    let texts = many["translatedText"].as_array().expect("array");
    assert_eq!(texts.len(), 3);
    assert_eq!(texts[0], one["translatedText"]);
    assert_eq!(texts[1], "");
    assert_eq!(
        many["alternatives"][0]
            .as_array()
            .expect("alternatives")
            .len(),
        2
    );
    let scores = many["scores"][0].as_array().expect("scores");
    assert_eq!(scores.len(), 3);
    assert!(
        scores[0].as_f64() >= scores[1].as_f64(),
        "best first: {scores:?}"
    );

    // Attention on request: rows of weights over source subwords, each summing to 1.
    let (status, with_map) = post(
        &format!("{url}/translate"),
        &json!({ "q": "three hundred twelve", "attention": true }),
    );
    assert_eq!(status, 200, "{with_map}");
    let map = &with_map["attention"];
    let cols = map["source"].as_array().expect("source labels").len();
    let rows = map["target"].as_array().expect("target labels").len();
    let weights = map["weights"].as_array().expect("weights");
    assert_eq!(weights.len(), rows * cols);
    for row in weights.chunks(cols) {
        let sum: f64 = row.iter().map(|w| w.as_f64().expect("number")).sum();
        assert!((sum - 1.0).abs() < 1e-3, "row sums to {sum}");
    }

    // OpenNMT-py: one list per rank (n_best 2), each with every sentence's hypothesis.
    let (status, onmt) = post(
        &format!("{url}/translator/translate"),
        &json!([{ "src": "twenty-one", "id": 100 }, { "src": "four" }]),
    );
    assert_eq!(status, 200, "{onmt}");
    let ranks = onmt.as_array().expect("outer list");
    assert_eq!(ranks.len(), 2, "n_best 2: {onmt}");
    for rank in ranks {
        let rank = rank.as_array().expect("inner list");
        assert_eq!(rank.len(), 2, "two sentences: {onmt}");
        assert_eq!(rank[0]["src"], "twenty-one");
        assert_eq!(rank[1]["src"], "four");
        assert_eq!(rank[0]["n_best"], 2);
        assert!(rank[0]["pred_score"].is_f64());
    }
    assert_eq!(ranks[0][0]["tgt"], one["translatedText"]);
    assert!(ranks[0][0]["pred_score"].as_f64() >= ranks[1][0]["pred_score"].as_f64());

    // LibreTranslate's own clients post forms; `source: auto` reports the detected language.
    let mut response = common::client()
        .post(&format!("{url}/translate"))
        .header("content-type", "application/x-www-form-urlencoded")
        .send(b"q=twenty-one&source=auto&target=fr&format=text&api_key=".as_slice())
        .expect("form request");
    assert_eq!(response.status().as_u16(), 200);
    let form: Value = response.body_mut().read_json().expect("JSON");
    assert_eq!(form["translatedText"], one["translatedText"]);
    assert_eq!(form["detectedLanguage"]["language"], "en");

    // The page, and the metrics that counted all of the above.
    let (status, page) = get(&format!("{url}/"));
    assert_eq!(status, 200);
    assert!(page.contains("<title>Rosetta translator</title>"));
    let (status, metrics) = get(&format!("{url}/metrics"));
    assert_eq!(status, 200);
    assert!(
        metrics.contains(
            "rosetta_requests_total{route=\"/translate\",status=\"200\",model=\"en-fr\"} 4"
        ),
        "{metrics}"
    );
    // 1 + 3 + 1 + 1 sentences on /translate, 2 on /translator/translate.
    assert!(
        metrics.contains("rosetta_sentences_total{model=\"en-fr\"} 8"),
        "{metrics}"
    );
    assert!(metrics.contains("rosetta_request_duration_seconds_count"));
    assert!(metrics.contains("rosetta_batch_sentences_bucket"));

    let status = server.terminate();
    assert!(status.success(), "exit status {status}");
}

#[test]
fn bad_requests_get_a_json_error_and_the_server_lives_on() {
    let server = ServerProcess::start(
        trained_run(),
        &[
            "--beam",
            "2",
            "--max-request-bytes",
            "2000",
            "--max-sentences",
            "4",
            "--max-sentence-chars",
            "200",
        ],
    );
    let translate = format!("{}/translate", server.url);
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        ("malformed JSON", b"{\"q\": ".to_vec(), 400, "invalid JSON"),
        ("empty body", Vec::new(), 400, "empty"),
        (
            "q is a number",
            br#"{"q": 5}"#.to_vec(),
            400,
            "expected `q` to be a string or an array of strings",
        ),
        (
            "q missing",
            br#"{"text": "a"}"#.to_vec(),
            400,
            "missing field `q`",
        ),
        (
            "q is an empty array",
            br#"{"q": []}"#.to_vec(),
            400,
            "empty array",
        ),
        (
            "wrong source",
            br#"{"q": "a", "source": "de"}"#.to_vec(),
            400,
            "`source`",
        ),
        (
            "wrong target",
            br#"{"q": "a", "target": "es"}"#.to_vec(),
            400,
            "`target`",
        ),
        (
            "alternatives with html",
            br#"{"q": "<p>a</p>", "format": "html", "alternatives": 1}"#.to_vec(),
            400,
            "`alternatives`",
        ),
        (
            "unknown format",
            br#"{"q": "a", "format": "markdown"}"#.to_vec(),
            400,
            "`format`",
        ),
        (
            "too many alternatives",
            br#"{"q": "a", "alternatives": 2}"#.to_vec(),
            400,
            "`alternatives`",
        ),
        (
            "negative alternatives",
            br#"{"q": "a", "alternatives": -1}"#.to_vec(),
            400,
            "invalid JSON",
        ),
        (
            "invalid UTF-8",
            b"{\"q\": \"\xff\xfe\"}".to_vec(),
            400,
            "UTF-8",
        ),
        (
            "too many sentences",
            br#"{"q": ["a", "b", "c", "d", "e"]}"#.to_vec(),
            413,
            "--max-sentences",
        ),
        (
            "over-long sentence",
            format!(r#"{{"q": "{}"}}"#, "one ".repeat(60)).into_bytes(),
            413,
            "--max-sentence-chars",
        ),
        (
            "body over the limit",
            format!(r#"{{"q": "{}"}}"#, "x".repeat(3000)).into_bytes(),
            413,
            "--max-request-bytes",
        ),
    ];
    for (name, body, want_status, want_text) in cases {
        let (status, json) = post_raw(&translate, &body);
        assert_eq!(status, want_status, "{name}: {json}");
        let message = json["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: {json}"));
        assert!(message.contains(want_text), "{name}: {message}");
    }
    let (status, json) = post_raw(
        &format!("{}/translator/translate", server.url),
        br#"{"src": "a"}"#,
    );
    assert_eq!(status, 400, "{json}");
    let (status, json) = post_raw(&format!("{}/no-such-thing", server.url), b"{}");
    assert_eq!(status, 404, "{json}");
    assert!(json["error"].is_string());
    let (status, body) = get(&translate);
    assert_eq!(status, 405, "{body}");
    assert!(serde_json::from_str::<Value>(&body).expect("JSON")["error"].is_string());

    // Still serving.
    let (status, json) = post(&translate, &json!({ "q": "twelve" }));
    assert_eq!(status, 200, "{json}");
}

#[test]
fn impossible_options_are_refused_before_the_model_loads() {
    for (args, option) in [
        (vec!["--beam", "0"], "--beam"),
        (vec!["--beam", "2", "--nbest", "3"], "--nbest"),
        (vec!["--max-len-a", "1e300"], "--max-len-a"),
        (vec!["--max-sentences", "0"], "--max-sentences"),
    ] {
        let mut full = vec!["serve", "--checkpoint", "/no/such/run", "--port", "0"];
        full.extend(&args);
        let out = rosetta(&full);
        assert!(!out.status.success(), "{args:?} was accepted");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(option), "{args:?}: {stderr}");
    }
}

#[test]
fn concurrent_clients_get_what_offline_translate_gives() {
    let run = trained_run();
    let sentences = test_sentences(64);
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("input.en");
    std::fs::write(&input, sentences.join("\n") + "\n").expect("write input");
    let output = dir.path().join("output.fr");
    let run_arg = run.to_str().expect("utf-8");
    let translated = rosetta(&[
        "translate",
        "--checkpoint",
        run_arg,
        "--beam",
        "2",
        "--input",
        input.to_str().expect("utf-8"),
        "--output",
        output.to_str().expect("utf-8"),
    ]);
    assert_success(&translated);
    let offline: Vec<String> = std::fs::read_to_string(&output)
        .expect("output")
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(offline.len(), sentences.len());

    let server = ServerProcess::start(run, &["--beam", "2", "--max-wait-ms", "20"]);
    let url = format!("{}/translate", server.url);
    // 32 clients, two sentences each, one request per sentence, all at once.
    let clients: Vec<_> = (0..32)
        .map(|c| {
            let url = url.clone();
            let mine: Vec<(usize, String)> = [c, c + 32]
                .into_iter()
                .map(|i| (i, sentences[i].clone()))
                .collect();
            std::thread::spawn(move || {
                mine.into_iter()
                    .map(|(i, s)| {
                        let (status, json) = post(&url, &json!({ "q": s }));
                        assert_eq!(status, 200, "{json}");
                        (
                            i,
                            json["translatedText"].as_str().expect("text").to_string(),
                        )
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut served = vec![String::new(); sentences.len()];
    for client in clients {
        for (i, text) in client.join().expect("client thread") {
            served[i] = text;
        }
    }
    assert_eq!(served, offline);
    // The requests were decoded together, not one by one.
    let (_, metrics) = get(&format!("{}/metrics", server.url));
    assert!(
        metrics.contains("rosetta_sentences_total{model=\"en-fr\"} 64"),
        "{metrics}"
    );
    let batches: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("rosetta_batch_sentences_count{model=\"en-fr\"} "))
        .and_then(|n| n.parse().ok())
        .expect("batch count");
    assert!(
        batches < 64,
        "{batches} batches for 64 concurrent sentences"
    );
}

#[test]
fn sigterm_finishes_the_request_in_flight() {
    // Long outputs, so that decoding the 100 sentences takes a while.
    let mut server = ServerProcess::start(
        trained_run(),
        &["--beam", "5", "--max-len-a", "3", "--max-len-b", "30"],
    );
    let url = format!("{}/translate", server.url);
    let sentences = test_sentences(100);
    let in_flight = std::thread::spawn(move || post(&url, &json!({ "q": sentences })));
    // Wait until the worker is decoding the request, then send the signal.
    let metrics = format!("{}/metrics", server.url);
    let started = std::time::Instant::now();
    while !get(&metrics)
        .1
        .contains("rosetta_decoding_sentences{model=\"en-fr\"} 100")
    {
        assert!(
            !in_flight.is_finished() && started.elapsed().as_secs() < 60,
            "the request was answered before the test saw it being decoded"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let status = server.terminate();
    let (code, json) = in_flight.join().expect("client thread");
    assert_eq!(code, 200, "{json}");
    assert_eq!(json["translatedText"].as_array().map(Vec::len), Some(100));
    assert!(status.success(), "exit status {status}");
    assert!(
        server
            .remaining_stdout()
            .contains("stopped after finishing the requests in flight")
    );
}

#[test]
fn a_full_queue_answers_429_with_retry_after() {
    // One request decoding, one waiting; the others arrive meanwhile and are refused, told when
    // to try again.
    let server = ServerProcess::start(trained_run(), &["--max-queue", "1", "--beam", "5"]);
    let url = format!("{}/translate", server.url);
    let sentences = test_sentences(128);
    let responses: Vec<(u16, Option<String>, String)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (url, sentences) = (&url, &sentences);
                scope.spawn(move || {
                    let mut response = common::client()
                        .post(url)
                        .header("content-type", "application/json")
                        .send(json!({ "q": sentences }).to_string().as_bytes())
                        .expect("request");
                    let retry = response
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string);
                    let status = response.status().as_u16();
                    (
                        status,
                        retry,
                        response.body_mut().read_to_string().expect("body"),
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("client"))
            .collect()
    });
    let refused: Vec<_> = responses
        .iter()
        .filter(|(status, ..)| *status == 429)
        .collect();
    assert!(!refused.is_empty(), "no request refused: {responses:?}");
    for (status, retry, body) in &responses {
        assert!(*status == 200 || *status == 429, "{status}: {body}");
        if *status == 429 {
            assert_eq!(retry.as_deref(), Some("1"), "{body}");
            let body: Value = serde_json::from_str(body).expect("a JSON body");
            assert!(
                body["error"]
                    .as_str()
                    .expect("message")
                    .contains("queue is full")
            );
        }
    }
}

/// `rosetta serve --quantize int8` answers what `rosetta translate --quantize int8` writes: the
/// inputs are quantized row by row, so a sentence's translation does not depend on the batch
/// the server puts it in.
#[test]
fn an_int8_server_answers_what_offline_int8_translates() {
    let run = trained_run();
    let sentences = test_sentences(16);
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("input.en");
    std::fs::write(&input, sentences.join("\n") + "\n").expect("write input");
    let output = dir.path().join("output.fr");
    let run_arg = run.to_str().expect("utf-8");
    assert_success(&rosetta(&[
        "translate",
        "--checkpoint",
        run_arg,
        "--beam",
        "2",
        "--quantize",
        "int8",
        "--input",
        input.to_str().expect("utf-8"),
        "--output",
        output.to_str().expect("utf-8"),
    ]));
    let offline: Vec<String> = std::fs::read_to_string(&output)
        .expect("output")
        .lines()
        .map(str::to_string)
        .collect();
    let server = ServerProcess::start(run, &["--beam", "2", "--quantize", "int8"]);
    let url = format!("{}/translate", server.url);
    let (status, json) = post(&url, &json!({ "q": sentences }));
    assert_eq!(status, 200, "{json}");
    let batch: Vec<String> = json["translatedText"]
        .as_array()
        .expect("texts")
        .iter()
        .map(|t| t.as_str().expect("text").to_string())
        .collect();
    assert_eq!(batch, offline);
    for (sentence, expected) in sentences.iter().zip(&offline).take(4) {
        let (status, json) = post(&url, &json!({ "q": sentence }));
        assert_eq!(status, 200, "{json}");
        assert_eq!(json["translatedText"].as_str(), Some(expected.as_str()));
    }
}
