//! moto's server from `target/aws-venv` (installed by `scripts/aws-tools-setup.sh`), started on
//! a free loopback port and killed when dropped.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// A running moto server.
pub struct Moto {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
}

/// The workspace root (these helpers are shared by the indexer's tests and the root's).
pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|d| d.join("scripts/moto_server.py").is_file())
        .expect("the workspace root holds scripts/moto_server.py")
        .to_path_buf()
}

impl Moto {
    /// Starts moto, or returns `None` (after saying why) when its venv is missing and
    /// `CTXGATE_REQUIRE_AWS` is not set; the test command sets it, so CI never skips.
    pub fn start() -> Option<Self> {
        let python = workspace().join("target/aws-venv/bin/python");
        if !python.exists() {
            assert!(
                std::env::var_os("CTXGATE_REQUIRE_AWS").is_none(),
                "CTXGATE_REQUIRE_AWS is set but {} is missing: run scripts/aws-tools-setup.sh",
                python.display()
            );
            eprintln!("skipped: moto is not installed (bash scripts/aws-tools-setup.sh)");
            return None;
        }
        let mut child = Command::new(python)
            .arg(workspace().join("scripts/moto_server.py"))
            .args(["--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start moto");
        let stdout = child.stdout.take().expect("moto's stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("moto prints its port");
        let port: u16 = line
            .trim()
            .strip_prefix("PORT=")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("unexpected first line from moto: {line:?}"));
        Some(Self {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
        })
    }

    /// The variables that point an AWS SDK (ours, in this process or a child) at this server.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        sdk_env(&self.endpoint)
    }

    /// Sets [`Moto::env`] in this process (tests that use the store directly).
    pub fn export(&self) {
        for (k, v) in self.env() {
            // SAFETY: set once per test process, before any thread reads the environment.
            unsafe { std::env::set_var(k, v) };
        }
    }
}

/// The variables that point an AWS SDK at `endpoint` with moto's test credentials.
pub fn sdk_env(endpoint: &str) -> Vec<(&'static str, String)> {
    vec![
        ("AWS_ENDPOINT_URL", endpoint.to_string()),
        ("AWS_ACCESS_KEY_ID", "testing".into()),
        ("AWS_SECRET_ACCESS_KEY", "testing".into()),
        ("AWS_REGION", "us-east-1".into()),
        ("AWS_EC2_METADATA_DISABLED", "true".into()),
    ]
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
