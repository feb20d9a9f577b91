//! `POST /v1/projects` from git and tarball URLs on `ctxgate serve`: by default only public
//! https hosts are fetched (private, loopback and link-local addresses and plain http are
//! refused before any connection), and with `--allow-private-sources` a tarball from a loopback
//! server and a git repository are fetched, indexed and answer `/v1/context` (the repository
//! with its history: its pieces report the `history` signal).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use super::cases::sample_repo;
use super::host::{Host, NativeHost, get, org_with_key, post};

/// Serves `routes` (path → body) over HTTP/1.1 on loopback, one request per connection, for the
/// life of the test process; other paths answer 404. Returns the base URL.
pub fn serve(routes: Vec<(&'static str, Vec<u8>)>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            loop {
                let mut header = String::new();
                match reader.read_line(&mut header) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if header == "\r\n" => break,
                    Ok(_) => {}
                }
            }
            let path = request_line.split_whitespace().nth(1).unwrap_or("");
            let head_only = request_line.starts_with("HEAD");
            let (status, body) = match routes.iter().find(|(p, _)| *p == path) {
                Some((_, body)) => ("200 OK", body.clone()),
                None => ("404 Not Found", b"no such file".to_vec()),
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            if !head_only {
                let _ = stream.write_all(&body);
            }
        }
    });
    base
}

/// `dir` as a gzip-compressed tarball with a top folder, as forges serve archives.
pub fn tarball(dir: &Path) -> Vec<u8> {
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("repo.tar.gz");
    let status = Command::new("tar")
        .arg("czf")
        .arg(&file)
        .arg("-C")
        .arg(dir.parent().unwrap())
        .arg(dir.file_name().unwrap())
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::read(file).unwrap()
}

/// A git repository holding a copy of `dir`, added by a second commit whose message is worded
/// like the test's request (the first is empty): every line's writer is that commit.
fn git_repo(dir: &Path) -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), repo.path().join(entry.file_name())).unwrap();
        }
    }
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args([
                "-c",
                "init.defaultBranch=main",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(repo.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q"]);
    git(&["commit", "-q", "--allow-empty", "-m", "Start"]);
    git(&["add", "-A"]);
    git(&[
        "commit",
        "-q",
        "-m",
        "Count the token budget for each model",
    ]);
    repo
}

fn create(host: &dyn Host, key: &str, name: &str, source: Value) -> super::host::Reply {
    post(
        host,
        "/v1/projects",
        Some(key),
        &json!({ "name": name, "source": source }),
    )
}

pub fn run() {
    let archive = tarball(sample_repo());
    let base = serve(vec![
        ("/repo.tar.gz", archive),
        ("/junk.tar.gz", b"this is not an archive".to_vec()),
    ]);
    let git = git_repo(sample_repo());
    let git_url = format!("file://{}", git.path().display());

    // The default server: public https only, checked before connecting.
    let public = NativeHost::start();
    let key = org_with_key(&public, "pub", json!({}));
    for (source, code) in [
        (
            json!({"kind": "tarball", "url": format!("{base}/repo.tar.gz")}),
            "source_not_allowed",
        ),
        (
            json!({"kind": "tarball", "url": "https://127.0.0.1:9/repo.tar.gz"}),
            "source_not_allowed",
        ),
        (
            json!({"kind": "tarball", "url": "https://169.254.169.254/latest/meta-data"}),
            "source_not_allowed",
        ),
        (
            json!({"kind": "git", "url": "https://localhost/repo.git"}),
            "source_not_allowed",
        ),
        (
            json!({"kind": "git", "url": "https://[::1]/repo.git"}),
            "source_not_allowed",
        ),
        (json!({"kind": "git", "url": git_url}), "source_refused"),
    ] {
        let r = create(&public, &key, "x", source.clone());
        assert_eq!((r.status, r.code()), (403, code), "{source}: {}", r.body);
        let message = r.body["error"]["message"].as_str().unwrap();
        assert!(!message.is_empty(), "{source}");
    }
    let listed = get(&public, "/v1/projects", Some(&key));
    assert_eq!(listed.body["projects"], json!([]), "nothing was registered");

    let folder = sample_repo().display().to_string();
    let r = create(&public, &key, "x", json!({"kind": "local", "path": folder}));
    assert_eq!((r.status, r.code()), (403, "source_refused"), "{}", r.body);

    local_roots(&git_url);

    // Local paths alone: folders and file:// git are read, private network hosts still refused.
    let git_root = git.path().display().to_string();
    let local = NativeHost::start_with(&["--local-root", &folder, "--local-root", &git_root]);
    let key = org_with_key(&local, "loc", json!({}));
    for (name, source) in [
        ("folder", json!({"kind": "local", "path": folder})),
        ("repo", json!({"kind": "git", "url": git_url})),
    ] {
        let r = create(&local, &key, name, source);
        assert_eq!(r.status, 201, "{name}: {}", r.body);
        assert!(r.body["current_version"].as_u64().is_some(), "{}", r.body);
    }
    let r = create(
        &local,
        &key,
        "lan",
        json!({"kind": "tarball", "url": format!("{base}/repo.tar.gz")}),
    );
    assert_eq!(
        (r.status, r.code()),
        (403, "source_not_allowed"),
        "{}",
        r.body
    );

    // A server on a trusted network: private hosts and local git repositories.
    let open = NativeHost::start_with(&["--allow-private-sources", "--local-root", &git_root]);
    let key = org_with_key(&open, "own", json!({}));
    let r = create(
        &open,
        &key,
        "from-tarball",
        json!({"kind": "tarball", "url": format!("{base}/repo.tar.gz")}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["source"], format!("{base}/repo.tar.gz"));
    assert!(r.body["current_version"].as_u64().is_some(), "{}", r.body);
    let r = create(
        &open,
        &key,
        "from-git",
        json!({"kind": "git", "url": git_url, "rev": "main"}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["source"], format!("{git_url}#main"));
    for project in ["from-tarball", "from-git"] {
        let r = post(
            &open,
            "/v1/context",
            Some(&key),
            &json!({"project": project, "query": "token budget for a model", "budget": 4000}),
        );
        assert_eq!(r.status, 200, "{project}: {}", r.body);
        let pieces = r.body["pieces"].as_array().unwrap();
        assert!(!pieces.is_empty(), "{project}: no pieces");
        assert!(
            pieces
                .iter()
                .all(|p| sample_repo().join(p["path"].as_str().unwrap()).is_file()),
            "{project}: pieces come from the fetched files: {}",
            r.body
        );
        // The git source is fetched with its history: each piece's lines were written by the
        // commit worded like the request. A tarball has no history.
        let history: Vec<f64> = pieces
            .iter()
            .map(|p| p["reasoning"]["history"].as_f64().unwrap())
            .collect();
        if project == "from-git" {
            assert!(history.iter().all(|&h| h > 0.0), "{}", r.body);
        } else {
            assert!(history.iter().all(|&h| h == 0.0), "{}", r.body);
        }
    }

    // Wrong sources are the caller's fault (400), a dead remote is the gateway's (502), and a
    // name is taken once.
    let r = create(
        &open,
        &key,
        "junk",
        json!({"kind": "tarball", "url": format!("{base}/junk.tar.gz")}),
    );
    assert_eq!(
        (r.status, r.code()),
        (400, "source_bad_archive"),
        "{}",
        r.body
    );
    let r = create(
        &open,
        &key,
        "missing",
        json!({"kind": "tarball", "url": format!("{base}/gone.tar.gz")}),
    );
    assert_eq!(
        (r.status, r.code()),
        (400, "source_http_error"),
        "{}",
        r.body
    );
    let r = create(
        &open,
        &key,
        "branch",
        json!({"kind": "git", "url": git_url, "rev": "no-such-branch"}),
    );
    assert_eq!(
        (r.status, r.code()),
        (400, "source_rev_not_found"),
        "{}",
        r.body
    );
    let dead = TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}/repo.tar.gz", dead.local_addr().unwrap());
    drop(dead);
    let r = create(
        &open,
        &key,
        "dead",
        json!({"kind": "tarball", "url": dead_url}),
    );
    assert_eq!(
        (r.status, r.code()),
        (502, "source_unreachable"),
        "{}",
        r.body
    );
    let r = create(
        &open,
        &key,
        "from-tarball",
        json!({"kind": "tarball", "url": format!("{base}/repo.tar.gz")}),
    );
    assert_eq!((r.status, r.code()), (409, "conflict"), "{}", r.body);
    let names: Vec<String> = get(&open, "/v1/projects", Some(&key)).body["projects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names.len(),
        2,
        "only the two good sources were registered: {names:?}"
    );
}

/// `--local-root`: a folder or `file://` repository outside every root is refused with one
/// answer (403 `source_not_allowed`, the same message) whether or not it exists, named directly,
/// through `..` or through a link that leaves the root; inside a root, folders (also through a
/// link that stays inside) and repositories are indexed and re-indexed, and a missing one is
/// `repo_not_found`; a path that cannot name a file is 400 `source_bad_path`; and the removed
/// `--allow-local-paths` refuses to start, naming `--local-root`.
fn local_roots(git_url: &str) {
    let space = tempfile::tempdir().unwrap();
    let base = space.path().canonicalize().unwrap();
    let root = base.join("root");
    std::fs::create_dir_all(root.join("app")).unwrap();
    for entry in std::fs::read_dir(sample_repo()).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), root.join("app").join(entry.file_name())).unwrap();
        }
    }
    std::fs::create_dir_all(base.join("outside/secret")).unwrap();
    std::fs::write(base.join("outside/secret/lib.rs"), "pub fn hidden() {}\n").unwrap();
    std::os::unix::fs::symlink(root.join("app"), root.join("alias")).unwrap();
    std::os::unix::fs::symlink(base.join("outside"), root.join("escape")).unwrap();
    let root_arg = root.display().to_string();
    let host = NativeHost::start_with(&["--local-root", &root_arg]);
    let key = org_with_key(&host, "roots", json!({}));
    let (b, r) = (base.display(), root.display());

    // Outside, existing or not, four ways: one code, one message (which repeats only the
    // caller's own source).
    let mut why = None;
    let refused = [
        json!({"kind": "local", "path": format!("{b}/outside/secret")}),
        json!({"kind": "local", "path": format!("{b}/outside/none")}),
        json!({"kind": "local", "path": "/etc"}),
        json!({"kind": "local", "path": "/no/such/folder"}),
        json!({"kind": "local", "path": format!("{r}/../outside/secret")}),
        json!({"kind": "local", "path": format!("{r}/../outside/none")}),
        json!({"kind": "local", "path": format!("{r}/escape/secret")}),
        json!({"kind": "local", "path": format!("{r}/escape/none")}),
        json!({"kind": "local", "path": format!("{r}/escape")}),
        json!({"kind": "local", "path": "root/app"}),
        json!({"kind": "git", "url": git_url}),
        json!({"kind": "git", "url": format!("file://{b}/outside/none")}),
        json!({"kind": "git", "url": format!("file://{r}/escape/secret")}),
    ];
    for source in refused {
        let res = create(&host, &key, "out", source.clone());
        assert_eq!(
            (res.status, res.code()),
            (403, "source_not_allowed"),
            "{source}: {}",
            res.body
        );
        let given = source["path"].as_str().or(source["url"].as_str()).unwrap();
        let message = res.body["error"]["message"].as_str().unwrap();
        let rest = message
            .strip_prefix(&format!("{given}: "))
            .unwrap_or_else(|| panic!("{source}: {message}"));
        assert_eq!(why.get_or_insert_with(|| rest.to_owned()), rest, "{source}");
        assert_eq!(res.body["error"]["details"], Value::Null, "{source}");
    }
    let why = why.unwrap();
    assert!(why.contains("--local-root"), "{why}");
    assert!(!why.contains("exist"), "{why}");

    // Paths that cannot name a file: 400 before any other check, inside or outside.
    for path in [
        format!("{r}/app\u{0}x"),
        format!("{b}/outside/\u{0}"),
        format!("{r}/{}", "a".repeat(5000)),
        format!("{r}/{}", "n".repeat(300)),
    ] {
        let source = json!({"kind": "local", "path": path});
        let res = create(&host, &key, "bad", source);
        assert_eq!(
            (res.status, res.code()),
            (400, "source_bad_path"),
            "{}",
            res.body
        );
        assert!(
            !res.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains('\0')
        );
    }
    let res = create(
        &host,
        &key,
        "bad",
        json!({"kind": "git", "url": format!("file://{r}/app\u{0}")}),
    );
    assert_eq!(
        (res.status, res.code()),
        (400, "source_bad_path"),
        "{}",
        res.body
    );
    // Not UTF-8 (a lone surrogate) never becomes a path: the body is refused.
    let res = super::host::call(
        &host,
        "POST",
        "/v1/projects",
        Some(&key),
        Some(r#"{"name": "bad", "source": {"kind": "local", "path": "/tmp/\udc80"}}"#),
        "application/json",
    );
    assert_eq!(
        (res.status, res.code()),
        (400, "malformed_json"),
        "{}",
        res.body
    );

    // Inside: a missing folder says so; folders, also through a link that stays inside, index.
    let res = create(
        &host,
        &key,
        "gone",
        json!({"kind": "local", "path": format!("{r}/none")}),
    );
    assert_eq!(
        (res.status, res.code()),
        (400, "repo_not_found"),
        "{}",
        res.body
    );
    for (name, given) in [("app", format!("{r}/app")), ("alias", format!("{r}/alias"))] {
        let res = create(&host, &key, name, json!({"kind": "local", "path": given}));
        assert_eq!(res.status, 201, "{name}: {}", res.body);
        assert_eq!(res.body["source"], format!("{r}/app"), "{}", res.body);
    }
    let res = post(&host, "/v1/projects/app/reindex", Some(&key), &json!({}));
    assert_eq!(res.status, 200, "{}", res.body);
    // A git repository inside, through a link that stays inside: fetched by its real path,
    // shown as the caller wrote it.
    let cloned = Command::new("git")
        .args(["clone", "-q", "--bare", git_url])
        .arg(root.join("repo.git"))
        .output()
        .unwrap();
    assert!(cloned.status.success(), "{cloned:?}");
    std::os::unix::fs::symlink(root.join("repo.git"), root.join("repo-link")).unwrap();
    let url = format!("file://{r}/repo-link");
    let res = create(&host, &key, "repo", json!({"kind": "git", "url": url}));
    assert_eq!(res.status, 201, "{}", res.body);
    assert_eq!(res.body["source"], url, "{}", res.body);
    let res = post(&host, "/v1/projects/repo/reindex", Some(&key), &json!({}));
    assert_eq!(res.status, 200, "{}", res.body);
    let listed = get(&host, "/v1/projects", Some(&key));
    assert_eq!(
        listed.body["projects"].as_array().unwrap().len(),
        3,
        "{}",
        listed.body
    );

    // The flag that let any key read any folder refuses to start, and names its replacement.
    let out = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args(["serve", "--addr", "127.0.0.1:0", "--allow-local-paths"])
        .env("CTXGATE_HOME", base.join("home"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("--local-root"), "{said}");
}
