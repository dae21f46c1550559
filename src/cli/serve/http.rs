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

/// How much of an answer hyper takes at a time: it asks for more only once the socket has
/// taken what it has, so a client that does not read stops the answer within a chunk or two.
const CHUNK: usize = 64 * 1024;

/// An answer's body that keeps `permits` until its last chunk has been taken (or its
/// connection dropped): a request stops counting against the server's bounds only when its
/// answer is all but sent, not when it was handed to hyper in one piece.
pub(crate) struct Held {
    data: Bytes,
    permits: Vec<OwnedSemaphorePermit>,
}

impl Held {
    pub(crate) fn body(text: String, permits: Vec<OwnedSemaphorePermit>) -> Body {
        Body::new(Held {
            data: Bytes::from(text),
            permits,
        })
    }
}

impl http_body::Body for Held {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if this.data.is_empty() {
            this.permits.clear();
            return Poll::Ready(None);
        }
        let chunk = this.data.split_to(this.data.len().min(CHUNK));
        if this.data.is_empty() {
            this.permits.clear();
        }
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.data.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body::Body as _;

    #[test]
    fn the_permits_go_with_the_last_chunk() {
        let semaphore = Arc::new(Semaphore::new(1));
        let permit = semaphore.clone().try_acquire_owned().unwrap();
        let mut held = Held {
            data: Bytes::from("x".repeat(CHUNK + 1)),
            permits: vec![permit],
        };
        assert_eq!(held.size_hint().exact(), Some(CHUNK as u64 + 1));
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut next = || match Pin::new(&mut held).poll_frame(&mut cx) {
            Poll::Ready(Some(Ok(frame))) => frame.into_data().map(|d| d.len()).ok(),
            _ => None,
        };
        assert_eq!(next(), Some(CHUNK));
        assert_eq!(
            semaphore.available_permits(),
            0,
            "held while a chunk is left"
        );
        assert_eq!(next(), Some(1));
        assert_eq!(
            semaphore.available_permits(),
            1,
            "freed with the last chunk"
        );
        assert_eq!(next(), None);
    }
}
