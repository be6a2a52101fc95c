//! Kubernetes connections shared across the clusters one operation reaches.
//!
//! kube-rs gives every client its own connection pool, so reaching 500 clusters meant 500 TLS
//! handshakes even where they sit behind one API server address (the simulator's do; a
//! proxy's would). [`Connections`] keeps one HTTPS client per server address and CA, and
//! builds each cluster's kube client over it with that cluster's base path and bearer token:
//! requests to clusters behind one server reuse its open connections, and clusters behind
//! their own servers cost what they did. It lives as long as the operation that holds it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::Config;
use kube::client::{Body, ConfigExt};
use tower::ServiceBuilder;

use super::bearer::BearerLayer;
use super::{AccessError, ClusterClient, ClusterEndpoint, TokenSource, ca_der};

type Https =
    HttpClient<hyper_timeout::TimeoutConnector<hyper_rustls::HttpsConnector<HttpConnector>>, Body>;

/// Open HTTPS clients by API server address and CA; cloning shares them.
#[derive(Clone, Default)]
pub struct Connections {
    clients: Arc<Mutex<HashMap<(String, String), Https>>>,
}

impl Connections {
    /// A kube client for one cluster reached through the cloud, over the shared connections to
    /// its API server.
    pub fn cluster(
        &self,
        endpoint: &ClusterEndpoint,
        tokens: &TokenSource,
    ) -> Result<ClusterClient, AccessError> {
        let uri: http::Uri = endpoint.server.parse().map_err(|e| {
            AccessError::Endpoint(format!("the cluster endpoint is not a URL: {e}"))
        })?;
        let server = format!(
            "{}://{}",
            uri.scheme_str().unwrap_or("https"),
            uri.authority().map(|a| a.as_str()).unwrap_or("")
        );
        let mut config = Config::new(uri);
        config.root_cert = Some(ca_der(&endpoint.ca_pem)?);
        let http = {
            let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
            match clients.get(&(server.clone(), endpoint.ca_pem.clone())) {
                Some(http) => http.clone(),
                None => {
                    let http = https_client(&config)?;
                    clients.insert((server, endpoint.ca_pem.clone()), http.clone());
                    http
                }
            }
        };
        let service = ServiceBuilder::new()
            .layer(config.base_uri_layer())
            .layer(BearerLayer(tokens.clone()))
            .service(http);
        Ok(ClusterClient {
            client: kube::client::ClientBuilder::new(service, "default").build(),
        })
    }
}

/// An HTTPS client trusting only the cluster's CA, with kube-rs's own default timeouts.
fn https_client(config: &Config) -> Result<Https, AccessError> {
    let mut plain = HttpConnector::new();
    plain.enforce_http(false);
    let tls = config.rustls_https_connector_with_connector(plain)?;
    let mut connector = hyper_timeout::TimeoutConnector::new(tls);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout.or(Some(Duration::from_secs(295))));
    connector.set_write_timeout(config.write_timeout.or(Some(Duration::from_secs(295))));
    Ok(HttpClient::builder(TokioExecutor::new()).build(connector))
}
