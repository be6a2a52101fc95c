//! Trusted proxies (`FLEETBOT_TRUSTED_PROXIES`): behind an ingress or load balancer every
//! connection comes from the proxy, so the per-address bound on unverified bodies and the
//! source allowlist would see one address for everyone. When the TCP peer is a trusted proxy,
//! the client is the rightmost address in `Forwarded` (RFC 7239) or, without it,
//! `X-Forwarded-For` that is not itself a trusted proxy: each trusted proxy appends the
//! address it received the request from, so what a client writes itself is to the left of
//! what the first trusted proxy appended and is never believed.

use std::net::{IpAddr, SocketAddr};

use axum::http::HeaderMap;
use ipnet::IpNet;

use super::sources::parse_range;

/// The proxies whose forwarding headers are believed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedProxies {
    ranges: Vec<IpNet>,
}

impl TrustedProxies {
    /// `FLEETBOT_TRUSTED_PROXIES`: empty or `off`: none (the TCP peer is the client);
    /// otherwise comma-separated CIDR ranges and addresses.
    pub fn parse(value: &str) -> Result<Option<TrustedProxies>, String> {
        let value = value.trim();
        if value.is_empty() || value.eq_ignore_ascii_case("off") {
            return Ok(None);
        }
        let ranges = value
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(|e| {
                parse_range(e).ok_or_else(|| {
                    format!("FLEETBOT_TRUSTED_PROXIES: {e:?} is not a CIDR range or an address")
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if ranges.is_empty() {
            return Err("FLEETBOT_TRUSTED_PROXIES names no range".into());
        }
        Ok(Some(TrustedProxies { ranges }))
    }

    fn trusts(&self, addr: IpAddr) -> bool {
        let addr = addr.to_canonical();
        self.ranges.iter().any(|n| n.contains(&addr))
    }

    /// The client a request from `peer` came from. A hop that is not an address (`unknown`,
    /// an obfuscated name, garbage) ends the walk at the proxy that wrote it.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let mut client = peer.to_canonical();
        if !self.trusts(client) {
            return client;
        }
        let hops = forwarded_hops(headers);
        for hop in hops.iter().rev() {
            match hop {
                Some(addr) => client = addr.to_canonical(),
                None => break,
            }
            if !self.trusts(client) {
                break;
            }
        }
        client
    }
}

/// The `for=` hops of every `Forwarded` header in order, or else those of `X-Forwarded-For`;
/// `None` for a hop that is not an address.
fn forwarded_hops(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    let forwarded: Vec<Option<IpAddr>> = headers
        .get_all("forwarded")
        .iter()
        .flat_map(|v| {
            let text = v.to_str().unwrap_or("\u{0}");
            text.split(',')
                .map(|element| {
                    element
                        .split(';')
                        .filter_map(|pair| pair.split_once('='))
                        .find(|(k, _)| k.trim().eq_ignore_ascii_case("for"))
                        .and_then(|(_, v)| node_address(v))
                })
                .collect::<Vec<_>>()
        })
        .collect();
    if !forwarded.is_empty() {
        return forwarded;
    }
    headers
        .get_all("x-forwarded-for")
        .iter()
        .flat_map(|v| {
            let text = v.to_str().unwrap_or("\u{0}");
            text.split(',').map(node_address).collect::<Vec<_>>()
        })
        .collect()
}

/// A node as `Forwarded` writes it (`192.0.2.60`, `"[2001:db8::1]:4711"`, `192.0.2.60:80`)
/// or as `X-Forwarded-For` does; `None` for anything else.
fn node_address(value: &str) -> Option<IpAddr> {
    let v = value.trim().trim_matches('"');
    if let Ok(ip) = v.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Ok(sock) = v.parse::<SocketAddr>() {
        return Some(sock.ip());
    }
    let bracketed = v.strip_prefix('[')?;
    let inside = bracketed.split(']').next()?;
    inside.parse::<IpAddr>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_client_is_the_rightmost_hop_that_is_not_a_trusted_proxy() {
        let t = TrustedProxies::parse("10.0.0.0/8, 192.168.1.5")
            .unwrap()
            .unwrap();
        let proxy = ip("10.1.2.3");
        // What the client wrote itself (1.1.1.1) is left of what the proxy appended.
        let h = headers(&[("x-forwarded-for", "1.1.1.1, 140.82.115.7")]);
        assert_eq!(t.client(proxy, &h), ip("140.82.115.7"));
        // Two proxies in a row: both appended; the second saw the first.
        let h = headers(&[("x-forwarded-for", "1.1.1.1, 140.82.115.7, 192.168.1.5")]);
        assert_eq!(t.client(proxy, &h), ip("140.82.115.7"));
        // Several header lines are one list, in order.
        let h = headers(&[
            ("x-forwarded-for", "1.1.1.1"),
            ("x-forwarded-for", "140.82.115.8"),
        ]);
        assert_eq!(t.client(proxy, &h), ip("140.82.115.8"));
        // Forwarded wins over X-Forwarded-For, with its quoting and ports.
        let h = headers(&[
            (
                "forwarded",
                "for=1.1.1.1, for=\"[2001:db8:cafe::17]:4711\";proto=https",
            ),
            ("x-forwarded-for", "9.9.9.9"),
        ]);
        assert_eq!(t.client(proxy, &h), ip("2001:db8:cafe::17"));
        let h = headers(&[("forwarded", "For=140.82.115.9:443;by=10.0.0.1")]);
        assert_eq!(t.client(proxy, &h), ip("140.82.115.9"));
    }

    #[test]
    fn a_peer_that_is_not_trusted_and_a_hop_that_is_not_an_address_are_not_believed() {
        let t = TrustedProxies::parse("10.0.0.0/8").unwrap().unwrap();
        let h = headers(&[("x-forwarded-for", "140.82.115.7")]);
        // A stranger's own header says nothing.
        assert_eq!(t.client(ip("203.0.113.9"), &h), ip("203.0.113.9"));
        // Garbage, `unknown` or an obfuscated node: the walk stops at the proxy.
        for bad in ["unknown", "_hidden", "not an address", ""] {
            let h = headers(&[("x-forwarded-for", bad)]);
            assert_eq!(t.client(ip("10.0.0.2"), &h), ip("10.0.0.2"), "{bad:?}");
        }
        // No header at all: the proxy is the client (its bound applies to everyone behind it).
        assert_eq!(t.client(ip("10.0.0.2"), &HeaderMap::new()), ip("10.0.0.2"));
        // An IPv4 proxy seen on a dual-stack socket is matched as IPv4.
        let h = headers(&[("x-forwarded-for", "140.82.115.7")]);
        assert_eq!(t.client(ip("::ffff:10.0.0.2"), &h), ip("140.82.115.7"));
    }

    #[test]
    fn the_setting_parses_ranges_and_refuses_anything_else() {
        assert_eq!(TrustedProxies::parse("").unwrap(), None);
        assert_eq!(TrustedProxies::parse("off").unwrap(), None);
        assert!(TrustedProxies::parse("10.0.0.0/8,::1").unwrap().is_some());
        let e = TrustedProxies::parse("10.0.0.0/8,proxy.internal").unwrap_err();
        assert!(e.contains("\"proxy.internal\""), "{e}");
        assert!(TrustedProxies::parse(" , ").is_err());
    }
}
