//! Every JSON route of the API, given structured JSON shaped like its request types
//! ([`ctxgate_fuzz::json`]).
#![no_main]

use ctxgate_fuzz::api::{ContentType, ROUTES, call};
use ctxgate_fuzz::json::Json;
use libfuzzer_sys::{arbitrary, fuzz_target};

#[derive(arbitrary::Arbitrary, Debug)]
struct Input {
    route: u8,
    body: Json,
}

fuzz_target!(|input: Input| {
    let json_routes: Vec<_> = ROUTES.iter().filter(|r| r.json).collect();
    let route = json_routes[usize::from(input.route) % json_routes.len()];
    let body = serde_json::to_vec(&input.body.to_value()).expect("JSON serializes");
    call(route, ContentType::Json, body);
});
