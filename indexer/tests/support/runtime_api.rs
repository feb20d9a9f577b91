//! A Lambda Runtime API endpoint (the 2018-06-01 interface the `lambda_runtime` crate speaks):
//! the test queues events, the function long-polls `/next`, and its answers and errors are
//! collected per request id. The same server takes Lambda's asynchronous `Invoke` (the
//! 2015-03-31 API, `X-Amz-Invocation-Type: Event`), as callers such as the Worker send it: the
//! event is queued for the function like any other, and the call is recorded.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use serde_json::Value;
use tokio::sync::Notify;

/// What the function answered for one invocation.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// `/response`: the function's result.
    Response(Value),
    /// `/error`: `errorType` and `errorMessage`.
    Error { error_type: String, message: String },
}

/// An `Invoke` call the endpoint accepted.
#[derive(Clone, Debug)]
pub struct Invocation {
    /// The function named in the path (a name or an ARN).
    pub function: String,
    /// The request id it was queued under.
    pub request_id: String,
    /// The `Authorization` header's credential scope (`KEY/DATE/REGION/lambda/aws4_request`).
    pub credential: String,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<VecDeque<(String, Value)>>,
    invocations: Mutex<Vec<Invocation>>,
    outcomes: Mutex<HashMap<String, Outcome>>,
    init_errors: Mutex<Vec<Value>>,
    queued: Notify,
    answered: Notify,
}

/// The endpoint, served on its own runtime until dropped.
pub struct RuntimeApi {
    shared: Arc<Shared>,
    /// `127.0.0.1:PORT`, for `AWS_LAMBDA_RUNTIME_API`.
    pub address: String,
    runtime: tokio::runtime::Runtime,
}

async fn next(State(s): State<Arc<Shared>>) -> impl IntoResponse {
    loop {
        let notified = s.queued.notified();
        if let Some((id, event)) = s.queue.lock().unwrap().pop_front() {
            let mut headers = HeaderMap::new();
            let deadline = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis()
                + 900_000;
            headers.insert(
                "lambda-runtime-aws-request-id",
                HeaderValue::from_str(&id).unwrap(),
            );
            headers.insert(
                "lambda-runtime-deadline-ms",
                HeaderValue::from_str(&deadline.to_string()).unwrap(),
            );
            headers.insert(
                "lambda-runtime-invoked-function-arn",
                HeaderValue::from_static(
                    "arn:aws:lambda:us-east-1:123456789012:function:ctxgate-indexer",
                ),
            );
            headers.insert(
                "lambda-runtime-trace-id",
                HeaderValue::from_static("Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1"),
            );
            return (StatusCode::OK, headers, event.to_string());
        }
        notified.await;
    }
}

async fn response(State(s): State<Arc<Shared>>, Path(id): Path<String>, body: Bytes) -> StatusCode {
    let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    s.outcomes
        .lock()
        .unwrap()
        .insert(id, Outcome::Response(value));
    s.answered.notify_waiters();
    StatusCode::ACCEPTED
}

async fn error(State(s): State<Arc<Shared>>, Path(id): Path<String>, body: Bytes) -> StatusCode {
    let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let outcome = Outcome::Error {
        error_type: value["errorType"].as_str().unwrap_or_default().to_string(),
        message: value["errorMessage"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    };
    s.outcomes.lock().unwrap().insert(id, outcome);
    s.answered.notify_waiters();
    StatusCode::ACCEPTED
}

/// `POST /2015-03-31/functions/{name}/invocations`: only `Event` invocations (queued, 202), and
/// only SigV4-signed ones (the signature itself is not checked).
async fn invoke(
    State(s): State<Arc<Shared>>,
    Path(function): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, HeaderMap, String) {
    let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).unwrap_or("");
    let refuse = |status: StatusCode, kind: &str, message: &str| {
        let mut h = HeaderMap::new();
        h.insert("x-amzn-errortype", HeaderValue::from_str(kind).unwrap());
        (
            status,
            h,
            serde_json::json!({"Type": "User", "message": message}).to_string(),
        )
    };
    let Some(credential) = header("authorization")
        .strip_prefix("AWS4-HMAC-SHA256 Credential=")
        .and_then(|rest| rest.split(',').next())
        .filter(|c| c.ends_with("/lambda/aws4_request") && !header("x-amz-date").is_empty())
    else {
        return refuse(
            StatusCode::FORBIDDEN,
            "MissingAuthenticationTokenException",
            "not signed for lambda",
        );
    };
    if header("x-amz-invocation-type") != "Event" {
        return refuse(
            StatusCode::BAD_REQUEST,
            "InvalidParameterValueException",
            "only Event invocations here",
        );
    }
    let Ok(event) = serde_json::from_slice::<Value>(&body) else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "InvalidRequestContentException",
            "the payload is not JSON",
        );
    };
    let mut invocations = s.invocations.lock().unwrap();
    let request_id = format!("invoke-{}", invocations.len() + 1);
    invocations.push(Invocation {
        function,
        request_id: request_id.clone(),
        credential: credential.to_string(),
    });
    s.queue
        .lock()
        .unwrap()
        .push_back((request_id.clone(), event));
    s.queued.notify_waiters();
    let mut h = HeaderMap::new();
    h.insert(
        "x-amzn-requestid",
        HeaderValue::from_str(&request_id).unwrap(),
    );
    (StatusCode::ACCEPTED, h, String::new())
}

async fn init_error(State(s): State<Arc<Shared>>, body: Bytes) -> StatusCode {
    let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    s.init_errors.lock().unwrap().push(value);
    s.answered.notify_waiters();
    StatusCode::ACCEPTED
}

impl RuntimeApi {
    /// Serves on a free loopback port.
    pub fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route(
                "/2018-06-01/runtime/invocation/{id}/response",
                post(response),
            )
            .route("/2018-06-01/runtime/invocation/{id}/error", post(error))
            .route("/2018-06-01/runtime/init/error", post(init_error))
            .route("/2015-03-31/functions/{name}/invocations", post(invoke))
            .with_state(Arc::clone(&shared));
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let address = listener.local_addr().unwrap().to_string();
        runtime.spawn(async move { axum::serve(listener, app).await });
        Self {
            shared,
            address,
            runtime,
        }
    }

    /// Queues an invocation.
    pub fn invoke(&self, request_id: &str, event: Value) {
        self.shared
            .queue
            .lock()
            .unwrap()
            .push_back((request_id.to_string(), event));
        self.shared.queued.notify_waiters();
    }

    /// Waits for the function's answer to `request_id`.
    pub fn outcome(&self, request_id: &str, timeout: Duration) -> Option<Outcome> {
        let shared = Arc::clone(&self.shared);
        let id = request_id.to_string();
        self.runtime.block_on(async move {
            tokio::time::timeout(timeout, async {
                loop {
                    let notified = shared.answered.notified();
                    if let Some(o) = shared.outcomes.lock().unwrap().get(&id) {
                        return o.clone();
                    }
                    notified.await;
                }
            })
            .await
            .ok()
        })
    }

    /// The `Invoke` calls accepted so far.
    pub fn invocations(&self) -> Vec<Invocation> {
        self.shared.invocations.lock().unwrap().clone()
    }

    /// Init errors the function reported.
    pub fn init_errors(&self) -> Vec<Value> {
        self.shared.init_errors.lock().unwrap().clone()
    }
}
