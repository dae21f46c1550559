//! `stpreset serve` driven from outside: the HTTP answers a browser, a script or a hostile page
//! gets. HTTP/1.1 is written by hand here so that malformed and hostile requests (wrong
//! `Host`, foreign `Origin`, lying lengths) can be sent as they are; a client crate would
//! refuse to send most of them.
#![cfg(feature = "serve")]

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::Duration;

use support::{arg, bin, stpreset, temp, text};

const PRESET: &[u8] = br#"{"prompts": [
    {"identifier": "main", "name": "Main", "content": "You are {{char}}.\nSay {{frobnicate}}."},
    {"identifier": "chatHistory", "marker": true},
    {"identifier": "jb", "name": "JB", "content": "Stay in character.", "injection_position": 1, "injection_depth": 1}]}"#;

const CONTEXT: &[u8] = br#"{"user": "Alice", "char": "Tomori", "items": [
    {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "Hi"},
    {"tag": "DIALOGUE_HISTORY", "role": "model", "text": "Hello"}]}"#;

/// A running `stpreset serve`, killed when dropped.
struct Server {
    child: Child,
    /// `127.0.0.1:PORT`.
    host: String,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let mut child = bin()
            .arg("serve")
            .args(args)
            .args(["--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("serve starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("prints its URL");
        let host = line
            .trim()
            .strip_prefix("http://")
            .and_then(|h| h.strip_suffix('/'))
            .unwrap_or_else(|| panic!("a URL, not {line:?}"))
            .to_string();
        Server { child, host }
    }

    /// Sends `head` (request line and headers, without the blank line) and `body`, with the
    /// server's own `Host` unless `head` names one.
    fn send(&self, head: &str, body: &[u8]) -> Reply {
        let mut req = head.to_string();
        if !head.to_ascii_lowercase().contains("\nhost:") {
            req.push_str(&format!("\r\nHost: {}", self.host));
        }
        req.push_str(&format!(
            "\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        ));
        let mut bytes = req.into_bytes();
        bytes.extend_from_slice(body);
        self.send_raw(&bytes)
    }

    /// Sends `bytes` as they are and reads the answer.
    fn send_raw(&self, bytes: &[u8]) -> Reply {
        let mut s = TcpStream::connect(&self.host).expect("connects");
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        // The server may answer and close before a refused body is all sent.
        let _ = s.write_all(bytes);
        let mut raw = Vec::new();
        let _ = s.read_to_end(&mut raw);
        Reply::parse(&raw)
    }

    fn get(&self, path: &str) -> Reply {
        self.send(&format!("GET {path} HTTP/1.1"), b"")
    }

    fn post(&self, path: &str, body: &[u8]) -> Reply {
        self.send(
            &format!("POST {path} HTTP/1.1\r\nContent-Type: application/json"),
            body,
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Reply {
    status: u16,
    head: String,
    body: String,
}

impl Reply {
    fn parse(raw: &[u8]) -> Reply {
        let raw = text(raw);
        let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("an HTTP answer, not {raw:?}"));
        Reply {
            status,
            head: head.to_ascii_lowercase(),
            body: body.to_string(),
        }
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    fn error_kind(&self) -> String {
        self.json()["error"]["kind"]
            .as_str()
            .unwrap_or_else(|| panic!("an error, not {}", self.body))
            .to_string()
    }
}

fn body(preset: &[u8], context: &[u8], extra: &str) -> Vec<u8> {
    let mut b = b"{\"preset\":".to_vec();
    b.extend_from_slice(preset);
    b.extend_from_slice(b",\"context\":");
    b.extend_from_slice(context);
    b.extend_from_slice(extra.as_bytes());
    b.push(b'}');
    b
}

/// What the CLI prints for `args`, without the final newline.
fn cli(args: &[&str]) -> String {
    let out = stpreset(args, None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout).trim_end_matches('\n').to_string()
}

#[test]
fn the_page_and_its_assets_carry_a_strict_policy() {
    let server = Server::start(&[]);
    for (path, kind) in [
        ("/", "text/html"),
        ("/app.js", "text/javascript"),
        ("/style.css", "text/css"),
    ] {
        let r = server.get(path);
        assert_eq!(r.status, 200, "{path}");
        assert!(
            r.head.contains(&format!("content-type: {kind}")),
            "{}",
            r.head
        );
        assert!(r.head.contains("script-src 'self'"), "{}", r.head);
        assert!(r.head.contains("x-content-type-options: nosniff"));
    }
    let page = server.get("/").body;
    assert!(page.contains(r#"id="messages""#) && page.contains(r#"id="diagnostics""#));
    // No inline script, no other origin: the policy would refuse them anyway.
    assert!(!page.contains("<script>") && !page.contains("http"));
}

#[test]
fn the_api_answers_with_the_clis_documents() {
    let preset = temp("serve-api-preset.json", PRESET);
    let context = temp("serve-api-context.json", CONTEXT);
    let (p, c) = (arg(&preset), arg(&context));
    let server = Server::start(&[]);
    let r = server.post("/api/render", &body(PRESET, CONTEXT, ""));
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.head.contains("content-type: application/json"));
    assert_eq!(
        r.body,
        cli(&["render", p, "--context", c, "--format", "json"])
    );
    let r = server.post("/api/audit", &body(PRESET, CONTEXT, ""));
    assert_eq!(r.body, cli(&["audit", p, "--format", "json"]));
    for shape in ["openai", "anthropic", "google"] {
        let r = server.post(
            "/api/request",
            &body(PRESET, CONTEXT, &format!(r#","shape":"{shape}""#)),
        );
        let want = cli(&[
            "render",
            p,
            "--context",
            c,
            "--shape",
            shape,
            "--format",
            "json",
        ]);
        assert_eq!(r.body, want, "{shape}");
    }
    // `gemini` is `google`; an unknown name is a 400 naming the field.
    let r = server.post(
        "/api/request",
        &body(PRESET, CONTEXT, r#","shape":"gemini""#),
    );
    let google = server.post(
        "/api/request",
        &body(PRESET, CONTEXT, r#","shape":"google""#),
    );
    assert_eq!(r.body, google.body);
    let r = server.post("/api/request", &body(PRESET, CONTEXT, r#","shape":"palm""#));
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("gemini"), "{}", r.body);
    // Toggles and regex permission change the render as the library's own switches do.
    let r = server.post(
        "/api/render",
        &body(PRESET, CONTEXT, r#","toggles":{"jb":false}"#),
    );
    assert!(!r.body.contains("Stay in character"), "{}", r.body);
    let r = server.post("/api/preview", &body(PRESET, CONTEXT, ""));
    let v = r.json();
    assert_eq!(
        serde_json::to_string(&v["render"]).unwrap(),
        cli(&["render", p, "--context", c, "--format", "json"])
    );
    assert_eq!(v["nodes"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        v["sources"]["main"],
        "You are {{char}}.\nSay {{frobnicate}}."
    );
}

/// Issue 39: `--card` and `--book` as `render` has them: merged into the page's context (the
/// card's fields where the context leaves them unset, the books in `lorebooks`), and the page's
/// render activates them.
#[test]
fn start_merges_a_card_and_books_into_the_context() {
    let preset = temp(
        "serve-card-preset.json",
        br#"{"prompts": [{"identifier": "main", "content": "{{char}}: {{description}}"},
            {"identifier": "worldInfoBefore", "marker": true},
            {"identifier": "chatHistory", "marker": true}]}"#,
    );
    let context = temp(
        "serve-card-context.json",
        br#"{"user": "Alice", "position": 1, "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "rain and bells"}]}"#,
    );
    let card = temp(
        "serve-card.json",
        br#"{"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Sera",
            "description": "A shrine keeper.", "character_book": {"entries": [
                {"id": 1, "keys": ["bells"], "content": "The bells ring.", "enabled": true}]}}}"#,
    );
    let book = temp(
        "serve-card-book.json",
        br#"{"entries": {"0": {"key": ["rain"], "content": "It rains."}}}"#,
    );
    let spec = format!("town={}", arg(&book));
    let server = Server::start(&[
        arg(&preset),
        "--context",
        arg(&context),
        "--card",
        arg(&card),
        "--book",
        &spec,
    ]);
    let v = server.get("/api/start").json();
    assert_eq!(v["errors"], serde_json::json!([]), "{v}");
    let text = v["context"]["text"].as_str().unwrap();
    let ctx: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(
        (ctx["user"].as_str(), ctx["char"].as_str()),
        (Some("Alice"), Some("Sera"))
    );
    let names: Vec<&str> = ctx["lorebooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.contains(&"town"), "{names:?}");
    // The page renders what it was given: both books activate.
    let out = server
        .post(
            "/api/render",
            &body(&std::fs::read(&preset).unwrap(), text.as_bytes(), ""),
        )
        .json();
    let all = out.to_string();
    assert!(all.contains("Sera: A shrine keeper."), "{all}");
    assert!(
        all.contains("The bells ring.") && all.contains("It rains."),
        "{all}"
    );
}

#[test]
fn start_reads_the_files_again_on_every_page_load() {
    let preset = temp("serve-start-preset.json", PRESET);
    let context = temp("serve-start-context.json", CONTEXT);
    let server = Server::start(&[arg(&preset), "--context", arg(&context)]);
    let v = server.get("/api/start").json();
    assert_eq!(
        v["preset"]["text"].as_str().map(str::as_bytes),
        Some(PRESET)
    );
    assert_eq!(v["preset"]["name"], "serve-start-preset.json");
    assert_eq!(
        v["context"]["text"].as_str().map(str::as_bytes),
        Some(CONTEXT)
    );
    std::fs::write(&preset, b"{\"prompts\": []}").unwrap();
    let v = server.get("/api/start").json();
    assert_eq!(v["preset"]["text"], "{\"prompts\": []}");
    // A file gone or grown past the limit is an error the page shows, not a dead server.
    std::fs::write(&preset, vec![b' '; (2 << 20) + 1]).unwrap();
    let v = server.get("/api/start").json();
    assert_eq!(v["preset"], serde_json::Value::Null);
    assert!(v["errors"][0].as_str().unwrap().contains("over the limit"));
    // A byte order mark is dropped, as the library drops it: the page embeds the text in JSON.
    std::fs::write(&preset, [b"\xEF\xBB\xBF".as_slice(), PRESET].concat()).unwrap();
    let v = server.get("/api/start").json();
    assert_eq!(
        v["preset"]["text"].as_str().map(str::as_bytes),
        Some(PRESET)
    );
    // Without files: no preset, the sample chat.
    let bare = Server::start(&[]);
    let v = bare.get("/api/start").json();
    assert_eq!(v["preset"], serde_json::Value::Null);
    assert_eq!(v["context"]["name"], "");
    assert!(
        v["context"]["text"]
            .as_str()
            .unwrap()
            .contains("DIALOGUE_HISTORY")
    );
}

#[test]
fn foreign_hosts_and_origins_are_refused() {
    let server = Server::start(&[]);
    let port = server.host.rsplit(':').next().unwrap().to_string();
    // DNS rebinding: another site's name pointed at 127.0.0.1.
    let r = server.send("GET /api/start HTTP/1.1\r\nHost: evil.example", b"");
    assert_eq!((r.status, r.error_kind()), (403, "host".into()));
    let r = server.send_raw(b"GET / HTTP/1.0\r\n\r\n"); // no Host at all
    assert_eq!(r.status, 403, "{}", r.body);
    for ok in ["localhost", "127.0.0.1", "LOCALHOST"] {
        let r = server.send(&format!("GET / HTTP/1.1\r\nHost: {ok}:{port}"), b"");
        assert_eq!(r.status, 200, "{ok}");
    }
    // A page of another site posting to the API.
    let evil = "POST /api/render HTTP/1.1\r\nContent-Type: application/json\r\nOrigin: http://evil.example";
    let r = server.send(evil, &body(PRESET, CONTEXT, ""));
    assert_eq!((r.status, r.error_kind()), (403, "origin".into()));
    let r = server.send(
        "POST /api/render HTTP/1.1\r\nContent-Type: application/json\r\nOrigin: null",
        &body(PRESET, CONTEXT, ""),
    );
    assert_eq!(r.status, 403);
    let own = format!(
        "POST /api/render HTTP/1.1\r\nContent-Type: application/json\r\nOrigin: http://{}",
        server.host
    );
    assert_eq!(server.send(&own, &body(PRESET, CONTEXT, "")).status, 200);
    // The page of another port of this machine is another site.
    let other =
        "POST /api/render HTTP/1.1\r\nContent-Type: application/json\r\nOrigin: http://127.0.0.1:1";
    assert_eq!(server.send(other, &body(PRESET, CONTEXT, "")).status, 403);
    // Two Origins, two Hosts, or an absolute target naming another host: refused, whatever
    // comes first.
    let two = format!("{own}\r\nOrigin: http://evil.example");
    assert_eq!(server.send(&two, &body(PRESET, CONTEXT, "")).status, 403);
    let two = format!(
        "GET / HTTP/1.1\r\nHost: {}\r\nHost: evil.example",
        server.host
    );
    assert_eq!(server.send(&two, b"").status, 403);
    let absolute = format!(
        "GET http://evil.example/api/start HTTP/1.1\r\nHost: {}",
        server.host
    );
    assert_eq!(server.send(&absolute, b"").status, 403);
    let absolute = format!("GET http://{0}/ HTTP/1.1\r\nHost: {0}", server.host);
    assert_eq!(server.send(&absolute, b"").status, 200);
}

#[test]
fn wrong_methods_paths_types_and_bodies_are_json_errors() {
    let server = Server::start(&[]);
    let cases: Vec<(Reply, u16, &str)> = vec![
        (server.get("/api/render"), 405, "method"),
        (server.post("/", b"{}"), 405, "method"),
        (
            server.send("DELETE /api/preview HTTP/1.1", b""),
            405,
            "method",
        ),
        (server.get("/../../etc/passwd"), 404, "not_found"),
        (server.get("/api/nope"), 404, "not_found"),
        (
            server.send(
                "POST /api/render HTTP/1.1\r\nContent-Type: text/plain",
                &body(PRESET, CONTEXT, ""),
            ),
            415,
            "media_type",
        ),
        (
            server.send(
                "POST /api/render HTTP/1.1\r\nContent-Type: application/json\r\nContent-Encoding: gzip",
                &body(PRESET, CONTEXT, ""),
            ),
            415,
            "media_type",
        ),
        (
            server.send(
                "POST /api/render HTTP/1.1\r\nContent-Type: application/json\r\nContent-Type: text/plain",
                &body(PRESET, CONTEXT, ""),
            ),
            415,
            "media_type",
        ),
        (server.post("/api/render", b"{\"preset\":"), 400, "request"),
        (server.post("/api/render", b"[]"), 400, "request"),
        (
            server.post("/api/render", &body(b"{\"prompts\": 3}", b"null", "")),
            422,
            "preset",
        ),
        (
            server.post("/api/render", &body(PRESET, b"{\"items\": 3}", "")),
            422,
            "context",
        ),
        (
            server.post(
                "/api/render",
                &body(PRESET, CONTEXT, r#","toggles":{"x":true}"#),
            ),
            422,
            "toggles",
        ),
        (
            server.post("/api/request", &body(PRESET, CONTEXT, "")),
            422,
            "shape",
        ),
    ];
    for (r, status, kind) in cases {
        assert_eq!(
            (r.status, r.error_kind()),
            (status, kind.into()),
            "{}",
            r.body
        );
        assert!(r.head.contains("content-type: application/json"));
    }
}

#[test]
fn bodies_past_the_cap_are_refused_without_being_read_whole() {
    let server = Server::start(&[]);
    // A 6 MiB body: over the cap of two 2 MiB inputs and the options.
    let big = vec![b' '; 6 << 20];
    let r = server.post("/api/render", &big);
    assert_eq!((r.status, r.error_kind()), (413, "too_large".into()));
    // A length over the cap is refused at once, before any body is waited for (the body here
    // never comes: waiting would take the body timeout).
    let head = "POST /api/render HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 99999999999";
    let r = server.send_raw(format!("{head}\r\nHost: {}\r\n\r\n", server.host).as_bytes());
    assert_eq!((r.status, r.error_kind()), (413, "too_large".into()));
    // A preset over the CLI's limit inside a body within the cap.
    let preset = format!(r#"{{"prompts": [], "pad": "{}"}}"#, "x".repeat(2 << 20));
    let r = server.post("/api/render", &body(preset.as_bytes(), b"null", ""));
    assert_eq!((r.status, r.error_kind()), (413, "too_large".into()));
    // The server still answers.
    assert_eq!(
        server
            .post("/api/render", &body(PRESET, CONTEXT, ""))
            .status,
        200
    );
}

#[test]
fn clients_that_never_send_their_bodies_fill_the_api_but_not_the_page() {
    let server = Server::start(&[]);
    // Requests that announce a body and never send it hold every admission (8). Sixteen, since
    // the server takes them in its own time: one that comes while a probe below holds the last
    // slot is refused (and done), and the slot stays the probes'.
    let head = format!(
        "POST /api/render HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n",
        server.host
    );
    let _stalled: Vec<TcpStream> = (0..16)
        .map(|_| {
            let mut s = TcpStream::connect(&server.host).unwrap();
            s.write_all(head.as_bytes()).unwrap();
            s
        })
        .collect();
    // Ask until the API says it is busy.
    std::thread::sleep(Duration::from_millis(100));
    let deadline = std::time::Instant::now() + Duration::from_secs(8);
    let busy = loop {
        let r = server.post("/api/render", &body(PRESET, CONTEXT, ""));
        if r.status == 503 || std::time::Instant::now() > deadline {
            break r;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!((busy.status, busy.error_kind()), (503, "busy".into()));
    assert!(busy.head.contains("retry-after: 1"));
    // The page and its first preset still load.
    assert_eq!(server.get("/").status, 200);
    assert_eq!(server.get("/api/start").status, 200);
}

#[test]
fn concurrent_previews_all_get_their_own_answer() {
    let server = Server::start(&[]);
    let want = server.post("/api/preview", &body(PRESET, CONTEXT, "")).body;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let (server, want) = (&server, &want);
                s.spawn(move || {
                    for k in 0..4 {
                        let on = (t + k) % 2 == 0;
                        let extra = format!(r#","toggles":{{"jb":{on}}}"#);
                        let r = server.post("/api/preview", &body(PRESET, CONTEXT, &extra));
                        // A busy server may ask to retry; every other answer is the right one.
                        if r.status == 503 {
                            continue;
                        }
                        assert_eq!(r.status, 200, "{}", r.body);
                        assert_eq!(r.body.contains("Stay in character"), on);
                        if on {
                            assert_eq!(&r.body, want);
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("client thread");
        }
    });
}

#[test]
fn start_up_refusals_are_one_line_and_exit_1() {
    let out = stpreset(&["serve", "-"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("not `-`"),
        "{}",
        text(&out.stderr)
    );
    let out = stpreset(&["serve", "/nonexistent/preset.json"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("cannot read"));
    // A port someone else holds, asked for by number: no silent move to another one.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = stpreset(&["serve", "--port", &port], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("cannot listen"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn listening_beyond_loopback_warns() {
    let mut child = bin()
        .args(["serve", "--bind", "0.0.0.0", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve starts");
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.contains("other machines can reach"), "{line}");
}
