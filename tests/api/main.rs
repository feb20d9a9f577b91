//! The HTTP API against `ctxgate serve`: auth, quotas, isolation, continuation, bad input.
//!
//! The cases are host-independent (HTTP only), so the Worker harness runs the same ones.

mod cases;
mod host;

#[test]
fn native_api_suite() {
    let host = host::NativeHost::start();
    cases::run_suite(&host, "n");
}
