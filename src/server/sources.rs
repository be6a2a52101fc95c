//! The optional allowlist of webhook source addresses (`FLEETBOT_WEBHOOK_SOURCE_RANGES`):
//! `POST /webhook` from a peer outside it is refused before anything else is read.
//!
//! Defence in depth on top of the signature, never instead of it: GitHub says its ranges
//! change from time to time and advises against relying on them alone. `github` stands for the
//! `hooks` ranges of `GET /meta`, read at start (the server does not start without them:
//! an allowlist that was asked for and cannot be known fails closed) and read again every
//! [`REFRESH_EVERY`]; a failed or empty refresh keeps the ranges in force. The peer is the
//! TCP peer, or behind a trusted proxy the client its forwarding headers name
//! ([`super::proxies`]).

use std::net::IpAddr;
use std::str::FromStr;
use std::sync::RwLock;
use std::time::Duration;

use ipnet::IpNet;

/// How often GitHub's `hooks` ranges are read again.
pub const REFRESH_EVERY: Duration = Duration::from_secs(3600);

/// The setting, parsed: GitHub's published ranges, fixed ranges, or both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceSetting {
    /// `github` was named: GitHub's `hooks` ranges are allowed.
    pub github: bool,
    /// Ranges named as CIDRs (or single addresses).
    pub ranges: Vec<IpNet>,
}

impl SourceSetting {
    /// `FLEETBOT_WEBHOOK_SOURCE_RANGES`: empty or `off` turns the allowlist off (`None`);
    /// otherwise a comma-separated list of `github`, CIDR ranges and single addresses.
    pub fn parse(value: &str) -> Result<Option<SourceSetting>, String> {
        let value = value.trim();
        if value.is_empty() || value.eq_ignore_ascii_case("off") {
            return Ok(None);
        }
        let mut setting = SourceSetting {
            github: false,
            ranges: Vec::new(),
        };
        for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            if entry.eq_ignore_ascii_case("github") {
                setting.github = true;
            } else {
                setting.ranges.push(parse_range(entry).ok_or_else(|| {
                    format!(
                        "FLEETBOT_WEBHOOK_SOURCE_RANGES: {entry:?} is not `github`, a CIDR range or an address"
                    )
                })?);
            }
        }
        if !setting.github && setting.ranges.is_empty() {
            return Err("FLEETBOT_WEBHOOK_SOURCE_RANGES names no range".into());
        }
        Ok(Some(setting))
    }
}

/// One range: `192.30.252.0/22`, `2a0a:a440::/29`, or a single address.
pub fn parse_range(entry: &str) -> Option<IpNet> {
    IpNet::from_str(entry)
        .ok()
        .or_else(|| IpAddr::from_str(entry).ok().map(IpNet::from))
        .map(|net| net.trunc())
}

/// GitHub's `hooks` entries as ranges; an entry that does not parse is left out, and a list
/// with none left is an error (allowing nothing would refuse every delivery).
pub fn parse_hooks(entries: &[String]) -> Result<Vec<IpNet>, String> {
    let ranges: Vec<IpNet> = entries.iter().filter_map(|e| parse_range(e)).collect();
    if ranges.is_empty() {
        return Err(format!(
            "GET /meta listed no usable hooks range ({} entries)",
            entries.len()
        ));
    }
    Ok(ranges)
}

/// The allowlist in force.
#[derive(Debug)]
pub struct SourceRanges {
    fixed: Vec<IpNet>,
    github: RwLock<Vec<IpNet>>,
    uses_github: bool,
}

impl SourceRanges {
    /// The allowlist of `setting`, with GitHub's ranges as last read (`github`).
    pub fn new(setting: &SourceSetting, github: Vec<IpNet>) -> Self {
        SourceRanges {
            fixed: setting.ranges.clone(),
            github: RwLock::new(github),
            uses_github: setting.github,
        }
    }

    /// Whether GitHub's ranges are part of it (and so refreshed).
    pub fn uses_github(&self) -> bool {
        self.uses_github
    }

    /// Whether a delivery from `peer` may be read. An IPv4 peer seen on a dual-stack socket
    /// (`::ffff:a.b.c.d`) is matched as the IPv4 address it is.
    pub fn allows(&self, peer: IpAddr) -> bool {
        let peer = peer.to_canonical();
        self.fixed.iter().any(|n| n.contains(&peer))
            || (self.uses_github
                && self
                    .github
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .any(|n| n.contains(&peer)))
    }

    /// Replaces GitHub's ranges (after a successful read of `GET /meta`).
    pub fn set_github(&self, ranges: Vec<IpNet>) {
        *self.github.write().unwrap_or_else(|e| e.into_inner()) = ranges;
    }

    /// How many ranges are in force (for the start-up log).
    pub fn len(&self) -> usize {
        self.fixed.len() + self.github.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Never true for a parsed setting: it names at least one range or `github`, and GitHub's
    /// list is never taken empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The allowlist of `setting`, with GitHub's ranges read now when it names `github`: without
/// them it fails (closed), and the server does not start.
pub async fn load(
    setting: &SourceSetting,
    github: &crate::github::GitHubClient,
) -> Result<SourceRanges, String> {
    let hooks = if setting.github {
        let entries = github.hook_ranges().await.map_err(|e| {
            format!("FLEETBOT_WEBHOOK_SOURCE_RANGES=github: cannot read GitHub's hook ranges (GET /meta): {e}")
        })?;
        parse_hooks(&entries).map_err(|e| format!("FLEETBOT_WEBHOOK_SOURCE_RANGES=github: {e}"))?
    } else {
        Vec::new()
    };
    Ok(SourceRanges::new(setting, hooks))
}

/// Reads GitHub's ranges again every [`REFRESH_EVERY`] until `stop`; a failed or empty read
/// keeps those in force (and is logged).
pub async fn refresh_github(
    ranges: std::sync::Arc<SourceRanges>,
    github: crate::github::GitHubClient,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(REFRESH_EVERY) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        match github
            .hook_ranges()
            .await
            .map_err(|e| e.to_string())
            .and_then(|e| parse_hooks(&e))
        {
            Ok(hooks) => {
                tracing::debug!(ranges = hooks.len(), "GitHub's hook ranges read again");
                ranges.set_github(hooks);
            }
            Err(e) => tracing::warn!("GitHub's hook ranges not refreshed, the last ones stay: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn settings_parse_and_off_is_the_default() {
        assert_eq!(SourceSetting::parse("").unwrap(), None);
        assert_eq!(SourceSetting::parse(" off ").unwrap(), None);
        let s = SourceSetting::parse("github, 10.0.0.0/8 ,2001:db8::/32,192.0.2.7")
            .unwrap()
            .unwrap();
        assert!(s.github);
        let shown: Vec<String> = s.ranges.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["10.0.0.0/8", "2001:db8::/32", "192.0.2.7/32"]);
        // Host bits are dropped, as the range means.
        let s = SourceSetting::parse("10.1.2.3/8").unwrap().unwrap();
        assert!(!s.github);
        assert_eq!(s.ranges[0].to_string(), "10.0.0.0/8");
        for bad in [
            "10.0.0.0/33",
            "githubb",
            "example.com",
            "10.0.0.0/8;rm",
            ",",
        ] {
            assert!(SourceSetting::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn matching_covers_both_families_and_mapped_addresses() {
        let s = SourceSetting::parse("github,10.0.0.0/8").unwrap().unwrap();
        let hooks = parse_hooks(&[
            "192.30.252.0/22".into(),
            "2a0a:a440::/29".into(),
            "not a range".into(),
        ])
        .unwrap();
        let r = SourceRanges::new(&s, hooks);
        assert_eq!(r.len(), 3);
        assert!(r.allows(ip("192.30.255.255")));
        assert!(!r.allows(ip("192.30.251.255")));
        assert!(r.allows(ip("2a0a:a447::1")));
        assert!(r.allows(ip("10.9.9.9")));
        assert!(r.allows(ip("::ffff:192.30.252.1")));
        assert!(!r.allows(ip("127.0.0.1")));
        r.set_github(vec![parse_range("127.0.0.0/8").unwrap()]);
        assert!(r.allows(ip("127.0.0.1")));
        assert!(!r.allows(ip("192.30.252.1")));
        assert!(parse_hooks(&[]).is_err());
        assert!(parse_hooks(&["nope".into()]).is_err());
    }

    #[test]
    fn fixed_ranges_alone_ignore_githubs() {
        let s = SourceSetting::parse("192.0.2.0/24").unwrap().unwrap();
        let r = SourceRanges::new(&s, vec![parse_range("0.0.0.0/0").unwrap()]);
        assert!(!r.uses_github());
        assert!(!r.allows(ip("198.51.100.1")));
        assert!(r.allows(ip("192.0.2.200")));
    }
}
