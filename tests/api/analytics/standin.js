// A stand-in for the Worker's Workers Analytics Engine dataset in the API suite: `wrangler dev`'s
// local dataset accepts `writeDataPoint` and drops the point, so a test could not see what the
// Worker wrote. Bound as `ANALYTICS` through a service binding to this entrypoint, it receives the
// very call the Worker makes (`writeDataPoint(point)`, over RPC) and prints the point as one line
// the test reads from wrangler's output (tests/api/observability.rs).
import { WorkerEntrypoint } from "cloudflare:workers";

export class Dataset extends WorkerEntrypoint {
  writeDataPoint(point) {
    console.log("analytics-standin " + JSON.stringify(point));
  }
}

export default {
  fetch() {
    return new Response("the analytics stand-in only answers RPC", { status: 404 });
  },
};
