//! The planted corpus: every rule family in at least two file types among ordinary lines that
//! only name a secret, for the tests of both hosts ([`planted_corpus`]).

use super::planted::planted_samples;

/// A file of the planted corpus ([`planted_corpus`]).
pub struct PlantedFile {
    /// Where the file lies in the planted repository; its extension is its file type.
    pub path: &'static str,
    /// The file's text.
    pub text: String,
    /// The secrets planted in it: (rule family, the label it is redacted with, the value).
    pub secrets: Vec<(&'static str, &'static str, String)>,
    /// Its lines that only name a secret (a reference, a count, a field name, a stand-in):
    /// redaction must leave each whole.
    pub ordinary: Vec<&'static str>,
}

/// The files [`planted_samples`] are spread over, each sample in two of them (five file types).
const SAMPLE_FILES: [&str; 5] = [
    "src/clients.py",
    "config/deploy.yaml",
    "src/keys.ts",
    "config/app.env",
    "docs/SETUP.md",
];

/// Builds the corpus a line at a time, each line appended to its file.
#[derive(Default)]
struct CorpusBuilder {
    files: Vec<PlantedFile>,
}

impl CorpusBuilder {
    fn file(&mut self, path: &'static str) -> &mut PlantedFile {
        let at = match self.files.iter().position(|f| f.path == path) {
            Some(at) => at,
            None => {
                self.files.push(PlantedFile {
                    path,
                    text: String::new(),
                    secrets: Vec::new(),
                    ordinary: Vec::new(),
                });
                self.files.len() - 1
            }
        };
        &mut self.files[at]
    }

    /// A line (or lines) with `secret` in place of `{}`.
    fn secret(
        &mut self,
        path: &'static str,
        family: &'static str,
        label: &'static str,
        template: &str,
        secret: &str,
    ) -> &mut Self {
        let f = self.file(path);
        f.text.push_str(&template.replace("{}", secret));
        f.text.push('\n');
        f.secrets.push((family, label, secret.to_string()));
        self
    }

    /// A line that only names a secret and must stay as it is.
    fn ordinary(&mut self, path: &'static str, line: &'static str) -> &mut Self {
        let f = self.file(path);
        f.text.push_str(line);
        f.text.push('\n');
        f.ordinary.push(line);
        self
    }

    /// A line of surrounding code or prose.
    fn plain(&mut self, path: &'static str, line: &str) -> &mut Self {
        let f = self.file(path);
        f.text.push_str(line);
        f.text.push('\n');
        self
    }
}

/// A planted repository for the tests that must let no secret through: every rule family —
/// each provider token rule, PEM keys, bearer tokens, URL passwords (also beginning with `%40`
/// or `$`) and the keyword families (a secret word anywhere in the name, object literals,
/// password hashes, `client_secret`, `passwd`, YAML, TOML/INI, `.env`, shell `export`,
/// Markdown/RST code spans) — each in at least two file types, among ordinary lines that only
/// name a secret (`SECRET_KEY = os.environ["SECRET_KEY"]`, `password = getpass()`,
/// `token_count = 3`) and must reach the prompt intact. Fabricated values; none is a real
/// credential.
pub fn planted_corpus() -> Vec<PlantedFile> {
    let mut c = CorpusBuilder::default();
    // Every provider rule and the planted keyword samples, each in two file types.
    for (i, (label, line, secret)) in planted_samples().into_iter().enumerate() {
        let family = if label == "secret" {
            "assignment"
        } else {
            label
        };
        for path in [SAMPLE_FILES[i % 5], SAMPLE_FILES[(i + 2) % 5]] {
            c.secret(path, family, label, &line.replace(&secret, "{}"), &secret);
        }
    }
    let word = "secret word in the name";
    c.plain("src/settings.py", "import os")
        .plain("src/settings.py", "from getpass import getpass")
        .ordinary("src/settings.py", "SECRET_KEY = os.environ[\"SECRET_KEY\"]")
        .ordinary("src/settings.py", "password = getpass()")
        .ordinary("src/settings.py", "token_count = 3")
        .ordinary("src/settings.py", "max_tokens = 4096")
        .ordinary(
            "src/settings.py",
            "DB_PASSWORD = os.environ.get(\"DB_PASSWORD\", \"\")",
        )
        .ordinary("src/settings.py", "PASSWORD_FIELD = \"user_password\"")
        .ordinary("src/settings.py", "secret_key = settings.SECRET_KEY")
        .secret(
            "src/settings.py",
            word,
            "secret",
            "SECRET_KEY = \"{}\"",
            "k7Rm2Vx9Qp4Lz8Wn3Tb6",
        )
        .secret(
            "src/settings.py",
            word,
            "secret",
            "DB_PASSWORD_PROD = \"{}\"",
            "Pw4nX8kQ2mV7rL3tZ9bH",
        )
        .secret(
            "config/app.env",
            word,
            "secret",
            "DB_PASSWORD_PROD={}",
            "Gt5hY2wE8rU3iO7pA1sD",
        )
        .secret(
            "src/server.go",
            word,
            "secret",
            "var mailerSecretKey = \"{}\"",
            "Jm3kL9pQ2wX7vB4nZ8cR",
        );
    let literal = "object literal";
    c.plain("src/keys.ts", "export const billing = {")
        .secret(
            "src/keys.ts",
            literal,
            "secret",
            "  secretKey: \"{}\",",
            "Rt6yU1iO9pL3kJ7hG2fD",
        )
        .secret(
            "src/keys.ts",
            "password hash",
            "secret",
            "  passwordHash: \"{}\",",
            "$2b$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW",
        )
        .ordinary("src/keys.ts", "  apiKey: process.env.OPENAI_API_KEY,")
        .ordinary("src/keys.ts", "  credentials: \"include\",")
        .plain("src/keys.ts", "};")
        .ordinary("src/keys.ts", "const apiKey = process.env.API_KEY;")
        .ordinary("src/keys.ts", "const auth = `Bearer ${token}`;")
        .plain("src/keys.ts", "interface Options {")
        .ordinary("src/keys.ts", "  apiKey?: string;")
        .plain("src/keys.ts", "}");
    c.secret(
        "src/client.js",
        literal,
        "secret",
        "const config = { authToken: \"{}\", retries: 3 };",
        "Nb8vC4xZ1mQ6wE3rT9yU",
    )
    .secret(
        "src/client.js",
        "bearer token",
        "bearer_token",
        "const headers = { Authorization: \"Bearer {}\" };",
        "Dw5eR1tY8uI3oP6aS2dF9gH4",
    )
    .ordinary("src/client.js", "const token = lexer.next();")
    .ordinary("src/client.js", "const TOKEN_KEY = \"accessToken\";");
    c.plain("config/creds.json", "{")
        .secret(
            "config/creds.json",
            literal,
            "secret",
            "  \"apiSecret\": \"{}\",",
            "Hy7uJ2kI9oL4pM8nB3vC",
        )
        .secret(
            "config/creds.json",
            "client_secret",
            "secret",
            "  \"client_secret\": \"{}\",",
            "Mn5bV1cX8zQ4wE7rT2yU",
        )
        .plain("config/creds.json", "  \"client_id\": \"billing-app\"")
        .plain("config/creds.json", "}");
    c.plain("config/users.yaml", "users:")
        .plain("config/users.yaml", "  - name: billing-admin")
        .secret(
            "config/users.yaml",
            "password hash",
            "secret",
            "    passwordHash: \"{}\"",
            "$2b$10$Xk4vQ9mP2wL7rT3zN8bH6eYc1uJ5gF0aS8dK2lM4nB7vC9xZ3qW1e",
        );
    c.secret(
        "src/oauth.py",
        "client_secret",
        "secret",
        "creds = {\"client_secret\": \"{}\", \"client_id\": \"billing-app\"}",
        "Qz4xW8eR2tY6uI1oP5aS",
    )
    .secret(
        "src/oauth.py",
        "passwd",
        "secret",
        "conn = connect(host=DB_HOST, user=\"billing\", passwd=\"{}\")",
        "Df6gH1jK8lZ3xC5vB9nM",
    )
    .ordinary("src/oauth.py", "password = getpass.getpass(\"Password: \")")
    .ordinary("src/oauth.py", "token = tokens[i]")
    .ordinary("src/oauth.py", "private_key_path = \"/etc/ssl/key.pem\"");
    c.plain("config/oauth.yaml", "oauth:")
        .plain("config/oauth.yaml", "  client_id: billing-app")
        .secret(
            "config/oauth.yaml",
            "client_secret",
            "secret",
            "  client_secret: {}",
            "Lk9jH3gF7dS2aP6oI1uY",
        );
    c.plain("config/db.ini", "[client]")
        .secret(
            "config/db.ini",
            "passwd",
            "secret",
            "passwd = {}",
            "Wq3eR8tY1uI6oP9aS4dF",
        )
        .secret(
            "config/db.ini",
            "toml or ini",
            "secret",
            "password = {}",
            "Mj6nH1bG8vF3cD7xS2zA",
        )
        .ordinary("config/db.ini", "password_file = /run/secrets/db_password");
    c.plain("config/app.toml", "[database]")
        .secret(
            "config/app.toml",
            "toml or ini",
            "secret",
            "password = \"{}\"",
            "Ki8jU3hY7gT2fR6eD1sW",
        )
        .secret(
            "config/app.toml",
            "toml or ini",
            "secret",
            "api_token = \"{}\"",
            "Lo2kI7jU4hY9gT1fR5eD",
        )
        .ordinary("config/app.toml", "password_min_length = 12")
        .ordinary("config/app.toml", "token_encoding = \"base64url\"");
    c.plain("config/deploy.yaml", "database:")
        .secret(
            "config/deploy.yaml",
            "yaml mapping",
            "secret",
            "  password: {}",
            "Po9iU4yT2rE7wQ1aS5dF",
        )
        .ordinary("config/deploy.yaml", "  password: ${DB_PASSWORD}")
        .ordinary("config/deploy.yaml", "  token: ${{ secrets.GITHUB_TOKEN }}")
        .ordinary("config/deploy.yaml", "secrets: inherit")
        .secret(
            "config/deploy.yaml",
            "url password from %40",
            "url_password",
            "  queue: amqp://billing:{}@mq.internal/",
            "%40Hm4nB8vC2xZ7qW1eR5",
        )
        .secret(
            "config/deploy.yaml",
            "url password from $",
            "url_password",
            "  cache: redis://default:{}@cache.internal:6379/0",
            "$Vn6mB1cX4zA9sD3fG7",
        );
    c.plain("deploy/docker-compose.yml", "services:")
        .plain("deploy/docker-compose.yml", "  billing:")
        .plain("deploy/docker-compose.yml", "    environment:")
        .secret(
            "deploy/docker-compose.yml",
            "dotenv",
            "secret",
            "      - DB_PASS={}",
            "Vf4rE8dC2xS7wQ1aZ6sX",
        )
        .ordinary(
            "deploy/docker-compose.yml",
            "      - POSTGRES_PASSWORD=${POSTGRES_PASSWORD}",
        );
    c.secret(
        "config/app.env",
        "dotenv",
        "secret",
        "STRIPE_WEBHOOK_SECRET={}",
        "Yh5tG9rF2eD7wS1qA6zX",
    )
    .secret(
        "config/app.env",
        "url password from $",
        "url_password",
        "MQ_URL=amqp://svc:{}@mq.internal:5672/",
        "$Zt8yU3iO6pA1sD4fG9",
    )
    .ordinary("config/app.env", "DB_PASSWORD=$POSTGRES_PASSWORD")
    .ordinary("config/app.env", "PRIVATE_KEY_PATH=/etc/ssl/key.pem")
    .ordinary("config/app.env", "TOKEN_TTL=3600");
    c.secret(
        "src/settings.py",
        "url password from %40",
        "url_password",
        "DATABASE_URL = \"postgres://billing:{}@db.internal:5432/prod\"",
        "%40Rw9tY3uI7oP2aS6dF1",
    );
    c.plain("deploy/release.sh", "#!/bin/sh")
        .plain("deploy/release.sh", "set -eu")
        .secret(
            "deploy/release.sh",
            "shell export",
            "secret",
            "export TOKEN={}",
            "Bg7yH2nU9jM4kI1oL6pQ",
        )
        .secret(
            "deploy/release.sh",
            "passwd",
            "secret",
            "MYSQL_PASSWD='{}'",
            "Zx2cV7bN4mQ9wE1rT6yU",
        )
        .ordinary(
            "deploy/release.sh",
            "export API_TOKEN=\"$(vault read -field=token secret/ci)\"",
        )
        .secret(
            "deploy/release.sh",
            "bearer token",
            "bearer_token",
            "curl -H \"Authorization: Bearer {}\" https://api.billing.internal/v1/charges",
            "Kx8vQ2mL7pR4tZ9wN3bY6hJ1",
        );
    c.plain("docs/SETUP.md", "## Credentials")
        .ordinary(
            "docs/SETUP.md",
            "The `API_KEY` variable: set it in your shell.",
        )
        .ordinary(
            "docs/SETUP.md",
            "DATABASE_URL=postgres://user:${DB_PASSWORD}@localhost/db",
        )
        .secret(
            "docs/SETUP.md",
            "markdown code span",
            "secret",
            "Set `aws_secret_access_key = {}` in `~/.aws/credentials`.",
            "Tr8eW3qA6sD1fG9hJ4kL",
        )
        .plain("docs/SETUP.md", "```sh")
        .secret(
            "docs/SETUP.md",
            "shell export",
            "secret",
            "export DEPLOY_TOKEN={}",
            "Cx3vB8nM1qW6eR4tY9uI",
        )
        .plain("docs/SETUP.md", "```")
        .plain("docs/SETUP.md", "```yaml")
        .plain("docs/SETUP.md", "database:")
        .secret(
            "docs/SETUP.md",
            "yaml mapping",
            "secret",
            "  password: {}",
            "Aq1sW6dE3fR8gT2hY7jU",
        );
    c.plain("docs/SETUP.md", "```");
    c.plain("docs/ops.rst", "Operations")
        .plain("docs/ops.rst", "==========")
        .ordinary(
            "docs/ops.rst",
            "The ``SECRET_KEY`` setting is read from the environment.",
        )
        .secret(
            "docs/ops.rst",
            "markdown code span",
            "secret",
            "Set ``aws_secret_access_key = {}`` on the backup host.",
            "Ua5sD2fG7hJ1kL8zX3cV",
        )
        .secret(
            "docs/ops.rst",
            word,
            "secret",
            "``SECRET_KEY = \"{}\"``",
            "Ew2qA7sZ4xD9cF1vG6bH",
        );
    c.plain("src/server.go", "package main")
        .ordinary("src/server.go", "token := os.Getenv(\"GITHUB_TOKEN\")")
        .plain("src/server.go", "type Login struct {")
        .ordinary("src/server.go", "\tPassword string `json:\"password\"`")
        .plain("src/server.go", "}");
    c.secret(
        "src/tls.py",
        "private_key",
        "private_key",
        "SERVER_KEY = \"\"\"{}\"\"\"",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq2Wd7Lm9Px4Rt8Vz3Kb6Nc1Hg5Jf0Ds8Ye2Uq7Tr4Wx1Sm6Z\np3Gk9Lx2Vb5Qn8Hm1Rw4Ty7Jc0Ud6Fs3Ae9Zi2Ko5Pl8Mx1Nv4Bq7Cw0Er3Dt6Y\n-----END RSA PRIVATE KEY-----",
    )
    .ordinary("src/tls.py", "KEY_FILE = \"/etc/ssl/private/server.key\"");
    c.files
}

/// Lines that only name a secret, from every file of [`planted_corpus`].
pub fn planted_ordinary_lines() -> Vec<&'static str> {
    planted_corpus()
        .into_iter()
        .flat_map(|f| f.ordinary)
        .collect()
}
