//! `FLEETBOT_STORE`: which backend, and where. A PostgreSQL URL may carry a password, so the
//! URL itself is kept out of `Debug` and `Display`; [`redact_url`] is what logs show.

use std::fmt;
use std::path::{Path, PathBuf};

use super::StoreError;

/// A parsed store location.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// `sqlite://PATH`: one file, one replica.
    Sqlite(PathBuf),
    /// `postgres://…` or `postgresql://…`: several replicas.
    Postgres(String),
}

impl StoreUrl {
    /// Parses `url`; `None` (unset) means the SQLite file under `default_dir`.
    pub fn parse(url: Option<&str>, default_dir: &Path) -> Result<StoreUrl, StoreError> {
        let Some(url) = url.map(str::trim).filter(|u| !u.is_empty()) else {
            return Ok(StoreUrl::Sqlite(default_dir.join("fleetbot.sqlite")));
        };
        if let Some(path) = url.strip_prefix("sqlite://") {
            // `sqlite://` is followed by a path, relative or absolute (`sqlite:///var/x.db`);
            // connection options after `?` are not taken: the store sets its own.
            let path = path.split('?').next().unwrap_or_default();
            if path.is_empty() {
                return Err(StoreError::Config(
                    "FLEETBOT_STORE=sqlite://PATH needs a path".into(),
                ));
            }
            return Ok(StoreUrl::Sqlite(PathBuf::from(path)));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(StoreUrl::Postgres(url.to_string()));
        }
        Err(StoreError::Config(format!(
            "FLEETBOT_STORE must be sqlite://PATH or postgres://…, not {}",
            redact_url(url)
        )))
    }

    /// The default directory: the user's data directory (`$XDG_DATA_HOME/fleetbot`, …).
    pub fn default_dir() -> PathBuf {
        dirs::data_dir()
            .or_else(dirs::home_dir)
            .unwrap_or_else(std::env::temp_dir)
            .join("fleetbot")
    }

    /// The backend's name.
    pub fn backend(&self) -> &'static str {
        match self {
            StoreUrl::Sqlite(_) => "sqlite",
            StoreUrl::Postgres(_) => "postgres",
        }
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreUrl::Sqlite(p) => write!(f, "sqlite://{}", p.display()),
            StoreUrl::Postgres(u) => f.write_str(&redact_url(u)),
        }
    }
}

impl fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreUrl({self})")
    }
}

/// `url` with any password replaced by `***`: the userinfo's (`user:secret@host`, in every
/// form the URL standard allows) and a `password=` or `sslpassword=` query parameter's. A URL
/// that does not parse is not shown at all, only its scheme: hand-splitting it to find the
/// password is how a password with a `?` in it was once printed whole.
pub fn redact_url(url: &str) -> String {
    let scheme = url
        .split_once("://")
        .map(|(s, _)| s)
        .filter(|s| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        })
        .unwrap_or("(no scheme)");
    let Ok(mut parsed) = url::Url::parse(url) else {
        return format!(
            "{scheme}://(not shown: not a valid URL; percent-encode any reserved character in the password)"
        );
    };
    if parsed.password().is_some() {
        let _ = parsed.set_password(Some("***"));
    }
    let secret =
        |k: &str| k.eq_ignore_ascii_case("password") || k.eq_ignore_ascii_case("sslpassword");
    // The query is rewritten only when it holds a secret: rewriting re-encodes it.
    if parsed.query_pairs().any(|(k, _)| secret(&k)) {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(k, v)| {
                let v = if secret(&k) {
                    "***".to_string()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
    }
    parsed.set_fragment(None);
    parsed.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_backends_and_defaults() {
        let dir = Path::new("/data/fleetbot");
        assert_eq!(
            StoreUrl::parse(None, dir).unwrap(),
            StoreUrl::Sqlite(dir.join("fleetbot.sqlite"))
        );
        assert_eq!(
            StoreUrl::parse(Some("sqlite:///var/lib/fleetbot/q.db"), dir).unwrap(),
            StoreUrl::Sqlite("/var/lib/fleetbot/q.db".into())
        );
        assert_eq!(
            StoreUrl::parse(Some("sqlite://rel.db?mode=rwc"), dir).unwrap(),
            StoreUrl::Sqlite("rel.db".into())
        );
        let pg = StoreUrl::parse(Some("postgres://u:hunter2@db:5432/fleetbot"), dir).unwrap();
        assert_eq!(pg.backend(), "postgres");
        assert_eq!(pg.to_string(), "postgres://u:***@db:5432/fleetbot");
        assert!(!format!("{pg:?}").contains("hunter2"));
        let err = StoreUrl::parse(Some("mysql://u:hunter2@db/x"), dir).unwrap_err();
        assert!(
            err.to_string().contains("FLEETBOT_STORE") && !err.to_string().contains("hunter2"),
            "{err}"
        );
        assert!(StoreUrl::parse(Some("sqlite://"), dir).is_err());
    }

    #[test]
    fn redacts_every_password_form() {
        for (url, shown) in [
            (
                "postgres://fleet:s3cr%40t@db.internal:5432/fleet?sslmode=require",
                "postgres://fleet:***@db.internal:5432/fleet?sslmode=require",
            ),
            (
                "postgresql://fleet@db/fleet?password=hunter2&application_name=x",
                "postgresql://fleet@db/fleet?password=***&application_name=x",
            ),
            (
                "postgres:///fleet?host=/run/postgresql",
                "postgres:///fleet?host=/run/postgresql",
            ),
            ("postgres://a:b:c@h", "postgres://a:***@h"),
            ("postgres://a:p@ss@h/db", "postgres://a:***@h/db"),
            ("postgres://:hunter2@h/db", "postgres://:***@h/db"),
            ("postgres://only-user@h/db", "postgres://only-user@h/db"),
            (
                "postgres://a:hunter2@h/db?sslpassword=k3y&sslmode=verify-full#frag",
                "postgres://a:***@h/db?sslpassword=***&sslmode=verify-full",
            ),
        ] {
            assert_eq!(redact_url(url), shown);
        }
        // Unencoded `?`, `/` or `#` in a password end the authority early: not a URL a
        // client can use, and nothing of it is shown (issue 52: `?` once split the password
        // out of the part that was redacted).
        for url in [
            "postgres://fleet:pa?ss@db/fleet",
            "postgres://a:pa/ss@h/db",
            "postgres://a:hun#ter2@h/db",
        ] {
            let shown = redact_url(url);
            assert_eq!(
                shown,
                "postgres://(not shown: not a valid URL; percent-encode any reserved character in the password)"
            );
        }
        assert!(!redact_url("hunter2").contains("hunter2"));
    }
}
