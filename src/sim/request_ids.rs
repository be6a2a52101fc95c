//! Every reply of the simulated API carries `x-request-id` and `x-trace-id` in its response
//! headers, success or error, as Nebius's replies do (the SDKs read them from the initial
//! metadata and print them with every error, for support tickets). An error tonic would send
//! as a trailers-only reply is sent as headers, then the status in trailers, so a client that
//! reads IDs from the initial metadata (grpcio, which hands a trailers-only reply's headers
//! over as trailing metadata) sees them too.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue};
use http_body::Frame;
use tonic::body::Body;

/// The layer the simulator's gRPC server is built with.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestIdLayer;

impl<S> tower::Layer<S> for RequestIdLayer {
    type Service = RequestIds<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestIds { inner }
    }
}

#[derive(Debug, Clone)]
pub struct RequestIds<S> {
    inner: S,
}

/// Status headers that belong in trailers once the reply has headers of its own.
const STATUS_HEADERS: [&str; 3] = ["grpc-status", "grpc-message", "grpc-status-details-bin"];

impl<S, B> tower::Service<http::Request<B>> for RequestIds<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<Body>>,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let reply = self.inner.call(request);
        Box::pin(async move {
            let reply = reply.await?;
            Ok(with_ids(reply))
        })
    }
}

fn with_ids(reply: http::Response<Body>) -> http::Response<Body> {
    let (mut parts, body) = reply.into_parts();
    let request_id = uuid::Uuid::new_v4().to_string();
    let trace_id = uuid::Uuid::new_v4().simple().to_string();
    for (name, value) in [("x-request-id", request_id), ("x-trace-id", trace_id)] {
        if let Ok(value) = HeaderValue::from_str(&value) {
            parts.headers.insert(name, value);
        }
    }
    if !parts.headers.contains_key("grpc-status") {
        return http::Response::from_parts(parts, body);
    }
    // A trailers-only error: the status moves to trailers behind the headers.
    let mut trailers = HeaderMap::new();
    for name in STATUS_HEADERS {
        if let Some(value) = parts.headers.remove(name) {
            trailers.insert(name, value);
        }
    }
    let frames = futures_util::stream::iter([Ok::<_, std::convert::Infallible>(
        Frame::<Bytes>::trailers(trailers),
    )]);
    let body = Body::new(http_body_util::StreamBody::new(frames));
    http::Response::from_parts(parts, body)
}
