//! The tokens the transport sends: the App JWT for the token exchange, and installation
//! tokens, minted once per installation and reused from the cache until they near expiry;
//! and the App's own identity (`GET /app`), read once, by which its comments are told apart.

use std::time::SystemTime;

use reqwest::Method;
use serde::Deserialize;

use super::transport::{Auth, Call, JSON_ACCEPT, Repeat, decode};
use super::{AppIdentity, ClientError, GitHubClient};
use crate::github::SecretString;
use crate::github::app::{InstallationToken, parse_github_time};

impl GitHubClient {
    pub(super) async fn token(&self, auth: Auth) -> Result<SecretString, ClientError> {
        if let Some(token) = &self.inner.token {
            return match auth {
                Auth::Installation(_) => Ok(token.clone()),
                Auth::App | Auth::Anonymous => Err(ClientError::Auth(
                    "a workflow token cannot act as the GitHub App".to_string(),
                )),
            };
        }
        let creds = self.inner.credentials.as_ref().ok_or_else(|| {
            ClientError::Auth("no GitHub App credentials are configured".to_string())
        })?;
        match auth {
            Auth::App => creds
                .jwt(SystemTime::now())
                .map_err(|e| ClientError::Auth(e.to_string())),
            Auth::Installation(id) => self.installation_token(id).await,
            Auth::Anonymous => Err(ClientError::Auth("an anonymous call has no token".into())),
        }
    }

    async fn installation_token(&self, id: u64) -> Result<SecretString, ClientError> {
        if let Some(t) = self.inner.tokens.get(id, SystemTime::now()) {
            return Ok(t.token);
        }
        let _guard = self.inner.refresh.lock().await;
        // Another job may have minted it while this one waited for the lock.
        if let Some(t) = self.inner.tokens.get(id, SystemTime::now()) {
            return Ok(t.token);
        }
        // Boxed: minting goes through `send`, which calls back here (with App auth).
        let token = Box::pin(self.mint_installation_token(id)).await?;
        let secret = token.token.clone();
        self.inner.tokens.put(id, token);
        Ok(secret)
    }

    /// Forgets an installation token GitHub refused (revoked, or expired early). True when
    /// there was one to forget, so the call is worth one more try with a fresh token.
    pub(super) fn drop_refused_token(&self, auth: Auth) -> bool {
        if self.inner.token.is_some() {
            // A given token cannot be minted again: a refusal is final.
            return false;
        }
        match auth {
            Auth::Installation(id) => {
                self.inner.tokens.invalidate(id);
                true
            }
            Auth::App | Auth::Anonymous => false,
        }
    }

    /// `POST /app/installations/{id}/access_tokens` with the App JWT.
    async fn mint_installation_token(
        &self,
        installation_id: u64,
    ) -> Result<InstallationToken, ClientError> {
        #[derive(Deserialize)]
        struct TokenAnswer {
            token: String,
            expires_at: String,
        }
        let op = "apps/create-installation-access-token";
        let answer = self
            .send(Call {
                op,
                method: Method::POST,
                url: self.url(&format!(
                    "/app/installations/{installation_id}/access_tokens"
                )),
                query: vec![],
                body: None,
                accept: JSON_ACCEPT,
                auth: Auth::App,
                // Minting a token creates nothing visible; a second token is harmless.
                repeat: Repeat::Safe,
            })
            .await?;
        let t: TokenAnswer = decode(op, &answer.body)?;
        let expires_at = parse_github_time(&t.expires_at).ok_or_else(|| ClientError::Decode {
            op,
            message: "expires_at is not an ISO 8601 UTC time".into(),
        })?;
        Ok(InstallationToken {
            token: SecretString::new(t.token),
            expires_at,
        })
    }

    /// The App's ID and slug (`GET /app` with the App JWT), read once per process: the App
    /// cannot change its slug under a running server without its comments changing author.
    pub async fn app_identity(&self) -> Result<AppIdentity, ClientError> {
        #[derive(Deserialize)]
        struct AppAnswer {
            id: u64,
            slug: String,
        }
        let op = "apps/get-authenticated";
        self.inner
            .identity
            .get_or_try_init(|| async {
                let answer = self
                    .send(Call {
                        op,
                        method: Method::GET,
                        url: self.url("/app"),
                        query: vec![],
                        body: None,
                        accept: JSON_ACCEPT,
                        auth: Auth::App,
                        repeat: Repeat::Safe,
                    })
                    .await?;
                let a: AppAnswer = decode(op, &answer.body)?;
                if a.slug.is_empty() {
                    return Err(ClientError::Decode {
                        op,
                        message: "the App has an empty slug".into(),
                    });
                }
                Ok(AppIdentity {
                    id: a.id,
                    slug: a.slug,
                })
            })
            .await
            .cloned()
    }
}
