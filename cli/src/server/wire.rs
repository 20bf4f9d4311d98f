//! Statuses for requests tonic refuses before a handler runs.
//!
//! The generated services decode request bodies with tonic's prost codec,
//! which answers a body that is not the request message (bad protobuf,
//! invalid UTF-8 in a `string` field) with `INTERNAL`, and a message over
//! the size limit with `OUT_OF_RANGE`. Neither is right for a client's
//! mistake: [`TransportErrors`] rewrites those trailers-only responses to
//! `INVALID_ARGUMENT` and `RESOURCE_EXHAUSTED` (see
//! [`super::status::classify_transport`]). Errors that surface later, while
//! a handler reads a request stream, are classified by the handler with
//! [`super::status::inbound`].

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tonic::Status;
use tonic::codegen::{Service, http};

use super::status;

/// Largest request message the server decodes (4 MiB): far above a
/// statement (payloads are limited to 256 KiB) and an upload chunk (1 MiB).
pub const MAX_MESSAGE_BYTES: usize = 4 << 20;

/// The layer that installs [`TransportErrors`].
#[derive(Debug, Clone, Copy, Default)]
pub struct TransportErrorsLayer;

impl<S> tower_layer::Layer<S> for TransportErrorsLayer {
    type Service = TransportErrors<S>;

    fn layer(&self, inner: S) -> Self::Service {
        TransportErrors { inner }
    }
}

/// Rewrites tonic's decode-error statuses (see the module docs).
#[derive(Debug, Clone)]
pub struct TransportErrors<S> {
    inner: S,
}

type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S, ReqBody, ResBody> Service<http::Request<ReqBody>> for TransportErrors<S>
where
    S: Service<http::Request<ReqBody>, Response = http::Response<ResBody>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ResBody: Send + 'static,
{
    type Response = http::Response<ResBody>;
    type Error = S::Error;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<ReqBody>) -> Self::Future {
        let fut = self.inner.call(req);
        Box::pin(async move {
            let mut res = fut.await?;
            rewrite(res.headers_mut());
            Ok(res)
        })
    }
}

/// Rewrites a trailers-only error response in place when tonic refused the
/// request body.
fn rewrite(headers: &mut http::HeaderMap) {
    // Successful responses carry grpc-status in the trailers: nothing here.
    if !headers.contains_key("grpc-status") {
        return;
    }
    let Some(original) = Status::from_header_map(headers) else {
        return;
    };
    if let Some(s) = status::classify_transport(&original)
        && let Err(e) = s.add_header(headers)
    {
        tracing::warn!("cannot rewrite a decode-error status: {e}");
    }
}
