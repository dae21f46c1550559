//! `stpreset serve`: the previewer, one page and its JSON API on a local HTTP server
//! (docs/serve.md). The server keeps no state between requests: every answer is computed from
//! the request (and, for `/api/start`, from the files named on the command line, read again
//! on every page load so an author who edits the preset sees the edit on reload).

mod api;
mod http;
mod stored;

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use clap::Args;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::Failure;
use api::{Answer, Endpoint};

#[derive(Args)]
pub(crate) struct ServeArgs {
    /// Preset file shown as soon as the page loads (read again on every page load).
    preset: Option<PathBuf>,
    /// Context file the page renders with (default: the built-in sample chat).
    #[arg(long, value_name = "CTX.json")]
    context: Option<PathBuf>,
    /// A character card (PNG or JSON) merged into the page's context: its fields where the
    /// context leaves them unset, and its lorebook (read again on every page load).
    #[arg(long, value_name = "CARD")]
    card: Option<PathBuf>,
    /// A lorebook added to the page's context, `[NAME=]PATH` (as `render --book`). Repeatable.
    #[arg(long = "book", value_name = "[NAME=]PATH")]
    books: Vec<String>,
    /// Port; by default 8080, or the next free one up to 8179. `0` lets the system choose.
    #[arg(long)]
    port: Option<u16>,
    /// Preview a preset of the store instead of a file: the SQLite file or PostgreSQL
    /// connection string, as `stpreset store --db`. The page gets "Save to store", which
    /// writes its switches through the store's checked toggle.
    #[arg(
        long,
        value_name = "FILE|CONNINFO",
        requires = "server",
        conflicts_with = "preset"
    )]
    db: Option<PathBuf>,
    /// The server whose preset `--db` previews.
    #[arg(
        long,
        value_name = "SERVER_ID",
        requires = "db",
        allow_negative_numbers = true
    )]
    server: Option<i64>,
    /// The stored preset's id (default: the server's active preset).
    #[arg(long, value_name = "PRESET_ID", requires = "db")]
    stored: Option<i64>,
    /// Address to listen on. Anything but a loopback address lets other machines reach the
    /// page (and, with `--db`, change the stored switches): only do that on a network you
    /// trust.
    #[arg(long, value_name = "ADDR", default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    bind: IpAddr,
}

/// The built-in sample chat: the repository's example context (a shrine maiden, a friend,
/// host items of every common tag).
const SAMPLE_CONTEXT: &str = include_str!("../../../examples/context.json");

const INDEX_HTML: &str = include_str!("page/index.html");
const APP_JS: &str = include_str!("page/app.js");
const STYLE_CSS: &str = include_str!("page/style.css");

/// Renders at once: each may take a core and a few hundred MiB at the input limits.
const WORKERS: usize = 2;
/// Requests admitted at once, from reading their bodies to the last chunk of their answers:
/// bounds the memory bodies and answers hold. More are refused with 503.
const ADMITTED: usize = 8;
/// Longest a request may take to send its body (a 5 MiB body over loopback takes
/// milliseconds).
const BODY_PATIENCE: Duration = Duration::from_secs(10);
/// Longest a request waits for a worker.
const PATIENCE: Duration = Duration::from_secs(30);
/// `/api/start` answers at once: its own few slots, so requests still sending their bodies
/// cannot keep the page from loading.
const STARTS: usize = 4;

struct Shared {
    preset: Option<PathBuf>,
    store: Option<Arc<stored::Stored>>,
    context: Option<PathBuf>,
    card: Option<PathBuf>,
    books: Vec<String>,
    /// `Host` header values this server answers to (empty: any, when bound to every address).
    hosts: Vec<String>,
    admitted: Arc<Semaphore>,
    workers: Arc<Semaphore>,
    starts: Arc<Semaphore>,
}

pub(crate) fn run(args: ServeArgs) -> Result<(), Failure> {
    for (path, what) in [(&args.preset, "preset"), (&args.context, "context")] {
        let Some(path) = path else { continue };
        if path.as_os_str() == "-" {
            return Err(Failure(
                "serve reads its files again on every page load: give a path, not `-`".into(),
            ));
        }
        // Read once now so a typo fails at start, not on the page.
        super::read(path, what)?;
    }
    if let Some(card) = &args.card {
        super::lore::card(card)?;
    }
    for spec in &args.books {
        super::lore::book_bytes(super::lore::book_spec(spec).1)?;
    }
    let store = match (args.db, args.server) {
        (Some(db), Some(server)) => {
            let target = stored::Stored {
                db,
                server,
                id: args.stored,
            };
            // Opened once now so a wrong path or id fails at start, not on the page.
            target.start().map_err(Failure)?;
            Some(Arc::new(target))
        }
        _ => None,
    };
    let listener = bind(args.bind, args.port)?;
    let addr = listener
        .local_addr()
        .map_err(|e| Failure(format!("cannot serve: {e}")))?;
    let shared = Arc::new(Shared {
        preset: args.preset,
        store,
        context: args.context,
        card: args.card,
        books: args.books,
        hosts: allowed_hosts(addr),
        admitted: Arc::new(Semaphore::new(ADMITTED)),
        workers: Arc::new(Semaphore::new(WORKERS)),
        starts: Arc::new(Semaphore::new(STARTS)),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        // Renders run on blocking threads; deep templates want the main thread's room.
        .thread_stack_size(8 << 20)
        .enable_all()
        .build()
        .map_err(|e| Failure(format!("cannot start the server: {e}")))?;
    // The tokenizers load in the background: the first page's counts need them.
    std::thread::spawn(|| stpreset::tokens::Tokenizer::Auto.preload());
    announce(addr);
    runtime.block_on(async move {
        listener
            .set_nonblocking(true)
            .map_err(|e| Failure(format!("cannot serve: {e}")))?;
        let listener = tokio::net::TcpListener::from_std(listener)
            .map_err(|e| Failure(format!("cannot serve: {e}")))?;
        tokio::select! {
            () = http::serve(listener, router(shared)) => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        Ok(())
    })
}

/// Binds `port`, or 8080 and the next ports up to 8179 when none is given.
fn bind(ip: IpAddr, port: Option<u16>) -> Result<TcpListener, Failure> {
    let ports: Vec<u16> = match port {
        Some(p) => vec![p],
        None => (8080..8180).collect(),
    };
    let mut last = None;
    for p in ports {
        match TcpListener::bind(SocketAddr::new(ip, p)) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some((p, e)),
        }
    }
    let (p, e) = last.unwrap_or((0, std::io::Error::other("no port to try")));
    let tried = match port {
        Some(_) => format!("port {p}"),
        None => "ports 8080 to 8179".into(),
    };
    Err(Failure(format!("cannot listen on {ip}, {tried}: {e}")))
}

/// The URL on stdout (the first line, for scripts and tests); a warning on stderr when the
/// page is reachable from other machines.
fn announce(addr: SocketAddr) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    // `127.0.0.1:8080`, `[::1]:8080`: the form a browser's `Host` takes too.
    let _ = writeln!(out, "http://{addr}/");
    let _ = out.flush();
    if !addr.ip().is_loopback() {
        let _ = writeln!(
            std::io::stderr(),
            "stpreset: warning: listening on {} — other machines can reach this page",
            addr.ip()
        );
    }
}

/// The `Host` values a browser sends to this server. Checking them stops DNS rebinding: a web
/// page of another site that resolves its own name to 127.0.0.1 could otherwise read the
/// preset and context files this server was started with.
fn allowed_hosts(addr: SocketAddr) -> Vec<String> {
    if addr.ip().is_unspecified() {
        return Vec::new();
    }
    let port = addr.port();
    let mut hosts = vec![addr.to_string()];
    if addr.ip().is_loopback() {
        for name in ["localhost", "127.0.0.1", "[::1]"] {
            hosts.push(format!("{name}:{port}"));
        }
    }
    hosts
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route(
            "/",
            get(|| async { asset(INDEX_HTML, "text/html; charset=utf-8") }),
        )
        .route(
            "/app.js",
            get(|| async { asset(APP_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/style.css",
            get(|| async { asset(STYLE_CSS, "text/css; charset=utf-8") }),
        )
        .route("/api/start", get(start))
        .route("/api/preview", post(preview))
        .route("/api/render", post(render))
        .route("/api/audit", post(audit))
        .route("/api/request", post(request))
        .route("/api/switch", post(switch))
        .route("/api/store/save", post(save))
        .fallback(|| async { json(Answer::error(404, "not_found", "no such page")) })
        .method_not_allowed_fallback(|| async {
            json(Answer::error(405, "method", "method not allowed here"))
        })
        .layer(middleware::from_fn_with_state(shared.clone(), guard))
        .with_state(shared)
}

fn asset(text: &'static str, kind: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], text).into_response()
}

fn json(answer: Answer) -> Response {
    held(answer, Vec::new())
}

/// An answer whose body keeps `permits` until it is sent.
fn held(answer: Answer, permits: Vec<OwnedSemaphorePermit>) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        http::Held::body(answer.body, permits),
    )
        .into_response()
}

/// Every request: one `Host`, this server's (and an absolute target naming it too); a `POST`
/// from this server's own page (or from no page at all: curl, a test); and every answer
/// carries headers that keep the page from loading anything but itself.
async fn guard(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let mut hosts = headers.get_all(header::HOST).iter();
    let host = match (hosts.next().map(|h| h.to_str()), hosts.next()) {
        (Some(Ok(host)), None) => Some(host),
        _ => None,
    };
    let allowed =
        |h: &str| shared.hosts.is_empty() || shared.hosts.iter().any(|a| a.eq_ignore_ascii_case(h));
    let target_ok = request
        .uri()
        .authority()
        .is_none_or(|a| host.is_some_and(|h| a.as_str().eq_ignore_ascii_case(h)));
    let mut response = if !host.is_some_and(allowed) || !target_ok {
        json(Answer::error(
            403,
            "host",
            "this server answers only to the address it printed",
        ))
    } else if request.method() == Method::POST && !same_origin(host, headers) {
        json(Answer::error(
            403,
            "origin",
            "requests from other sites are refused",
        ))
    } else {
        next.run(request).await
    };
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
             img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A `POST` with an `Origin` (browsers always send one) must come from the page at the very
/// address it is sent to; two `Origin`s are refused.
fn same_origin(host: Option<&str>, headers: &HeaderMap) -> bool {
    let mut origins = headers.get_all(header::ORIGIN).iter();
    match (origins.next(), origins.next()) {
        (None, _) => true,
        (Some(origin), None) => origin
            .to_str()
            .ok()
            .and_then(|o| o.strip_prefix("http://"))
            .is_some_and(|o| host.is_some_and(|h| o.eq_ignore_ascii_case(h))),
        (Some(_), Some(_)) => false,
    }
}

async fn preview(state: State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    work(state, headers, body, Endpoint::Preview).await
}

async fn render(state: State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    work(state, headers, body, Endpoint::Render).await
}

async fn audit(state: State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    work(state, headers, body, Endpoint::Audit).await
}

async fn request(state: State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    work(state, headers, body, Endpoint::Request).await
}

async fn switch(state: State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    work(state, headers, body, Endpoint::Switch).await
}

async fn save(state: State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    let Some(store) = state.store.clone() else {
        return json(Answer::error(
            404,
            "not_found",
            "this page previews a file: start `stpreset serve --db … --server …` to save to a store",
        ));
    };
    admit(state, headers, body, move |bytes| store.save(bytes)).await
}

async fn work(
    state: State<Arc<Shared>>,
    headers: HeaderMap,
    body: Body,
    endpoint: Endpoint,
) -> Response {
    admit(state, headers, body, move |bytes| {
        api::answer(endpoint, bytes)
    })
    .await
}

/// Admits the request, reads its body within the cap and [`PATIENCE`], waits for a worker,
/// and answers with `answer` on a blocking thread (a render is CPU work).
async fn admit(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Body,
    answer: impl FnOnce(&[u8]) -> Answer + Send + 'static,
) -> Response {
    // One `Content-Type`, JSON; no `Content-Encoding` but `identity`, and at most one.
    let is_json = one(&headers, header::CONTENT_TYPE)
        .flatten()
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    let plain = one(&headers, header::CONTENT_ENCODING)
        .is_some_and(|e| e.is_none_or(|e| e.as_bytes().eq_ignore_ascii_case(b"identity")));
    if !is_json || !plain {
        return json(Answer::error(
            415,
            "media_type",
            "send the body as `Content-Type: application/json`, not compressed",
        ));
    }
    // A body announced over the cap is refused before it is waited for.
    let announced = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|n| n > api::MAX_BODY as u64) {
        return json(body_too_large());
    }
    let Ok(admitted) = shared.admitted.clone().try_acquire_owned() else {
        return busy();
    };
    let read = tokio::time::timeout(BODY_PATIENCE, axum::body::to_bytes(body, api::MAX_BODY)).await;
    let bytes = match read {
        Err(_) => return json(Answer::error(408, "timeout", "the body came too slowly")),
        Ok(Err(_)) => return json(body_too_large()),
        Ok(Ok(bytes)) => bytes,
    };
    let waited = tokio::time::timeout(PATIENCE, shared.workers.clone().acquire_owned()).await;
    let Ok(Ok(worker)) = waited else {
        return busy();
    };
    // The permits go with the work: a client that hangs up does not free its worker while its
    // render still runs. The worker is free once the answer is made; the admission stays with
    // the answer until it is sent.
    let task = tokio::task::spawn_blocking(move || {
        let answer = answer(&bytes);
        drop(worker);
        (answer, vec![admitted])
    });
    match task.await {
        Ok((answer, permits)) => held(answer, permits),
        Err(_) => json(Answer::error(
            500,
            "internal",
            "internal error (please report it with the input that caused it)",
        )),
    }
}

/// The header `name` when it appears at most once (`Some(None)`: absent); `None` when twice.
fn one(headers: &HeaderMap, name: header::HeaderName) -> Option<Option<&HeaderValue>> {
    let mut all = headers.get_all(name).iter();
    match (all.next(), all.next()) {
        (first, None) => Some(first),
        _ => None,
    }
}

fn body_too_large() -> Answer {
    Answer::error(
        413,
        "too_large",
        &format!(
            "request body: over the limit of {} bytes (or cut off)",
            api::MAX_BODY
        ),
    )
}

fn busy() -> Response {
    let mut r = json(Answer::error(
        503,
        "busy",
        "the server is busy with other previews; try again",
    ));
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

/// `GET /api/start`: what the page shows first. `{"context": {"name", "text"}, "preset":
/// {"name", "text"} | null, "errors": [...]}`; files are read now, within the CLI's limit.
async fn start(State(shared): State<Arc<Shared>>) -> Response {
    // Its answer may be several times a 2 MiB file (escaped): it holds a slot until sent.
    let Ok(admitted) = shared.starts.clone().try_acquire_owned() else {
        return busy();
    };
    let shared = shared.clone();
    let read = tokio::task::spawn_blocking(move || {
        start_doc(
            shared.preset.as_deref(),
            shared.store.as_deref(),
            shared.context.as_deref(),
            shared.card.as_deref(),
            &shared.books,
        )
    })
    .await;
    match read {
        Ok(body) => held(Answer { status: 200, body }, vec![admitted]),
        Err(_) => json(Answer::error(500, "internal", "internal error")),
    }
}

fn start_doc(
    preset: Option<&Path>,
    store: Option<&stored::Stored>,
    context: Option<&Path>,
    card: Option<&Path>,
    books: &[String],
) -> String {
    let mut errors = Vec::new();
    let mut file = |path: &Path, what: &str| -> Option<serde_json::Value> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = super::read(path, what)
            .map_err(|Failure(e)| e)
            .and_then(|mut bytes| {
                // The library drops a byte order mark; the page sends the text inside a JSON
                // body, where one would be an error.
                if bytes.starts_with(b"\xEF\xBB\xBF") {
                    bytes.drain(..3);
                }
                String::from_utf8(bytes).map_err(|e| {
                    format!(
                        "{}: not valid UTF-8 (byte {})",
                        path.display(),
                        e.utf8_error().valid_up_to()
                    )
                })
            });
        match text {
            Ok(text) => Some(serde_json::json!({"name": name, "text": text})),
            Err(e) => {
                errors.push(e);
                None
            }
        }
    };
    let mut preset = preset.and_then(|p| file(p, "preset"));
    let mut context = context
        .and_then(|p| file(p, "context"))
        .unwrap_or_else(|| serde_json::json!({"name": "", "text": SAMPLE_CONTEXT}));
    let mut stored = serde_json::Value::Null;
    if let Some(store) = store {
        match store.start() {
            Ok((file, info)) => {
                preset = Some(file);
                stored = info;
            }
            Err(e) => errors.push(e),
        }
    }
    if card.is_some() || !books.is_empty() {
        let text = context["text"].as_str().unwrap_or_default();
        match with_card_and_books(text, card, books) {
            Ok(text) => context["text"] = text.into(),
            Err(e) => errors.push(e),
        }
    }
    serde_json::json!({"context": context, "errors": errors, "preset": preset, "store": stored})
        .to_string()
}

/// The page's context text with `--card` and `--book` merged in (issue 39), as a host merges
/// them into a context file: the card's fields where the context leaves them unset, its book
/// and each `--book` appended to `lorebooks`. The page then shows and edits them like any
/// context field; the API's body limit applies to what it sends back.
fn with_card_and_books(
    text: &str,
    card: Option<&Path>,
    books: &[String],
) -> Result<String, String> {
    let mut ctx: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text)
        .map_err(|e| format!("--card/--book: the context is not a JSON object ({e})"))?;
    let mut lorebooks = match ctx.remove("lorebooks") {
        Some(serde_json::Value::Array(list)) => list,
        _ => Vec::new(),
    };
    if let Some(path) = card {
        let card = super::lore::card(path).map_err(|Failure(e)| e)?;
        if let serde_json::Value::Object(values) = card.context_values() {
            for (key, value) in values {
                match (key.as_str(), value) {
                    ("lorebooks", serde_json::Value::Array(mut list)) => {
                        lorebooks.append(&mut list)
                    }
                    (_, serde_json::Value::Null) => {}
                    (_, value) => {
                        ctx.entry(key).or_insert(value);
                    }
                }
            }
        }
    }
    for spec in books {
        let (name, path) = super::lore::book_spec(spec);
        let bytes = super::lore::book_bytes(path).map_err(|Failure(e)| e)?;
        let mut book: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(&bytes)
                .map_err(|e| format!("{}: not a JSON object ({e})", super::input_name(path)))?;
        book.insert("name".into(), name.into());
        book.insert("source".into(), "global".into());
        lorebooks.push(book.into());
    }
    if !lorebooks.is_empty() {
        ctx.insert("lorebooks".into(), lorebooks.into());
    }
    serde_json::to_string_pretty(&ctx).map_err(|e| e.to_string())
}
