//! Reads `~/.nebius/config.yaml` profiles to resolve the tenant, without ever echoing the file.
//!
//! The file may hold credentials, so a parse error is reported by kind only: a YAML error's
//! snippet could quote a token from a malformed profile.

use std::path::{Path, PathBuf};

/// The default location, `~/.nebius/config.yaml`.
pub fn default_config_path() -> Option<PathBuf> {
    dirs::home_dir().map(|home| home.join(".nebius").join("config.yaml"))
}

/// The parts of the Nebius CLI configuration fleetbot reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NebiusConfig {
    /// The active profile (`default:`).
    pub default_profile: String,
    /// `(profile name, tenant-id)` for each profile that records a tenant.
    pub tenants: Vec<(String, String)>,
    /// Profile names present in the file.
    pub profiles: Vec<String>,
}

/// Why the configuration could not be used. Never carries file content.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("could not read Nebius config at {path} ({kind})")]
    Unreadable { path: String, kind: String },
    #[error("could not parse Nebius config at {path} (invalid YAML)")]
    Unparsable { path: String },
    #[error("ignoring Nebius config at {path} because it is not a mapping")]
    NotAMapping { path: String },
}

impl NebiusConfig {
    /// Loads the file; a missing file is an empty configuration.
    pub fn load(path: &Path) -> Result<NebiusConfig, ConfigError> {
        let shown = path.display().to_string();
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(NebiusConfig::default());
            }
            Err(e) => {
                return Err(ConfigError::Unreadable {
                    path: shown,
                    kind: format!("{:?}", e.kind()),
                });
            }
        };
        Self::parse(&text, &shown)
    }

    /// Parses configuration text; `shown` names the file in errors.
    pub fn parse(text: &str, shown: &str) -> Result<NebiusConfig, ConfigError> {
        let value: serde_yaml::Value = match serde_yaml::from_str(text) {
            Ok(v) => v,
            Err(_) => {
                return Err(ConfigError::Unparsable {
                    path: shown.to_string(),
                });
            }
        };
        let map = match value {
            serde_yaml::Value::Null => return Ok(NebiusConfig::default()),
            serde_yaml::Value::Mapping(m) => m,
            _ => {
                return Err(ConfigError::NotAMapping {
                    path: shown.to_string(),
                });
            }
        };
        let text_of = |v: Option<&serde_yaml::Value>| match v {
            Some(serde_yaml::Value::String(s)) => s.clone(),
            Some(serde_yaml::Value::Number(n)) => n.to_string(),
            _ => String::new(),
        };
        let mut config = NebiusConfig {
            default_profile: text_of(map.get("default")),
            ..NebiusConfig::default()
        };
        if let Some(serde_yaml::Value::Mapping(profiles)) = map.get("profiles") {
            for (name, body) in profiles {
                let name = text_of(Some(name));
                config.profiles.push(name.clone());
                if let serde_yaml::Value::Mapping(body) = body {
                    let tenant = text_of(body.get("tenant-id"));
                    if !tenant.is_empty() {
                        config.tenants.push((name, tenant));
                    }
                }
            }
        }
        Ok(config)
    }

    /// The tenant recorded for `profile`, or for the active profile when `profile` is empty.
    pub fn tenant_for(&self, profile: &str) -> Option<&str> {
        let selected = if profile.is_empty() {
            &self.default_profile
        } else {
            profile
        };
        self.tenants
            .iter()
            .find(|(name, _)| name == selected)
            .map(|(_, tenant)| tenant.as_str())
    }

    /// Deploy-time tenant resolution (fleet-engine §6.10.1): the spec's tenant, else the named
    /// (or active) profile's; a named profile without a tenant is a hard error.
    pub fn resolve_tenant(&self, spec_tenant: &str, profile: &str) -> Result<String, TenantError> {
        if !spec_tenant.is_empty() {
            return Ok(spec_tenant.to_string());
        }
        if let Some(tenant) = self.tenant_for(profile) {
            return Ok(tenant.to_string());
        }
        if !profile.is_empty() {
            return Err(TenantError::ProfileWithoutTenant(
                crate::spec::names::py_repr(profile),
            ));
        }
        Err(TenantError::Unresolved)
    }
}

/// Why no tenant could be resolved (fleet-engine §6.10.1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TenantError {
    /// The named profile has no tenant (the profile, as the reference quotes it).
    #[error(
        "tenant_id could not be resolved: profile {0} has no 'tenant-id' in ~/.nebius/config.yaml; set 'tenant_id' in the fleet spec"
    )]
    ProfileWithoutTenant(String),
    /// Neither the spec, the credentials nor the active profile name one.
    #[error(
        "tenant_id could not be resolved from the spec, the credentials, or ~/.nebius/config.yaml"
    )]
    Unresolved,
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = "default: other\nprofiles:\n  other:\n    tenant-id: tenant-other\n  sd:\n    tenant-id: tenant-sd\n  empty: {}\n";

    #[test]
    fn resolve_tenant_uses_named_profile() {
        let c = NebiusConfig::parse(CONFIG, "config.yaml").unwrap();
        assert_eq!(c.resolve_tenant("", "sd").unwrap(), "tenant-sd");
        assert_eq!(c.resolve_tenant("", "").unwrap(), "tenant-other");
        assert_eq!(
            c.resolve_tenant("tenant-pinned", "sd").unwrap(),
            "tenant-pinned"
        );
    }

    #[test]
    fn resolve_tenant_rejects_profile_without_tenant() {
        let c = NebiusConfig::parse(CONFIG, "config.yaml").unwrap();
        let e = c.resolve_tenant("", "empty").unwrap_err();
        assert_eq!(e, TenantError::ProfileWithoutTenant("'empty'".into()));
        assert!(e.to_string().contains("has no 'tenant-id'"), "{e}");
    }

    #[test]
    fn parse_failure_never_echoes_content() {
        let e = NebiusConfig::parse("profiles: [secret-token\n", "config.yaml").unwrap_err();
        let text = e.to_string();
        assert!(text.contains("could not parse Nebius config"), "{text}");
        assert!(!text.contains("secret-token"), "{text}");
    }

    #[test]
    fn missing_file_is_empty() {
        let c = NebiusConfig::load(Path::new("/nonexistent/fleetbot/config.yaml")).unwrap();
        assert_eq!(c, NebiusConfig::default());
    }
}
