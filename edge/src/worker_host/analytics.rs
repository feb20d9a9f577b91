//! Each request's record leaves the Worker twice: as one `console.log` JSON line (Workers Logs,
//! `wrangler tail`, `wrangler dev`'s output) and, when the `ANALYTICS` binding is configured, as
//! one Workers Analytics Engine data point — the deployment's metrics across every isolate
//! (`GET /metrics` only sees its own isolate). The data point's layout is documented in
//! docs/observability.md; keep the two in step.
//!
//! The point is written by calling the binding's `writeDataPoint` itself rather than through
//! workers-rs's builder, so that whatever it returns is kept alive (`ctx.waitUntil`): Analytics Engine returns
//! nothing, but a stand-in bound in its place (a service binding to an RPC entrypoint, which is
//! how the API suite reads the points, since `wrangler dev`'s local dataset drops every write)
//! returns a promise the request must wait for.

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use worker::{Context, Env};

use crate::observe::RequestRecord;

/// The binding's name in `wrangler.toml`.
pub const ANALYTICS: &str = "ANALYTICS";

/// Logs `record` and writes it to the dataset when one is bound.
pub fn emit(env: &Env, ctx: &Context, record: &RequestRecord) {
    worker::console_log!("{}", record.json_line());
    let Ok(dataset) = env.analytics_engine(ANALYTICS) else {
        return;
    };
    let dataset: &JsValue = dataset.as_ref();
    if let Err(e) = write(dataset, ctx, record) {
        worker::console_error!("analytics engine write: {e:?}");
    }
}

/// The data point: index the org (Analytics Engine samples per index), blobs the labels,
/// doubles the numbers.
fn data_point(r: &RequestRecord) -> Object {
    let text = |v: Option<&str>| JsValue::from_str(v.unwrap_or(""));
    let blobs = Array::new();
    for v in [
        Some(r.route.as_str()),
        Some(r.method),
        r.error_code,
        r.quota_limit,
        Some(r.request_id.as_str()),
        r.pointer_cache,
        r.version_cache,
    ] {
        blobs.push(&text(v));
    }
    let doubles = Array::new();
    for v in [
        f64::from(r.status),
        r.latency_ms,
        r.tokens as f64,
        f64::from(u8::from(r.quota_limit.is_some())),
    ] {
        doubles.push(&JsValue::from_f64(v));
    }
    let indexes = Array::of1(&text(r.org.as_deref()));
    let point = Object::new();
    let _ = Reflect::set(&point, &"indexes".into(), &indexes);
    let _ = Reflect::set(&point, &"blobs".into(), &blobs);
    let _ = Reflect::set(&point, &"doubles".into(), &doubles);
    point
}

#[wasm_bindgen]
extern "C" {
    /// Whatever is bound as `ANALYTICS`: Analytics Engine, or the tests' stand-in.
    type Dataset;
    /// `dataset.writeDataPoint(point)`, called as a method: an RPC stub's methods cannot be
    /// called through `Function.prototype.call` (that would be a remote method named `call`).
    #[wasm_bindgen(method, catch, js_name = writeDataPoint)]
    fn write_data_point(this: &Dataset, point: &Object) -> Result<JsValue, JsValue>;
}

fn write(dataset: &JsValue, ctx: &Context, record: &RequestRecord) -> Result<(), JsValue> {
    let dataset: &Dataset = dataset.unchecked_ref();
    let returned = dataset.write_data_point(&data_point(record))?;
    // Analytics Engine returns nothing; the stand-in's RPC call returns a thenable (not a
    // `Promise` instance) that must settle before the request's context ends.
    if !returned.is_undefined() {
        let settled = js_sys::Promise::resolve(&returned);
        ctx.wait_until(async move {
            if let Err(e) = worker::wasm_bindgen_futures::JsFuture::from(settled).await {
                worker::console_error!("analytics engine write: {e:?}");
            }
        });
    }
    Ok(())
}
