//! The App manifest flow's one REST call: trading the one-time code GitHub hands back after
//! "Create GitHub App" for the new App's credentials (`fleetbot register`).

use reqwest::Method;
use serde::Deserialize;

use super::paths::seg;
use super::transport::{Auth, Call, JSON_ACCEPT, Repeat, decode};
use super::{ClientError, GitHubClient};
use crate::github::SecretString;

/// What GitHub returns for a new App. The secrets stay wrapped; `Debug` never shows them.
#[derive(Debug, Clone)]
pub struct RegisteredApp {
    pub id: u64,
    pub slug: String,
    /// The App's page (`https://github.com/apps/<slug>`).
    pub html_url: String,
    pub pem: SecretString,
    pub webhook_secret: Option<SecretString>,
}

impl GitHubClient {
    /// `POST /app-manifests/{code}/conversions`, unauthenticated (the code is the credential,
    /// valid once for an hour). Never repeated: a second exchange of the code fails anyway.
    pub async fn create_app_from_manifest(&self, code: &str) -> Result<RegisteredApp, ClientError> {
        #[derive(Deserialize)]
        struct Answer {
            id: u64,
            slug: String,
            #[serde(default)]
            html_url: String,
            pem: String,
            webhook_secret: Option<String>,
        }
        let op = "apps/create-from-manifest";
        let answer = self
            .send(Call {
                op,
                method: Method::POST,
                url: self.url(&format!("/app-manifests/{}/conversions", seg(code))),
                query: vec![],
                body: None,
                accept: JSON_ACCEPT,
                auth: Auth::Anonymous,
                repeat: Repeat::CreatesContent,
            })
            .await?;
        let a: Answer = decode(op, &answer.body)?;
        if a.slug.is_empty() || !a.pem.contains("PRIVATE KEY") {
            return Err(ClientError::Decode {
                op,
                message: "the answer has no slug or no private key".into(),
            });
        }
        Ok(RegisteredApp {
            id: a.id,
            slug: a.slug,
            html_url: a.html_url,
            pem: SecretString::new(a.pem),
            webhook_secret: a
                .webhook_secret
                .filter(|s| !s.is_empty())
                .map(SecretString::new),
        })
    }
}
