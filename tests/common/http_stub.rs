//! Stand-in HTTP servers the integration tests of every package share (the indexer's Lambda
//! tests include this file by path): a keep-alive JSON server, and one that speaks the OpenAI
//! embeddings wire format.

#![allow(dead_code)]

/// One HTTP/1.1 request as the stand-in servers see it.
pub struct Request {
    /// The path.
    pub path: String,
    /// The bearer token, if any.
    pub token: String,
    /// The body.
    pub body: Vec<u8>,
}

/// A keep-alive HTTP/1.1 server on loopback answering each request with `answer`'s status line
/// and JSON. Returns its address.
pub fn json_server(
    answer: impl Fn(Request) -> (&'static str, serde_json::Value) + Send + Sync + 'static,
) -> std::net::SocketAddr {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let answer = std::sync::Arc::new(answer);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let answer = answer.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut out = stream;
                loop {
                    let (mut len, mut token, mut path) = (0usize, String::new(), String::new());
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if path.is_empty() {
                            path = line.split_whitespace().nth(1).unwrap_or("").to_string();
                        }
                        let lower = line.to_ascii_lowercase();
                        if let Some(v) = lower.strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                        if lower.starts_with("authorization:") {
                            let value = line["authorization:".len()..].trim();
                            token = value.strip_prefix("Bearer ").unwrap_or("").to_string();
                        }
                    }
                    let mut body = vec![0; len];
                    reader.read_exact(&mut body).unwrap();
                    let (status, json) = answer(Request { path, token, body });
                    let json = json.to_string();
                    let reply = format!(
                        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{json}",
                        json.len()
                    );
                    if out.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// What [`embeddings_server`] received: the bearer token and the JSON body of each request.
pub type EmbeddingRequests = std::sync::Arc<std::sync::Mutex<Vec<(String, serde_json::Value)>>>;

/// A local server that speaks the OpenAI embeddings API (`POST /v1/embeddings`): requests need
/// `Authorization: Bearer test-key` (otherwise 401 with OpenAI's error shape); each input's
/// vector is its words hashed into `dims` buckets, so texts sharing words lie near each other;
/// the `data` entries come back in reverse order, as the API allows (clients place them by
/// `index`). Returns the base URL and the requests it received.
pub fn embeddings_server(dims: usize) -> (String, EmbeddingRequests) {
    let seen: EmbeddingRequests = Default::default();
    let log = seen.clone();
    let addr = json_server(move |r| {
        let req: serde_json::Value =
            serde_json::from_slice(&r.body).unwrap_or(serde_json::Value::Null);
        log.lock().unwrap().push((r.token.clone(), req.clone()));
        if r.path != "/v1/embeddings" {
            return (
                "404 Not Found",
                serde_json::json!({"error": {"message": "no such route"}}),
            );
        }
        if r.token != "test-key" {
            return (
                "401 Unauthorized",
                serde_json::json!({"error": {"message": "Incorrect API key provided",
                    "type": "invalid_request_error", "code": "invalid_api_key"}}),
            );
        }
        let inputs: Vec<&str> = req["input"]
            .as_array()
            .map(|a| a.iter().map(|v| v.as_str().unwrap_or("")).collect())
            .unwrap_or_default();
        let mut data: Vec<serde_json::Value> = inputs
            .iter()
            .enumerate()
            .map(|(i, text)| {
                serde_json::json!({"object": "embedding", "index": i,
                    "embedding": hashed_words(text, dims)})
            })
            .collect();
        data.reverse();
        (
            "200 OK",
            serde_json::json!({"object": "list", "data": data, "model": req["model"],
                "usage": {"prompt_tokens": 0, "total_tokens": 0}}),
        )
    });
    (format!("http://{addr}/v1"), seen)
}

/// A text's lowercase words hashed into `dims` counts.
pub fn hashed_words(text: &str, dims: usize) -> Vec<f32> {
    let mut v = vec![0.0f32; dims];
    for w in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 2)
    {
        let h = w
            .to_lowercase()
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
            });
        v[(h % dims as u64) as usize] += 1.0;
    }
    v
}
