//! A fault-injecting HTTP proxy in front of moto: the AWS store under test talks to it as to
//! AWS (`AWS_ENDPOINT_URL`), and it forwards each request to moto unless a seeded draw, or a
//! rule armed for the next matching request, says to fail it the way the real services fail:
//!
//! - DynamoDB throttling: HTTP 400 with the JSON error DynamoDB sends
//!   (`ProvisionedThroughputExceededException`, `ThrottlingException`);
//! - 5xx: DynamoDB's `InternalServerError` (500), S3's `SlowDown` (503) and `InternalError` (500);
//! - a connection dropped mid-upload: half of an S3 `PUT` body read, then the socket closed;
//! - a lost answer: the request reaches moto and takes effect, the answer never comes back;
//! - a conditional write refused: `TransactionCanceledException` with `ConditionalCheckFailed`.
//!
//! One request per connection (answers carry `Connection: close`), which keeps the relay simple.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A way to fail one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// DynamoDB `ProvisionedThroughputExceededException` (400).
    ProvisionedThroughputExceeded,
    /// DynamoDB `ThrottlingException` (400).
    Throttling,
    /// DynamoDB `InternalServerError` (500), S3 `InternalError` (500).
    ServerError,
    /// S3 `SlowDown` (503).
    SlowDown,
    /// Half the request body read, then the connection closed.
    DropMidUpload,
    /// Forwarded (it takes effect), then the connection closed without the answer.
    LoseAnswer,
    /// `TransactionCanceledException`: the first item's condition failed.
    ConditionFailed,
}

/// Which requests a rule applies to.
#[derive(Clone, Debug)]
pub struct Matcher {
    /// The DynamoDB operation (`TransactWriteItems`), or the S3 method (`PUT`).
    pub operation: &'static str,
    /// A string the request's path or body must contain.
    pub containing: &'static str,
}

/// How often each fault is drawn for a request it fits (the rest are forwarded).
#[derive(Clone, Copy, Debug, Default)]
pub struct Rates {
    /// DynamoDB throttling (either kind).
    pub throttle: f64,
    /// 5xx (DynamoDB or S3).
    pub server_error: f64,
    /// Mid-upload drops (S3 `PUT` with a body).
    pub drop_upload: f64,
    /// Lost answers.
    pub lose_answer: f64,
}

struct State {
    upstream: String,
    rng: Mutex<u64>,
    rates: Mutex<Rates>,
    armed: Mutex<Vec<(Matcher, Fault)>>,
    injected: Mutex<Vec<(String, Fault)>>,
    forwarded: AtomicU64,
    seen: Mutex<Vec<String>>,
    stopped: AtomicBool,
}

/// The proxy, listening on loopback until dropped.
pub struct FaultProxy {
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    state: Arc<State>,
}

/// One request as received.
struct Request {
    head: Vec<String>,
    /// The DynamoDB operation or the HTTP method.
    operation: String,
    /// Whether it is a DynamoDB call (it names its operation in `X-Amz-Target`).
    dynamo: bool,
    path: String,
    length: usize,
    expects_continue: bool,
}

impl FaultProxy {
    /// Starts a proxy to `upstream` (`http://127.0.0.1:PORT`), drawing faults from `seed`.
    pub fn start(upstream: &str, seed: u64) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(State {
            upstream: upstream.trim_start_matches("http://").to_string(),
            rng: Mutex::new(seed),
            rates: Mutex::new(Rates::default()),
            armed: Mutex::new(Vec::new()),
            injected: Mutex::new(Vec::new()),
            forwarded: AtomicU64::new(0),
            seen: Mutex::new(Vec::new()),
            stopped: AtomicBool::new(false),
        });
        let shared = state.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if shared.stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let state = shared.clone();
                std::thread::spawn(move || state.serve(conn));
            }
        });
        Self { endpoint, state }
    }

    /// Sets the rates of random faults from now on.
    pub fn set_rates(&self, rates: Rates) {
        *self.state.rates.lock().unwrap() = rates;
    }

    /// Fails the next request `matcher` fits with `fault`.
    pub fn arm(&self, matcher: Matcher, fault: Fault) {
        self.state.armed.lock().unwrap().push((matcher, fault));
    }

    /// Whether an armed fault is still waiting for its request.
    pub fn armed(&self) -> usize {
        self.state.armed.lock().unwrap().len()
    }

    /// The faults injected so far, with the operation each hit.
    pub fn injected(&self) -> Vec<(String, Fault)> {
        self.state.injected.lock().unwrap().clone()
    }

    /// Requests forwarded to moto so far.
    pub fn forwarded(&self) -> u64 {
        self.state.forwarded.load(Ordering::SeqCst)
    }

    /// Every request's operation, in arrival order.
    pub fn seen(&self) -> Vec<String> {
        self.state.seen.lock().unwrap().clone()
    }

    /// The variables that point an AWS SDK at this proxy (moto's test credentials).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        super::moto::sdk_env(&self.endpoint)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.state.stopped.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.endpoint.trim_start_matches("http://"));
    }
}

impl State {
    fn draw(&self) -> f64 {
        let mut s = self.rng.lock().unwrap();
        *s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The fault for `req` (whose body is `body`, when already read), if any.
    fn choose(&self, req: &Request, body: &[u8]) -> Option<Fault> {
        let text = String::from_utf8_lossy(body);
        let mut armed = self.armed.lock().unwrap();
        if let Some(i) = armed.iter().position(|(m, _)| {
            m.operation == req.operation
                && (req.path.contains(m.containing) || text.contains(m.containing))
        }) {
            return Some(armed.remove(i).1);
        }
        drop(armed);
        let rates = *self.rates.lock().unwrap();
        let dynamo = req.dynamo;
        let roll = self.draw();
        let mut edge = rates.throttle;
        if dynamo && roll < edge {
            return Some(if self.draw() < 0.5 {
                Fault::ProvisionedThroughputExceeded
            } else {
                Fault::Throttling
            });
        }
        edge += rates.server_error;
        if roll < edge {
            return Some(if !dynamo && self.draw() < 0.5 {
                Fault::SlowDown
            } else {
                Fault::ServerError
            });
        }
        edge += rates.lose_answer;
        (roll < edge).then_some(Fault::LoseAnswer)
    }

    /// Whether to cut `req`'s upload short: an armed drop for it, or a random one.
    fn drops_upload(&self, req: &Request) -> bool {
        if req.operation != "PUT" || req.length == 0 {
            return false;
        }
        let mut armed = self.armed.lock().unwrap();
        if let Some(i) = armed.iter().position(|(m, f)| {
            *f == Fault::DropMidUpload && m.operation == "PUT" && req.path.contains(m.containing)
        }) {
            armed.remove(i);
            return true;
        }
        drop(armed);
        let rate = self.rates.lock().unwrap().drop_upload;
        self.draw() < rate
    }

    fn serve(&self, conn: TcpStream) {
        let mut reader = BufReader::new(conn.try_clone().unwrap());
        let mut out = conn;
        let Some(req) = read_head(&mut reader) else {
            return;
        };
        self.seen.lock().unwrap().push(req.operation.clone());
        if req.expects_continue {
            let _ = out.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
        }
        // A drop mid-upload is decided before the body arrives; everything else after.
        if self.drops_upload(&req) {
            let mut half = vec![0; req.length / 2];
            let _ = reader.read_exact(&mut half);
            self.injected
                .lock()
                .unwrap()
                .push((req.operation.clone(), Fault::DropMidUpload));
            let _ = out.shutdown(Shutdown::Both);
            return;
        }
        let mut body = vec![0; req.length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let fault = self.choose(&req, &body);
        if let Some(f) = fault {
            self.injected
                .lock()
                .unwrap()
                .push((req.operation.clone(), f));
        }
        let answer = match fault {
            None | Some(Fault::LoseAnswer) => {
                let answer = self.forward(&req, &body);
                if fault.is_some() {
                    let _ = out.shutdown(Shutdown::Both);
                    return;
                }
                answer
            }
            Some(f) => synthetic(f, &req),
        };
        let _ = out.write_all(&answer);
        let _ = out.shutdown(Shutdown::Both);
    }

    /// Sends `req` to moto on a connection of its own and returns moto's answer, marked
    /// `Connection: close`.
    fn forward(&self, req: &Request, body: &[u8]) -> Vec<u8> {
        self.forwarded.fetch_add(1, Ordering::SeqCst);
        let mut up = TcpStream::connect(&self.upstream).unwrap();
        let mut head = String::new();
        for line in &req.head {
            let lower = line.to_ascii_lowercase();
            if lower.starts_with("connection:") || lower.starts_with("expect:") {
                continue;
            }
            head.push_str(line);
            head.push_str("\r\n");
        }
        head.push_str("Connection: close\r\n\r\n");
        up.write_all(head.as_bytes()).unwrap();
        up.write_all(body).unwrap();
        let mut answer = Vec::new();
        let _ = up.read_to_end(&mut answer);
        close_after(answer)
    }
}

/// Reads a request line and headers; `None` at the end of the stream.
fn read_head(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end_matches(['\r', '\n']).to_string();
        if line.is_empty() {
            break;
        }
        head.push(line);
    }
    let mut parts = head.first()?.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut operation = method;
    let (mut length, mut expects_continue, mut dynamo) = (0, false, false);
    for line in &head[1..] {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        match name.as_str() {
            "content-length" => length = value.parse().unwrap_or(0),
            "x-amz-target" => {
                operation = value.rsplit('.').next().unwrap_or(value).to_string();
                dynamo = true;
            }
            "expect" => expects_continue = value.eq_ignore_ascii_case("100-continue"),
            "transfer-encoding" => panic!("the proxy relays Content-Length bodies only"),
            _ => {}
        }
    }
    Some(Request {
        head,
        operation,
        dynamo,
        path,
        length,
        expects_continue,
    })
}

/// `answer` with its `Connection` header replaced by `Connection: close`.
fn close_after(answer: Vec<u8>) -> Vec<u8> {
    let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") else {
        return answer;
    };
    let head = String::from_utf8_lossy(&answer[..end]);
    let mut out: String = head
        .split("\r\n")
        .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
        .map(|l| format!("{l}\r\n"))
        .collect();
    out.push_str("Connection: close\r\n\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&answer[end + 4..]);
    bytes
}

/// The answer AWS gives for `fault`.
fn synthetic(fault: Fault, req: &Request) -> Vec<u8> {
    let dynamo = |kind: &str, message: &str| {
        (
            "application/x-amz-json-1.0",
            format!(r#"{{"__type":"{kind}","message":"{message}"}}"#),
        )
    };
    let s3 = |code: &str, message: &str| {
        (
            "application/xml",
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{message}</Message><RequestId>FAULT0000000000</RequestId></Error>"
            ),
        )
    };
    let is_s3 = !req.dynamo;
    let (status, (content_type, body)) = match fault {
        Fault::ProvisionedThroughputExceeded => (
            "400 Bad Request",
            dynamo(
                "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
                "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.",
            ),
        ),
        Fault::Throttling => (
            "400 Bad Request",
            dynamo(
                "com.amazon.coral.availability#ThrottlingException",
                "Rate of requests exceeds the allowed throughput.",
            ),
        ),
        Fault::ServerError if is_s3 => (
            "500 Internal Server Error",
            s3(
                "InternalError",
                "We encountered an internal error. Please try again.",
            ),
        ),
        Fault::ServerError => (
            "500 Internal Server Error",
            dynamo(
                "com.amazonaws.dynamodb.v20120810#InternalServerError",
                "Internal server error",
            ),
        ),
        Fault::SlowDown => (
            "503 Slow Down",
            s3("SlowDown", "Please reduce your request rate."),
        ),
        Fault::ConditionFailed => (
            "400 Bad Request",
            (
                "application/x-amz-json-1.0",
                r#"{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","message":"Transaction cancelled, please refer cancellation reasons for specific reasons [ConditionalCheckFailed, None]","CancellationReasons":[{"Code":"ConditionalCheckFailed","Message":"The conditional request failed"},{"Code":"None"}]}"#
                    .to_string(),
            ),
        ),
        // Not answers: a dropped upload closes before the body ends (`drops_upload`); an armed
        // drop that met a request without a body closes like a lost answer.
        Fault::DropMidUpload | Fault::LoseAnswer => return Vec::new(),
    };
    // A HEAD answer has no body.
    let body = if req.operation == "HEAD" {
        String::new()
    } else {
        body
    };
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nx-amzn-RequestId: FAULT0000000000\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}
