//! `GET /meta`: the address ranges GitHub delivers webhooks from (its `hooks` list), for the
//! optional source allowlist of `fleetbot serve` (`FLEETBOT_WEBHOOK_SOURCE_RANGES=github`).

use reqwest::Method;
use serde::Deserialize;

use super::transport::{Auth, Call, JSON_ACCEPT, Repeat, decode};
use super::{ClientError, GitHubClient};

impl GitHubClient {
    /// The `hooks` entries of `GET /meta`, as GitHub writes them (CIDR ranges). Anonymous:
    /// the endpoint needs no credentials, and an App token would only spend its rate limit.
    pub async fn hook_ranges(&self) -> Result<Vec<String>, ClientError> {
        #[derive(Deserialize)]
        struct Meta {
            #[serde(default)]
            hooks: Vec<String>,
        }
        let op = "meta/get";
        let answer = self
            .send(Call {
                op,
                method: Method::GET,
                url: self.url("/meta"),
                query: vec![],
                body: None,
                accept: JSON_ACCEPT,
                auth: Auth::Anonymous,
                repeat: Repeat::Safe,
            })
            .await?;
        let meta: Meta = decode(op, &answer.body)?;
        Ok(meta.hooks)
    }
}
