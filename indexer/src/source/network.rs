//! Which machines a remote source may make us connect to.
//!
//! A hosted server that fetches caller-chosen URLs is a server-side request forgery tool unless
//! it refuses to reach its own network: the cloud metadata service (169.254.169.254), loopback
//! admin ports, the VPC's private ranges. [`NetworkPolicy::PublicHttps`] holds that line in three
//! places, because one check alone has a hole:
//! - before connecting, the URL's host is resolved and every address must be public, so the
//!   caller gets a precise error ([`check_url_host`]);
//! - every connection the HTTP client opens (the first, redirects, git's follow-up requests)
//!   resolves names through [`PublicResolver`], which refuses private answers: a DNS name that
//!   answered with a public address to the first check and a private one later (rebinding)
//!   is refused at connect time;
//! - only `https` is allowed, on every hop: a redirect to a private IP literal (which skips the
//!   resolver) would have to complete a TLS handshake with a certificate valid for that IP.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};

use super::SourceError;

/// Which hosts and schemes a remote source may use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NetworkPolicy {
    /// Anything git and HTTP can reach: the CLI and the operator's own jobs, where whoever
    /// names the URL already runs the machine.
    #[default]
    Open,
    /// Public addresses over HTTPS only: a server fetching URLs its callers chose.
    PublicHttps,
}

/// Whether `ip` is an ordinary public unicast address (not loopback, private, link-local,
/// shared, documentation, benchmarking, multicast, reserved or unspecified).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0 // "this network"
        || (a == 100 && (64..128).contains(&b)) // shared address space (carrier NAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (18..20).contains(&b)) // benchmarking
        || a >= 240) // reserved
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    // Addresses that carry an IPv4 address reach that address: judge the IPv4 one.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let seg = ip.segments();
    if seg[0] == 0x64 && seg[1] == 0xff9b && seg[2..6] == [0, 0, 0, 0] {
        // NAT64 (64:ff9b::/96).
        let [.., hi, lo] = seg;
        return is_public_v4(Ipv4Addr::from(((hi as u32) << 16) | lo as u32));
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || ip.is_unique_local()
        || ip.is_unicast_link_local()
        || (seg[0] == 0x2001 && seg[1] == 0x0db8) // documentation
        || seg[0] & 0xffc0 == 0xfec0 // site-local (deprecated, still routed in some networks)
        || seg[..6] == [0, 0, 0, 0, 0, 0]) // IPv4-compatible and other ::/96 forms
}

/// The host of `url` (already parsed by the caller), checked under `policy`: with
/// [`NetworkPolicy::PublicHttps`] the scheme must be `https` and every address the host
/// resolves to must be public.
pub(super) fn check_url_host(
    policy: NetworkPolicy,
    url: &str,
    scheme: &str,
    host: Option<&str>,
    port: Option<u16>,
) -> Result<(), SourceError> {
    if policy == NetworkPolicy::Open {
        return Ok(());
    }
    if scheme != "https" {
        return Err(SourceError::NotAllowed {
            url: url.to_owned(),
            why: format!("this server fetches only https URLs, not `{scheme}`"),
        });
    }
    let host = host.ok_or_else(|| SourceError::BadUrl {
        url: url.to_owned(),
        why: "no host".into(),
    })?;
    let addrs = resolve(host, port.unwrap_or(443)).map_err(|message| SourceError::Network {
        url: url.to_owned(),
        message,
    })?;
    match addrs.iter().find(|a| !is_public(a.ip())) {
        Some(private) => Err(SourceError::NotAllowed {
            url: url.to_owned(),
            why: format!(
                "`{host}` is {}, a private or reserved address; this server fetches only public hosts",
                private.ip()
            ),
        }),
        None => Ok(()),
    }
}

/// Resolves `host` (a name or an IP literal, IPv6 with or without brackets).
fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let addrs: Vec<SocketAddr> = (bare, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve `{bare}`: {e}"))?
        .collect();
    if addrs.is_empty() {
        return Err(format!("`{bare}` has no addresses"));
    }
    Ok(addrs)
}

/// A DNS resolver for reqwest that refuses names resolving to any non-public address, so that
/// every connection a client opens (redirects and follow-up requests included) is checked at
/// the moment it is made.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PublicResolver;

/// Why [`PublicResolver`] refused a name (shows up in the transfer's error chain).
#[derive(Debug, thiserror::Error)]
#[error("`{host}` resolves to {addr}, a private or reserved address")]
struct PrivateAnswer {
    host: String,
    addr: IpAddr,
}

impl reqwest::dns::Resolve for PublicResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        // The lookup blocks its thread; reqwest's blocking client runs one transfer at a time
        // on its own runtime, so nothing else waits behind it.
        Box::pin(async move {
            let addrs = resolve(&host, 0)
                .map_err(|m| -> Box<dyn std::error::Error + Send + Sync> { m.into() })?;
            if let Some(bad) = addrs.iter().find(|a| !is_public(a.ip())) {
                return Err(Box::new(PrivateAnswer {
                    host,
                    addr: bad.ip(),
                })
                    as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// Applies `policy` to an HTTP client being built.
pub(super) fn configure(
    policy: NetworkPolicy,
    builder: reqwest::blocking::ClientBuilder,
) -> reqwest::blocking::ClientBuilder {
    match policy {
        NetworkPolicy::Open => builder,
        NetworkPolicy::PublicHttps => builder
            .https_only(true)
            .dns_resolver(std::sync::Arc::new(PublicResolver)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn network_private_and_reserved_addresses_are_not_public() {
        for s in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "0.1.2.3",
            "192.0.0.8",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "192.0.2.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:1",
            "::127.0.0.1",
        ] {
            assert!(!is_public(ip(s)), "{s} should not be public");
        }
        for s in [
            "1.1.1.1",
            "140.82.112.3",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert!(is_public(ip(s)), "{s} should be public");
        }
    }

    #[test]
    fn network_resolver_refuses_names_with_private_answers() {
        use reqwest::dns::Resolve;
        use std::str::FromStr;
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let resolve = |host: &str| {
            let name = reqwest::dns::Name::from_str(host).unwrap();
            rt.block_on(PublicResolver.resolve(name))
        };
        // `localhost` answers loopback: what a rebinding name would answer on the second look.
        let err = resolve("localhost").err().expect("refused");
        assert!(err.to_string().contains("private or reserved"), "{err}");
        assert!(resolve("no-such-host.invalid").is_err());
    }

    #[test]
    fn network_public_https_refuses_plain_http_and_private_hosts() {
        let check = |url: &str| {
            let u = reqwest::Url::parse(url).unwrap();
            check_url_host(
                NetworkPolicy::PublicHttps,
                url,
                u.scheme(),
                u.host_str(),
                u.port(),
            )
        };
        for url in [
            "http://example.com/a.tar.gz",
            "https://127.0.0.1/a.tar.gz",
            "https://[::1]:8443/a.tar.gz",
            "https://169.254.169.254/latest/meta-data",
            "https://localhost/a.tar.gz",
        ] {
            let err = check(url).unwrap_err();
            assert!(
                matches!(err, SourceError::NotAllowed { .. }),
                "{url}: {err}"
            );
            assert!(err.is_user_error(), "{url}");
        }
        // The open policy lets the CLI fetch from its own network.
        assert!(
            check_url_host(
                NetworkPolicy::Open,
                "http://127.0.0.1/",
                "http",
                Some("127.0.0.1"),
                None
            )
            .is_ok()
        );
    }
}
