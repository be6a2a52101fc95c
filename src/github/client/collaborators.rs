//! Collaborator permissions: what a commenter may ask the bot to do.

use serde::{Deserialize, Serialize};

use super::paths::seg;
use super::{ClientError, RepoClient};

/// A collaborator's access, as `GET /collaborators/{user}/permission` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Permission {
    None,
    Read,
    Triage,
    Write,
    Maintain,
    Admin,
}

impl Permission {
    /// Parses a role or legacy permission name; custom role names are `None`.
    pub fn from_name(name: &str) -> Option<Permission> {
        Some(match name {
            "none" => Permission::None,
            "read" | "pull" => Permission::Read,
            "triage" => Permission::Triage,
            "write" | "push" => Permission::Write,
            "maintain" => Permission::Maintain,
            "admin" => Permission::Admin,
            _ => return None,
        })
    }

    /// The lower-case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Permission::None => "none",
            Permission::Read => "read",
            Permission::Triage => "triage",
            Permission::Write => "write",
            Permission::Maintain => "maintain",
            Permission::Admin => "admin",
        }
    }
}

impl RepoClient {
    /// `GET /collaborators/{user}/permission`: the role when it is a built-in one, else the
    /// legacy permission (custom roles map to their base). 404 means no access.
    pub async fn collaborator_permission(&self, user: &str) -> Result<Permission, ClientError> {
        #[derive(Deserialize)]
        struct Answer {
            permission: String,
            #[serde(default)]
            role_name: Option<String>,
        }
        let answer: Result<Answer, _> = self
            .client
            .get_json(
                "repos/get-collaborator-permission-level",
                self.installation_id,
                &self.repo_path(&format!("/collaborators/{}/permission", seg(user))),
                vec![],
            )
            .await;
        match answer {
            Ok(a) => Ok(a
                .role_name
                .as_deref()
                .and_then(Permission::from_name)
                .or_else(|| Permission::from_name(&a.permission))
                .unwrap_or(Permission::None)),
            Err(e) if e.status() == Some(404) => Ok(Permission::None),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_order_and_names() {
        assert!(Permission::Admin > Permission::Maintain);
        assert!(Permission::Write > Permission::Triage);
        assert_eq!(Permission::from_name("push"), Some(Permission::Write));
        assert_eq!(Permission::from_name("custom-role"), None);
        assert_eq!(Permission::Maintain.as_str(), "maintain");
    }
}
