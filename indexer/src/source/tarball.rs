//! Tarballs over HTTP(S): downloaded to a file within the byte limit (hashed on the way), then
//! unpacked entry by entry through the [`Extractor`]. `tar::Archive::unpack` is not used: it
//! follows links written earlier in the same archive and keeps device entries.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::extract::{Extractor, LinkPolicy, SafePath};
use super::network::{self, NetworkPolicy};
use super::{Fetched, SourceError, SourceLimits};

/// Downloads and unpacks the tarball at `url` into a new folder in `work_dir`.
pub(super) fn fetch(
    url: &str,
    limits: &SourceLimits,
    work_dir: &Path,
) -> Result<Fetched, SourceError> {
    check_url(url, limits.network)?;
    let client = client(url, limits.network)?;
    let mut response = client.get(url).send().map_err(|e| network(url, &e))?;
    let status = response.status();
    if !status.is_success() {
        return Err(SourceError::Http {
            url: url.to_owned(),
            status: status.as_u16(),
        });
    }
    let too_large = || SourceError::TooLarge {
        what: "the download",
        limit: limits.max_bytes,
    };
    if response
        .content_length()
        .is_some_and(|len| len > limits.max_bytes)
    {
        return Err(too_large());
    }
    let probe_token = strong_etag(response.headers());

    let dir = super::temp_dir_in(work_dir)?;
    let archive_path = dir.path().join("download");
    let mut archive =
        std::fs::File::create(&archive_path).map_err(SourceError::io("creating", &archive_path))?;
    let mut hasher = Sha256::new();
    let mut total = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match response.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(SourceError::Network {
                    url: url.to_owned(),
                    message: super::error_chain(&e),
                });
            }
        };
        total += n as u64;
        if total > limits.max_bytes {
            return Err(too_large());
        }
        hasher.update(&buf[..n]);
        archive
            .write_all(&buf[..n])
            .map_err(SourceError::io("writing", &archive_path))?;
    }
    drop(archive);
    let revision = ctxgate_core::hash::hex(&hasher.finalize());

    let unpacked = dir.path().join("files");
    std::fs::create_dir(&unpacked).map_err(SourceError::io("creating folder", &unpacked))?;
    let file =
        std::fs::File::open(&archive_path).map_err(SourceError::io("reading", &archive_path))?;
    let (root, warnings) = unpack(file, &unpacked, limits)?;
    std::fs::remove_file(&archive_path).map_err(SourceError::io("removing", &archive_path))?;
    Ok(Fetched {
        root,
        revision: Some(revision),
        probe_token,
        warnings,
        git_dir: None,
        _dir: Some(dir),
    })
}

/// The strong ETag of an HTTP `HEAD` on `url`; `None` when the server gives none, only a weak
/// one, or does not answer `HEAD`.
pub(super) fn probe(url: &str, policy: NetworkPolicy) -> Result<Option<String>, SourceError> {
    check_url(url, policy)?;
    let response = client(url, policy)?
        .head(url)
        .send()
        .map_err(|e| network(url, &e))?;
    let status = response.status();
    if status == reqwest::StatusCode::METHOD_NOT_ALLOWED
        || status == reqwest::StatusCode::NOT_IMPLEMENTED
    {
        return Ok(None);
    }
    if !status.is_success() {
        return Err(SourceError::Http {
            url: url.to_owned(),
            status: status.as_u16(),
        });
    }
    Ok(strong_etag(response.headers()))
}

/// Unpacks a tar or gzip-compressed tar (told apart by their magic bytes) below `dest`; returns
/// the project root (the single top-level folder if there is one) and the warnings.
pub(super) fn unpack(
    input: impl Read,
    dest: &Path,
    limits: &SourceLimits,
) -> Result<(std::path::PathBuf, Vec<String>), SourceError> {
    let mut input = BufReader::new(input);
    let head = input.fill_buf().map_err(SourceError::io("reading", dest))?;
    let gzip = head.starts_with(&[0x1f, 0x8b]);
    if !gzip && !looks_like_tar(head) {
        return Err(SourceError::BadArchive(
            "neither gzip nor tar magic bytes at the start".into(),
        ));
    }
    let stream: Box<dyn Read> = if gzip {
        Box::new(flate2::read::MultiGzDecoder::new(input))
    } else {
        Box::new(input)
    };
    // Headers and padding take at most 1 KiB per entry beyond the files' own bytes; the cap keeps
    // a decompression bomb hidden in skipped entries (pax headers) from running on.
    let cap = limits
        .max_bytes
        .saturating_add(limits.max_files.saturating_mul(1024))
        .saturating_add(1 << 20);
    let over = Arc::new(AtomicBool::new(false));
    let stream = CappedReader {
        inner: stream,
        left: cap,
        over: over.clone(),
    };
    let too_large = || SourceError::TooLarge {
        what: "the unpacked files",
        limit: limits.max_bytes,
    };
    let read_error = |e: std::io::Error| {
        if over.load(Ordering::Relaxed) {
            too_large()
        } else {
            SourceError::BadArchive(super::error_chain(&e))
        }
    };

    let mut archive = tar::Archive::new(stream);
    let mut x = Extractor::new(dest.to_path_buf(), *limits, LinkPolicy::Refuse);
    for entry in archive.entries().map_err(read_error)? {
        let mut entry = entry.map_err(read_error)?;
        x.count_entry()?;
        let raw_path = entry.path_bytes().into_owned();
        let shown = String::from_utf8_lossy(&raw_path).into_owned();
        let refuse = |why| SourceError::UnsafeEntry {
            path: shown.clone(),
            why,
        };
        use tar::EntryType as T;
        let kind = entry.header().entry_type();
        // Metadata entries carry no path of their own.
        if matches!(
            kind,
            T::XGlobalHeader | T::XHeader | T::GNULongName | T::GNULongLink
        ) {
            continue;
        }
        let path = SafePath::parse(&raw_path).map_err(refuse)?;
        let result = match kind {
            T::Regular | T::Continuous | T::GNUSparse => {
                let size = entry.size();
                let executable = entry.header().mode().is_ok_and(|m| m & 0o111 != 0);
                x.file(&path, size, &mut entry, executable)
            }
            T::Directory => x.dir(&path),
            T::Symlink => {
                let target = entry
                    .link_name_bytes()
                    .ok_or_else(|| refuse("link without a target"))?;
                x.symlink(&path, &target)
            }
            T::Link => {
                let target = entry
                    .link_name_bytes()
                    .ok_or_else(|| refuse("hard link without a target"))?;
                let target = SafePath::parse(&target).map_err(refuse)?;
                x.hardlink(&path, &target)
            }
            T::Char | T::Block => Err(refuse("device entry")),
            T::Fifo => Err(refuse("fifo entry")),
            _ => Err(refuse("unknown entry type")),
        };
        // A read error inside an entry may be the cap tripping.
        match result {
            Err(SourceError::BadArchive(_)) if over.load(Ordering::Relaxed) => {
                return Err(too_large());
            }
            other => other?,
        }
    }
    let root = x.single_top_folder().unwrap_or_else(|| dest.to_path_buf());
    let warnings = x.finish(&root)?;
    Ok((root, warnings))
}

/// POSIX and GNU tar headers carry `ustar` at offset 257.
fn looks_like_tar(head: &[u8]) -> bool {
    head.get(257..262) == Some(b"ustar".as_slice())
}

/// Reads at most `left` bytes, then fails and raises `over`.
struct CappedReader<R> {
    inner: R,
    left: u64,
    over: Arc<AtomicBool>,
}

impl<R: Read> Read for CappedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            self.over.store(true, Ordering::Relaxed);
            return Err(std::io::Error::other("archive larger than the limit"));
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// Only http and https (the hosted side must not be made to read `file://` paths), and what
/// `policy` lets through.
fn check_url(url: &str, policy: NetworkPolicy) -> Result<(), SourceError> {
    let parsed = reqwest::Url::parse(url).map_err(|e| SourceError::BadUrl {
        url: url.to_owned(),
        why: e.to_string(),
    })?;
    match parsed.scheme() {
        "http" | "https" => network::check_url_host(
            policy,
            url,
            parsed.scheme(),
            parsed.host_str(),
            parsed.port(),
        ),
        other => Err(SourceError::Unsupported {
            scheme: other.to_owned(),
            kind: "tarball",
        }),
    }
}

fn client(url: &str, policy: NetworkPolicy) -> Result<reqwest::blocking::Client, SourceError> {
    super::ensure_tls_provider();
    let builder = reqwest::blocking::Client::builder()
        .user_agent(concat!("ctxgate/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(30))
        // Large archives on slow links; the Lambda's own timeout bounds it below this anyway.
        .timeout(Duration::from_secs(15 * 60));
    network::configure(policy, builder)
        .build()
        .map_err(|e| network(url, &e))
}

fn network(url: &str, e: &reqwest::Error) -> SourceError {
    SourceError::Network {
        url: url.to_owned(),
        message: super::error_chain(e),
    }
}

/// A strong ETag, quotes included; weak ones (`W/"..."`) promise equivalence, not equal bytes.
fn strong_etag(headers: &reqwest::header::HeaderMap) -> Option<String> {
    let value = headers.get(reqwest::header::ETAG)?.to_str().ok()?.trim();
    (value.starts_with('"') && value.len() >= 2).then(|| value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{SourceSpec, fetch as fetch_source, probe_revision};
    use std::collections::HashMap;
    use std::net::TcpListener;

    /// What the test server answers for a path.
    #[derive(Clone)]
    struct Reply {
        status: u16,
        body: Vec<u8>,
        etag: Option<&'static str>,
        /// Send Content-Length (else the body ends when the connection closes).
        length: bool,
    }

    fn ok(body: Vec<u8>) -> Reply {
        Reply {
            status: 200,
            body,
            etag: Some("\"v1\""),
            length: true,
        }
    }

    /// A small HTTP/1.1 server on loopback; one request per connection. Returns the base URL.
    fn serve(routes: HashMap<&'static str, Reply>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                let mut parts = line.split_whitespace();
                let method = parts.next().unwrap_or("").to_owned();
                let path = parts.next().unwrap_or("").to_owned();
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                        break;
                    }
                }
                let reply = routes.get(path.as_str()).cloned().unwrap_or(Reply {
                    status: 404,
                    body: b"not found".to_vec(),
                    etag: None,
                    length: true,
                });
                let mut out = stream;
                let mut head = format!("HTTP/1.1 {} X\r\nConnection: close\r\n", reply.status);
                if reply.length {
                    head.push_str(&format!("Content-Length: {}\r\n", reply.body.len()));
                }
                if let Some(etag) = reply.etag {
                    head.push_str(&format!("ETag: {etag}\r\n"));
                }
                head.push_str("\r\n");
                let _ = out.write_all(head.as_bytes());
                if method != "HEAD" {
                    let _ = out.write_all(&reply.body);
                }
            }
        });
        base
    }

    fn builder() -> tar::Builder<Vec<u8>> {
        tar::Builder::new(Vec::new())
    }

    fn add_file(b: &mut tar::Builder<Vec<u8>>, path: &str, data: &[u8]) {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        b.append_data(&mut h, path, data).unwrap();
    }

    /// An entry with the name and link written raw: `Builder` refuses `..` and absolute paths.
    fn add_raw(
        b: &mut tar::Builder<Vec<u8>>,
        path: &str,
        kind: tar::EntryType,
        link: &str,
        data: &[u8],
    ) {
        let mut h = tar::Header::new_old();
        {
            let old = h.as_old_mut();
            old.name[..path.len()].copy_from_slice(path.as_bytes());
            old.linkname[..link.len()].copy_from_slice(link.as_bytes());
        }
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(kind);
        h.set_cksum();
        b.append(&h, data).unwrap();
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(bytes).unwrap();
        enc.finish().unwrap()
    }

    fn spec(base: &str, path: &str) -> SourceSpec {
        SourceSpec::Tarball {
            url: format!("{base}{path}"),
        }
    }

    #[test]
    fn source_tarball_gzip_with_top_folder() {
        let mut b = builder();
        add_file(&mut b, "repo-abc123/src/lib.rs", b"fn main() {}\n");
        add_file(&mut b, "repo-abc123/README.md", b"# hi\n");
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Symlink);
        h.set_size(0);
        b.append_link(&mut h, "repo-abc123/lib", "src/lib.rs")
            .unwrap();
        let body = gzip(&b.into_inner().unwrap());
        let digest = ctxgate_core::hash::hex(&Sha256::digest(&body));
        let base = serve(HashMap::from([("/a.tar.gz", ok(body))]));
        let work = tempfile::tempdir().unwrap();

        let got = fetch_source(
            &spec(&base, "/a.tar.gz"),
            None,
            &SourceLimits::default(),
            work.path(),
        )
        .unwrap();
        assert!(got.root.ends_with("repo-abc123"), "{}", got.root.display());
        assert_eq!(
            std::fs::read_to_string(got.root.join("src/lib.rs")).unwrap(),
            "fn main() {}\n"
        );
        assert_eq!(
            std::fs::read_to_string(got.root.join("lib")).unwrap(),
            "fn main() {}\n"
        );
        assert_eq!(got.revision.as_deref(), Some(digest.as_str()));
        assert_eq!(got.probe_token.as_deref(), Some("\"v1\""));
        assert!(
            !got.root
                .parent()
                .unwrap()
                .parent()
                .unwrap()
                .join("download")
                .exists()
        );
        let tmp = got.root.parent().unwrap().to_path_buf();
        drop(got);
        assert!(!tmp.exists(), "dropping Fetched deletes its folder");
    }

    #[test]
    fn source_tarball_plain_tar_without_top_folder() {
        let mut b = builder();
        add_file(&mut b, "a.txt", b"a");
        add_file(&mut b, "dir/b.txt", b"b");
        let base = serve(HashMap::from([("/p.tar", ok(b.into_inner().unwrap()))]));
        let work = tempfile::tempdir().unwrap();
        let got = fetch_source(
            &spec(&base, "/p.tar"),
            None,
            &SourceLimits::default(),
            work.path(),
        )
        .unwrap();
        assert!(got.root.ends_with("files"));
        assert_eq!(std::fs::read(got.root.join("dir/b.txt")).unwrap(), b"b");
    }

    #[test]
    fn source_tarball_refuses_hostile_entries() {
        use tar::EntryType as T;
        type Build = Box<dyn Fn(&mut tar::Builder<Vec<u8>>)>;
        let cases: Vec<(&str, &str, Build)> = vec![
            (
                "absolute",
                "absolute",
                Box::new(|b| add_raw(b, "/tmp/evil", T::Regular, "", b"x")),
            ),
            (
                "dotdot",
                "`..`",
                Box::new(|b| add_raw(b, "a/../../evil", T::Regular, "", b"x")),
            ),
            (
                "abs-link",
                "absolute",
                Box::new(|b| add_raw(b, "l", T::Symlink, "/etc/passwd", b"")),
            ),
            (
                "up-link",
                "leaves the root",
                Box::new(|b| add_raw(b, "a/l", T::Symlink, "../../x", b"")),
            ),
            (
                "link-chain",
                "through other links",
                Box::new(|b| {
                    add_raw(b, "d/e/.keep", T::Regular, "", b"");
                    add_raw(b, "esc", T::Symlink, "d/e/up/..", b"");
                    add_raw(b, "d/e/up", T::Symlink, "../..", b"");
                }),
            ),
            (
                "hardlink-out",
                "`..`",
                Box::new(|b| add_raw(b, "h", T::Link, "../outside", b"")),
            ),
            (
                "hardlink-to-link",
                "not an earlier file",
                Box::new(|b| {
                    add_raw(b, "l", T::Symlink, "ok.txt", b"");
                    add_raw(b, "h", T::Link, "l", b"");
                }),
            ),
            (
                "through-link",
                "through a symbolic link",
                Box::new(|b| {
                    add_raw(b, "sub/.keep", T::Regular, "", b"");
                    add_raw(b, "l", T::Symlink, "sub", b"");
                    add_raw(b, "l/x", T::Regular, "", b"x");
                }),
            ),
            (
                "fifo",
                "fifo",
                Box::new(|b| add_raw(b, "f", T::Fifo, "", b"")),
            ),
            (
                "char-device",
                "device",
                Box::new(|b| add_raw(b, "c", T::Char, "", b"")),
            ),
            (
                "block-device",
                "device",
                Box::new(|b| add_raw(b, "k", T::Block, "", b"")),
            ),
        ];
        let mut routes = HashMap::new();
        for (name, _, build) in &cases {
            let mut b = builder();
            add_file(&mut b, "ok.txt", b"fine");
            build(&mut b);
            let path: &'static str = Box::leak(format!("/{name}.tar").into_boxed_str());
            routes.insert(path, ok(gzip(&b.into_inner().unwrap())));
        }
        let base = serve(routes);
        for (name, why, _) in &cases {
            let work = tempfile::tempdir().unwrap();
            let err = fetch_source(
                &spec(&base, &format!("/{name}.tar")),
                None,
                &SourceLimits::default(),
                work.path(),
            )
            .unwrap_err();
            assert!(
                matches!(err, SourceError::UnsafeEntry { .. }) && err.to_string().contains(why),
                "{name}: {err}"
            );
            assert!(err.is_user_error());
            let left: Vec<_> = std::fs::read_dir(work.path()).unwrap().collect();
            assert!(left.is_empty(), "{name}: the temporary folder is removed");
        }
    }

    #[test]
    fn source_tarball_http_errors_and_limits() {
        let big = vec![b'x'; 64 * 1024];
        let mut b = builder();
        for i in 0..20 {
            add_file(&mut b, &format!("f{i}.txt"), b"x");
        }
        let many = b.into_inner().unwrap();
        let mut b = builder();
        add_file(&mut b, "big.bin", &vec![0u8; 1 << 20]);
        let bomb = gzip(&b.into_inner().unwrap());
        let base = serve(HashMap::from([
            ("/big-length", ok(big.clone())),
            (
                "/big-stream",
                Reply {
                    length: false,
                    ..ok(big)
                },
            ),
            ("/many.tar.gz", ok(gzip(&many))),
            ("/bomb.tar.gz", ok(bomb)),
            ("/html", ok(b"<html>not an archive</html>".to_vec())),
        ]));
        let work = tempfile::tempdir().unwrap();
        let small = SourceLimits {
            max_bytes: 16 * 1024,
            max_files: 10,
            network: NetworkPolicy::Open,
            ..SourceLimits::default()
        };

        let err =
            fetch_source(&spec(&base, "/missing.tgz"), None, &small, work.path()).unwrap_err();
        assert!(
            matches!(err, SourceError::Http { status: 404, .. }),
            "{err}"
        );
        assert!(err.is_user_error());

        for path in ["/big-length", "/big-stream"] {
            let err = fetch_source(&spec(&base, path), None, &small, work.path()).unwrap_err();
            assert!(
                matches!(
                    err,
                    SourceError::TooLarge {
                        what: "the download",
                        ..
                    }
                ),
                "{path}: {err}"
            );
        }

        let err =
            fetch_source(&spec(&base, "/many.tar.gz"), None, &small, work.path()).unwrap_err();
        assert!(
            matches!(err, SourceError::TooManyFiles { limit: 10 }),
            "{err}"
        );

        let err =
            fetch_source(&spec(&base, "/bomb.tar.gz"), None, &small, work.path()).unwrap_err();
        assert!(
            matches!(
                err,
                SourceError::TooLarge {
                    what: "the unpacked files",
                    ..
                }
            ),
            "{err}"
        );

        let err = fetch_source(&spec(&base, "/html"), None, &small, work.path()).unwrap_err();
        assert!(matches!(err, SourceError::BadArchive(_)), "{err}");

        let err = fetch_source(
            &SourceSpec::Tarball {
                url: "ftp://example.com/a.tgz".into(),
            },
            None,
            &small,
            work.path(),
        )
        .unwrap_err();
        assert!(matches!(err, SourceError::Unsupported { .. }), "{err}");

        let unreachable = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            format!("http://{}/a.tgz", l.local_addr().unwrap())
        };
        let err = fetch_source(
            &SourceSpec::Tarball { url: unreachable },
            None,
            &small,
            work.path(),
        )
        .unwrap_err();
        assert!(matches!(err, SourceError::Network { .. }), "{err}");
        assert!(!err.is_user_error());
        // TLS through the ring provider: a server that does not speak TLS is a network error.
        let not_tls = base.replace("http://", "https://") + "/html";
        let err = probe_revision(
            &SourceSpec::Tarball { url: not_tls },
            None,
            NetworkPolicy::Open,
        )
        .unwrap_err();
        assert!(matches!(err, SourceError::Network { .. }), "{err}");
        assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
    }

    #[test]
    fn source_tarball_probe_reads_etag() {
        let base = serve(HashMap::from([
            ("/strong", ok(b"x".to_vec())),
            (
                "/weak",
                Reply {
                    etag: Some("W/\"w\""),
                    ..ok(b"x".to_vec())
                },
            ),
            (
                "/none",
                Reply {
                    etag: None,
                    ..ok(b"x".to_vec())
                },
            ),
        ]));
        assert_eq!(
            probe_revision(&spec(&base, "/strong"), None, NetworkPolicy::Open)
                .unwrap()
                .as_deref(),
            Some("\"v1\"")
        );
        assert_eq!(
            probe_revision(&spec(&base, "/weak"), None, NetworkPolicy::Open).unwrap(),
            None
        );
        assert_eq!(
            probe_revision(&spec(&base, "/none"), None, NetworkPolicy::Open).unwrap(),
            None
        );
        let err = probe_revision(&spec(&base, "/gone"), None, NetworkPolicy::Open).unwrap_err();
        assert!(
            matches!(err, SourceError::Http { status: 404, .. }),
            "{err}"
        );
    }
}
