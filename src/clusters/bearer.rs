//! A tower layer that puts a fresh Nebius IAM token on every request to a cluster, so a
//! long verification outlives the token it started with.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{HeaderValue, Request, header};
use tower::{BoxError, Layer, Service};

/// Where tokens come from: the cloud client's credentials (cached, renewed before expiry).
pub type TokenSource =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<String, String>> + Send>> + Send + Sync>;

#[derive(Clone)]
pub struct BearerLayer(pub TokenSource);

impl<S> Layer<S> for BearerLayer {
    type Service = Bearer<S>;

    fn layer(&self, inner: S) -> Bearer<S> {
        Bearer {
            inner: Arc::new(tokio::sync::Mutex::new(inner)),
            tokens: self.0.clone(),
        }
    }
}

/// The service behind a mutex: kube's stack is not `Clone`, and the token must be fetched
/// before the inner service is called; the lock is held only to dispatch, not for the reply.
pub struct Bearer<S> {
    inner: Arc<tokio::sync::Mutex<S>>,
    tokens: TokenSource,
}

impl<S, B> Service<Request<B>> for Bearer<S>
where
    S: Service<Request<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        let inner = self.inner.clone();
        let tokens = self.tokens.clone();
        Box::pin(async move {
            let token = tokens().await.map_err(BoxError::from)?;
            let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
                .map_err(|_| BoxError::from("the IAM token is not a valid header value"))?;
            value.set_sensitive(true);
            request.headers_mut().insert(header::AUTHORIZATION, value);
            let response = {
                let mut service = inner.lock().await;
                std::future::poll_fn(|cx| service.poll_ready(cx))
                    .await
                    .map_err(Into::into)?;
                service.call(request)
            };
            response.await.map_err(Into::into)
        })
    }
}
