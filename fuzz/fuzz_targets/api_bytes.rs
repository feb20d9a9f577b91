//! Every API route with a body, given raw bytes: the first byte picks the route, the second the
//! content type, the rest is the body.
#![no_main]

use ctxgate_fuzz::api::{ContentType, ROUTES, call};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [route, content_type, body @ ..] = data else {
        return;
    };
    let route = &ROUTES[usize::from(*route) % ROUTES.len()];
    call(route, ContentType::pick(*content_type), body.to_vec());
});
