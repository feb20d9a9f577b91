//! One planted secret per rule, for the tests of every crate that must never let one through.

/// One planted secret per rule, for tests here and in the indexer and CLI suites: (label, a
/// line of text holding the secret, the secret itself). Fabricated values of each provider's
/// shape; none is a real credential.
pub fn planted_samples() -> Vec<(&'static str, String, String)> {
    let s = |label: &'static str, line: &str, secret: &str| {
        (label, line.replace("{}", secret), secret.to_string())
    };
    vec![
        s("aws_access_key", "aws_key_id = {}", "AKIAZ7QX3M2KPLW9RT4B"),
        s(
            "github_token",
            "GH={}",
            "ghp_Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0As8Eu2",
        ),
        s("gitlab_token", "gitlab: {}", "glpat-X9mK2pQ7vL4wR8tZ3nB6"),
        s(
            "google_api_key",
            "const MAPS = \"{}\";",
            "AIzaSyD4kQ9mXz2Lp7Vw3Rt8Yn6Bc1Hf5Jg0As2",
        ),
        s(
            "stripe_key",
            "stripe.api_key = {}",
            "sk_live_51Hq8ZxKp2Lm7Vw3Rt9Yn4Bc6",
        ),
        s(
            "anthropic_key",
            "ANTHROPIC={}",
            "sk-ant-api03-Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0As8Eu2Wq7Zr4Tx1",
        ),
        s(
            "openai_key",
            "client = OpenAI(key={})",
            "sk-proj-Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0",
        ),
        s(
            "slack_token",
            "SLACK={}",
            "xoxb-2048193847-7749201938475-Kp3Nc6Bd1Hf5",
        ),
        s(
            "npm_token",
            "//registry.npmjs.org/:_authToken={}",
            "npm_Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0As8Eu2",
        ),
        s(
            "pypi_token",
            "TWINE={}",
            "pypi-AgEIcHlwaS5vcmcCJDQ4ZjJhYjU5LTk3MzktNDk5Yi1hNWY3LWE4ZTU2ZDM4MjQxYQ",
        ),
        s(
            "sendgrid_key",
            "sg = {}",
            "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",
        ),
        s(
            "mailgun_key",
            "MAILGUN={}",
            "key-8f3a9c2e7b1d4f6a0c5e9b2d7f1a3c8e",
        ),
        s(
            "mailchimp_key",
            "MAILCHIMP={}",
            "8f3a9c2e7b1d4f6a0c5e9b2d7f1a3c8e-us14",
        ),
        s(
            "twilio_key",
            "TWILIO={}",
            "SK8f3a9c2e7b1d4f6a0c5e9b2d7f1a3c8e",
        ),
        s(
            "huggingface_token",
            "HF={}",
            "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",
        ),
        s(
            "digitalocean_token",
            "DO={}",
            "dop_v1_8f3a9c2e7b1d4f6a0c5e9b2d7f1a3c8e8f3a9c2e7b1d4f6a0c5e9b2d7f1a3c8e",
        ),
        s(
            "docker_token",
            "DOCKER={}",
            "dckr_pat_Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5",
        ),
        s(
            "shopify_token",
            "SHOPIFY={}",
            "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",
        ),
        s(
            "square_token",
            "SQUARE={}",
            "sq0atp-Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1",
        ),
        s(
            "linear_key",
            "LINEAR={}",
            "lin_api_Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0As8Eu2Wq7Z",
        ),
        s(
            "postman_key",
            "POSTMAN={}",
            "PMAK-8f3a9c2e7b1d4f6a0c5e9b2d-7f1a3c8e8f3a9c2e7b1d4f6a0c5e9b2d7f",
        ),
        s(
            "doppler_token",
            "DOPPLER={}",
            "dp.pt.Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0As8Eu2Wq7Zr4Tx",
        ),
        s(
            "vault_token",
            "VAULT_TOKEN_VALUE={}",
            "hvs.Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0As8",
        ),
        s(
            "databricks_token",
            "DATABRICKS={}",
            "dapi8f3a9c2e7b1d4f6a0c5e9b2d7f1a3c8e",
        ),
        s(
            "sentry_token",
            "SENTRY={}",
            "sntrys_eyJpYXQiOjE3MDAwMDAwMDAsInVybCI6Imh0dHBz",
        ),
        s(
            "age_secret_key",
            "{}",
            "AGE-SECRET-KEY-1QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7LQPZRY9X8GF2TVDW0S3JN54KHCE6MU",
        ),
        s(
            "telegram_token",
            "BOT={}",
            "7281940365:AAQ8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0As8",
        ),
        s(
            "discord_webhook",
            "hook = \"{}\"",
            "https://discord.com/api/webhooks/1093847562019384756/Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0",
        ),
        s(
            "firebase_key",
            "FCM={}",
            "AAAAQ8vLm2X:APA91bQ8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0As8Eu2Wq7Zr4Tx1Mv6Ny3Lb9Kc2Pd5Ge8HjQ8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0As8Eu2Wq7Zr4Tx1Mv6Ny3Lb9Kc2Pd5Ge8Hj",
        ),
        s(
            "azure_storage_key",
            "DefaultEndpointsProtocol=https;AccountName=acme;{};EndpointSuffix=core.windows.net",
            "AccountKey=Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1Hf5Jg0As8Eu2Wq7Zr4Tx1Mv6Ny3Lb9Kc2Pd5Ge8HjQ8vLm2Xw7Rt4Yz9Kp3Nc6==",
        ),
        s(
            "jwt",
            "auth: {}",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTQ4MjEiLCJyb2xlIjoiYWRtaW4ifQ.Q8vLm2Xw7Rt4Yz9Kp3Nc6Bd1",
        ),
        s(
            "url_password",
            "DATABASE_URL=postgres://app:{}@db.internal:5432/prod",
            "Tr4mp0l1ne-Wh1sk3y-88",
        ),
        s(
            "private_key",
            "{\"type\": \"service_account\", \"private_key\": \"{}\"}",
            "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\\n-----END PRIVATE KEY-----\\n",
        ),
        s(
            "secret",
            "const API_KEY = \"{}\";",
            "Zx81kQ2mPq7Lw0Rt5Yv3Hn",
        ),
        s(
            "secret",
            "DB_PASSWORD_PROD = \"{}\"",
            "Zq7vLm2Xw7Rt4Yz9Kp3N",
        ),
        s("secret", "  secretKey: \"{}\",", "Vb7nQ2xLp9Wm4Kt8Rz3J"),
        s(
            "secret",
            "export AWS_SECRET_ACCESS_KEY={}",
            "Hf5Jg0As8Eu2/Wq7Zr4Tx1Mv6Ny3+Lb9Kc2Pd5Ge8",
        ),
        s(
            "url_password",
            "REDIS_URL=redis://default:{}@cache.internal:6379/0",
            "%40Nc6Bd1Hf5Jg0As8Eu2",
        ),
    ]
}

/// A distinctive part of a planted secret: the last 10 characters of its longest alphanumeric
/// run — what a leak, even a partial one, would show.
pub fn planted_fragment(secret: &str) -> &str {
    let run = secret
        .split(|c: char| !c.is_ascii_alphanumeric())
        .max_by_key(|r| r.len())
        .unwrap_or(secret);
    &run[run.len().saturating_sub(10)..]
}
