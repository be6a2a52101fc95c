//! Nebius credentials where the Nebius CLI configures them: `NEBIUS_IAM_TOKEN`, else a
//! service-account profile in `~/.nebius/config.yaml`.
//!
//! Which cloud to use (Nebius or the simulator) is the caller's choice; this module only says
//! whether Nebius is configured, and how to reach it.

use std::path::{Path, PathBuf};

use super::auth::{Credentials, CredentialsFileError, ServiceAccountKey, parse_credentials_file};
use super::client::{DEFAULT_DOMAIN, EndpointError, Endpoints, NebiusClient};
use super::profile::default_config_path;

/// Where credentials may be configured.
#[derive(Debug, Clone, Copy, Default)]
pub struct CredentialSources<'a> {
    /// `NEBIUS_IAM_TOKEN`.
    pub iam_token: Option<&'a str>,
    /// `NEBIUS_ENDPOINT`; wins over a profile's endpoint.
    pub endpoint: Option<&'a str>,
    /// The profile to read credentials from; empty is the active one.
    pub profile: &'a str,
    /// The Nebius CLI configuration; `None` is `~/.nebius/config.yaml`.
    pub nebius_config: Option<&'a Path>,
    /// The caller insists on Nebius: a profile fleetbot cannot use is then an error, not
    /// "nothing configured".
    pub required: bool,
}

/// Why configured credentials cannot be used. No variant quotes a file: they may hold keys.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// `NEBIUS_ENDPOINT` or a profile's endpoint is refused.
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    /// The profile signs in a way that needs a person (a browser, federation).
    #[error(
        "the Nebius profile uses auth-type {0:?}, which fleetbot cannot use unattended; set NEBIUS_IAM_TOKEN or use a service-account profile"
    )]
    Unattended(String),
    /// The named profile is not in the configuration.
    #[error("profile {profile:?} is not in {}", path.display())]
    NoSuchProfile {
        /// The profile named.
        profile: String,
        /// The configuration read.
        path: PathBuf,
    },
    /// The configuration exists but cannot be read.
    #[error("could not read Nebius config at {} ({kind:?})", path.display())]
    ConfigUnreadable {
        /// The configuration.
        path: PathBuf,
        /// Why, without the file's words.
        kind: std::io::ErrorKind,
    },
    /// The configuration is not YAML.
    #[error("could not parse Nebius config at {} (invalid YAML)", path.display())]
    ConfigInvalid {
        /// The configuration.
        path: PathBuf,
    },
    /// A file the profile names (`credentials file`, `private key file`) cannot be read.
    #[error("profile {profile:?}: cannot read the {what} ({kind:?})")]
    FileUnreadable {
        /// The profile.
        profile: String,
        /// Which of its files.
        what: &'static str,
        /// Why.
        kind: std::io::ErrorKind,
    },
    /// The profile's credentials file is refused.
    #[error("profile {profile:?}: {reason}")]
    CredentialsFile {
        /// The profile.
        profile: String,
        /// Why.
        reason: CredentialsFileError,
    },
}

/// A client for the configured credentials.
pub struct ConfiguredClient {
    pub client: NebiusClient,
    /// The tenant, when the profile names one.
    pub tenant_id: Option<String>,
}

/// The configured client, or `Ok(None)` when nothing usable is configured.
pub fn configured_client(
    sources: &CredentialSources,
) -> Result<Option<ConfiguredClient>, CredentialsError> {
    Ok(configured(sources)?.map(|c| ConfiguredClient {
        client: NebiusClient::new(c.endpoints, c.credentials),
        tenant_id: c.tenant_id,
    }))
}

/// Whether usable credentials are configured ([`configured_client`] would give a client),
/// without making one.
pub fn credentials_configured(sources: &CredentialSources) -> bool {
    matches!(configured(sources), Ok(Some(_)))
}

/// What the configured credentials say: where, as whom, and the tenant.
struct Configured {
    endpoints: Endpoints,
    credentials: Credentials,
    tenant_id: Option<String>,
}

fn configured(sources: &CredentialSources) -> Result<Option<Configured>, CredentialsError> {
    let override_endpoints = sources.endpoint.map(Endpoints::from_override).transpose()?;
    if let Some(token) = sources.iam_token {
        return Ok(Some(Configured {
            endpoints: override_endpoints.unwrap_or_else(public_endpoints),
            credentials: Credentials::Static(token.to_string()),
            tenant_id: None,
        }));
    }
    let config = sources
        .nebius_config
        .map(Path::to_path_buf)
        .or_else(default_config_path);
    let profile = match &config {
        Some(path) => read_profile(path, sources.profile)?,
        None => None,
    };
    let Some(profile) = profile else {
        return Ok(None);
    };
    let Some(key) = profile.key else {
        if sources.required || !sources.profile.is_empty() {
            return Err(CredentialsError::Unattended(
                profile.auth_type.unwrap_or_default(),
            ));
        }
        return Ok(None);
    };
    let endpoints = match (override_endpoints, profile.endpoint) {
        (Some(endpoints), _) => endpoints,
        (None, Some(domain)) => Endpoints::from_override(&domain)?,
        (None, None) => public_endpoints(),
    };
    Ok(Some(Configured {
        endpoints,
        credentials: Credentials::service_account(key),
        tenant_id: profile.tenant_id,
    }))
}

fn public_endpoints() -> Endpoints {
    Endpoints::Public {
        domain: DEFAULT_DOMAIN.into(),
    }
}

/// Service-account fields of a Nebius CLI profile.
#[derive(Debug, Default)]
struct ProfileCredentials {
    endpoint: Option<String>,
    auth_type: Option<String>,
    tenant_id: Option<String>,
    key: Option<ServiceAccountKey>,
}

fn read_profile(
    path: &Path,
    profile: &str,
) -> Result<Option<ProfileCredentials>, CredentialsError> {
    let Some(value) = read_config(path)? else {
        return Ok(None);
    };
    let text_of = |v: Option<&serde_yaml::Value>| v.and_then(|v| v.as_str()).map(str::to_string);
    let selected = if profile.is_empty() {
        match text_of(value.get("default")) {
            Some(p) => p,
            None => return Ok(None),
        }
    } else {
        profile.to_string()
    };
    let Some(body) = value.get("profiles").and_then(|p| p.get(selected.as_str())) else {
        if profile.is_empty() {
            return Ok(None);
        }
        return Err(CredentialsError::NoSuchProfile {
            profile: selected,
            path: path.to_path_buf(),
        });
    };
    let field = |name: &str| text_of(body.get(name)).filter(|v| !v.is_empty());
    Ok(Some(ProfileCredentials {
        endpoint: field("endpoint"),
        auth_type: field("auth-type"),
        tenant_id: field("tenant-id"),
        key: profile_key(&field, &selected)?,
    }))
}

/// The configuration as YAML; `Ok(None)` when there is no file.
fn read_config(path: &Path) -> Result<Option<serde_yaml::Value>, CredentialsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(CredentialsError::ConfigUnreadable {
                path: path.to_path_buf(),
                kind: e.kind(),
            });
        }
    };
    // The file may hold credentials: parse errors are reported without its contents.
    serde_yaml::from_str(&text)
        .map(Some)
        .map_err(|_| CredentialsError::ConfigInvalid {
            path: path.to_path_buf(),
        })
}

/// The profile's service-account key: a credentials file, else the account, key ID and PEM
/// file named separately; `None` for other auth types.
fn profile_key(
    field: &dyn Fn(&str) -> Option<String>,
    selected: &str,
) -> Result<Option<ServiceAccountKey>, CredentialsError> {
    let unreadable = |what: &'static str| {
        move |e: std::io::Error| CredentialsError::FileUnreadable {
            profile: selected.to_string(),
            what,
            kind: e.kind(),
        }
    };
    if let Some(file) = field("service-account-credentials-file-path") {
        let text = std::fs::read_to_string(&file).map_err(unreadable("credentials file"))?;
        return parse_credentials_file(&text).map(Some).map_err(|reason| {
            CredentialsError::CredentialsFile {
                profile: selected.to_string(),
                reason,
            }
        });
    }
    let (Some(account), Some(key_id), Some(key_file)) = (
        field("service-account-id"),
        field("public-key-id"),
        field("private-key-file-path"),
    ) else {
        return Ok(None);
    };
    let pem = std::fs::read_to_string(&key_file).map_err(unreadable("private key file"))?;
    Ok(Some(ServiceAccountKey {
        service_account_id: account,
        public_key_id: key_id,
        private_key_pem: pem,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_reading_never_echoes_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(&path, "profiles: [secret-token\n").unwrap();
        let err = read_profile(&path, "").unwrap_err();
        assert!(
            matches!(err, CredentialsError::ConfigInvalid { .. }),
            "{err}"
        );
        let err = err.to_string();
        assert!(
            err.contains("could not parse") && !err.contains("secret-token"),
            "{err}"
        );
        std::fs::write(
            &path,
            "default: fed\nprofiles:\n  fed: {auth-type: federation, tenant-id: t}\n",
        )
        .unwrap();
        let p = read_profile(&path, "").unwrap().unwrap();
        assert!(p.key.is_none());
        assert_eq!(p.tenant_id.as_deref(), Some("t"));
        assert!(matches!(
            read_profile(&path, "missing"),
            Err(CredentialsError::NoSuchProfile { .. })
        ));
    }
}
