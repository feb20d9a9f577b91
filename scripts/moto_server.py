#!/usr/bin/env python3
"""A single-threaded moto server (S3, DynamoDB and every other moto service) for the tests.

Run it with the AWS test venv (scripts/aws-tools-setup.sh installs it):

    target/aws-venv/bin/python scripts/moto_server.py --port 0

It binds 127.0.0.1 (or --host), picks a free port when --port is 0, writes exactly one line
`PORT=<n>` to stdout, flushes, and then serves until it gets SIGTERM or SIGINT.  Nothing else is
written to stdout.  Request logs go to stderr only with --verbose, so a caller that pipes
stderr without reading it cannot stall the server.

Why not `moto_server`: moto's own entry point serves with werkzeug's threaded server, and
concurrent DynamoDB updates (for example two conditional UpdateItem calls on one item) can then
interleave inside moto's backend and lose a write.  Here the same WSGI application
(moto's DomainDispatcherApplication over create_backend_app, as in moto.server.main) is served
by a werkzeug server with threaded=False, so requests are handled one at a time, in order.
A single-threaded werkzeug server speaks HTTP/1.0 and closes each connection after its response,
so one idle client connection cannot block the others.

Addressing: the service is inferred from the SigV4 credential scope in the Authorization header,
so path-style S3 (`http://127.0.0.1:PORT/bucket/key`) and DynamoDB (`POST http://127.0.0.1:PORT/`
with `X-Amz-Target: DynamoDB_20120810.*`) share the one port.  `POST /moto-api/reset` clears all
state.

--exit-on-stdin-eof makes the server exit when its stdin reaches end of file, so a test that
spawns it with a piped stdin and dies without killing it does not leave it running.
"""

import argparse
import logging
import os
import signal
import sys
import threading

from werkzeug.serving import make_server

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)


def _watch_stdin() -> None:
    try:
        while sys.stdin.buffer.read(4096):
            pass
    except Exception:
        pass
    os._exit(0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to bind; 0 picks a free one (default 0)")
    parser.add_argument("--verbose", action="store_true", help="log each request to stderr")
    parser.add_argument(
        "--exit-on-stdin-eof",
        action="store_true",
        help="exit when stdin is closed (for a parent that may die without killing this server)",
    )
    args = parser.parse_args(argv)

    logging.getLogger("werkzeug").setLevel(logging.INFO if args.verbose else logging.ERROR)

    app = DomainDispatcherApplication(create_backend_app)
    # make_server + serve_forever is what werkzeug.serving.run_simple does when it has no
    # reloader; calling it directly lets us learn the port the OS chose for --port 0.
    server = make_server(args.host, args.port, app, threaded=False, request_handler=MotoRequestHandler)
    port = server.server_port
    # moto builds some URLs (SQS queue URLs, Lambda endpoints) from MOTO_PORT.
    os.environ["MOTO_PORT"] = str(port)

    def stop(_signum: int, _frame: object) -> None:
        # Raised in the main thread, inside serve_forever; the finally below closes the socket.
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    if args.exit_on_stdin_eof:
        threading.Thread(target=_watch_stdin, name="stdin-eof", daemon=True).start()

    sys.stdout.write(f"PORT={port}\n")
    sys.stdout.flush()
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
