//! The simulator's token exchange: service-account JWTs (RS256) verified against the public
//! keys registered in the world, traded for short-lived bearer tokens.

use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde::Deserialize;
use tonic::{Request, Response, Status};

use super::core::now_ms;
use super::services::SimService;
use crate::cloud::nid;
use crate::cloud::proto::nebius::iam::v1 as iam;

pub const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
pub const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
pub const JWT_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:jwt";

/// The IDs a world's service account gets: the account and its public key.
pub fn service_account_ids(world_name: &str, account: &str) -> (String, String) {
    let seed = format!("{world_name}/sa/{account}");
    (
        nid::make("serviceaccount", "eu-north1", &seed),
        nid::make("publickey", "eu-north1", &seed),
    )
}

#[derive(Debug, Deserialize)]
struct Claims {
    iss: String,
    sub: String,
}

#[tonic::async_trait]
impl iam::token_exchange_service_server::TokenExchangeService for SimService {
    async fn exchange(
        &self,
        request: Request<iam::ExchangeTokenRequest>,
    ) -> Result<Response<iam::CreateTokenResponse>, Status> {
        // No bearer token here: this is how a caller gets one.
        self.inject_fault_public("/nebius.iam.v1.TokenExchangeService/Exchange")
            .await?;
        let r = request.get_ref();
        if r.grant_type != GRANT_TYPE {
            return Err(Status::invalid_argument("unsupported grant_type"));
        }
        if !r.requested_token_type.is_empty() && r.requested_token_type != ACCESS_TOKEN_TYPE {
            return Err(Status::invalid_argument("unsupported requested_token_type"));
        }
        if r.subject_token_type != JWT_TOKEN_TYPE {
            return Err(Status::invalid_argument("subject_token_type must be a JWT"));
        }
        let header = decode_header(&r.subject_token)
            .map_err(|_| Status::unauthenticated("subject token is not a JWT"))?;
        if header.alg != Algorithm::RS256 {
            return Err(Status::unauthenticated(
                "subject token must be signed with RS256",
            ));
        }
        let kid = header
            .kid
            .ok_or_else(|| Status::unauthenticated("subject token has no key id"))?;
        let (world_name, accounts, ttl) = self.read_core(|core| {
            (
                core.world.name.clone(),
                core.world.service_accounts.clone(),
                core.world.token_ttl_seconds,
            )
        });
        let Some((account_id, pem)) = accounts.iter().find_map(|sa| {
            let (id, key_id) = service_account_ids(&world_name, &sa.name);
            (key_id == kid).then(|| (id, sa.public_key_pem.clone()))
        }) else {
            return Err(Status::unauthenticated("unknown public key"));
        };
        let key = DecodingKey::from_rsa_pem(pem.as_bytes())
            .map_err(|_| Status::internal("the registered public key is not a PEM RSA key"))?;
        let mut validation = Validation::new(Algorithm::RS256);
        validation.validate_aud = false;
        validation.set_required_spec_claims(&["exp", "iss", "sub"]);
        let claims = decode::<Claims>(&r.subject_token, &key, &validation)
            .map_err(|_| Status::unauthenticated("subject token signature or claims are invalid"))?
            .claims;
        if claims.iss != account_id || claims.sub != account_id {
            return Err(Status::unauthenticated(
                "subject token must name the key's service account as iss and sub",
            ));
        }
        let token = format!("sim1.{}", uuid::Uuid::new_v4().simple());
        self.accept_token(&token, now_ms() + ttl * 1000);
        Ok(Response::new(iam::CreateTokenResponse {
            access_token: token,
            issued_token_type: ACCESS_TOKEN_TYPE.into(),
            token_type: "Bearer".into(),
            expires_in: ttl,
            scopes: Vec::new(),
        }))
    }
}
