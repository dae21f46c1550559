//! The server's connections: an accept loop on hyper's HTTP/1 server with the bounds axum's
//! own `serve` leaves out, and answer bodies that hold a permit until they are sent.
//!
//! Hand-written (a screen of code) because those bounds are the point: a client that opens
//! connections and sends nothing, or asks for a large answer and never reads it, must not
//! hold memory or a slot for longer than a fixed time.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::Request;
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower_service::Service;

/// Connections open at once; more wait in the listen queue.
const MAX_CONNECTIONS: usize = 128;
/// Longest wait for a request's head, on a new connection or a kept-alive one.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest life of a connection, whatever it does: a client that never reads its answer
/// frees the answer's memory (and the permit it holds) after this.
const CONNECTION_LIFETIME: Duration = Duration::from_secs(120);

/// Serves `app` on `listener` until the process ends.
pub(crate) async fn serve(listener: tokio::net::TcpListener, app: Router) {
    let open = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(slot) = open.clone().acquire_owned().await else {
            return; // never closed
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of file descriptors, say: wait a little rather than spin.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let app = app.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let mut app = app.clone();
                // A `Router` is always ready: calling it without `poll_ready` is allowed.
                async move { app.call(request.map(Body::new)).await }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            let _ = tokio::time::timeout(CONNECTION_LIFETIME, connection).await;
        });
    }
}

/// An answer's body that keeps `permits` until it has been sent (or its connection dropped):
/// a request stops counting against the server's bounds only when its answer is gone.
pub(crate) struct Held {
    body: Body,
    _permits: Vec<OwnedSemaphorePermit>,
}

impl Held {
    pub(crate) fn body(body: impl Into<Body>, permits: Vec<OwnedSemaphorePermit>) -> Body {
        Body::new(Held {
            body: body.into(),
            _permits: permits,
        })
    }
}

impl http_body::Body for Held {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
