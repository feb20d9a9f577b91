"""A git smart-HTTP server that requires HTTP Basic credentials, for tests.

`git http-backend` (CGI, shipped with git) serves the repositories under ROOT; this wrapper
answers 401 with `WWW-Authenticate: Basic` unless the request carries exactly
`Authorization: Basic base64(USER:TOKEN)`, as a forge does for a private repository. It decodes
chunked request bodies (CGI needs a length). One line per request goes to stdout,
`<method> <path> auth=<ok|missing|wrong>`, without the header's value; the first line is
`listening <port>`.

Usage: git_http_auth.py ROOT USER TOKEN_FILE
"""

import base64
import http.server
import os
import subprocess
import sys


def main():
    root, user, token_file = sys.argv[1:4]
    with open(token_file, encoding="utf-8") as f:
        token = f.read().strip()
    expected = "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def body(self):
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                data = b""
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return data
                    data += self.rfile.read(size)
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def answer(self, status, headers, payload):
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def serve(self):
            data = self.body()
            given = self.headers.get("Authorization")
            state = "missing" if given is None else ("ok" if given == expected else "wrong")
            print(f"{self.command} {self.path.split('?')[0]} auth={state}", flush=True)
            if state != "ok":
                self.answer(401, [("WWW-Authenticate", 'Basic realm="git"')], b"auth required\n")
                return
            path, _, query = self.path.partition("?")
            env = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "GIT_PROJECT_ROOT": root,
                "GIT_HTTP_EXPORT_ALL": "1",
                "REQUEST_METHOD": self.command,
                "PATH_INFO": path,
                "QUERY_STRING": query,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(data)),
                "REMOTE_USER": user,
                "REMOTE_ADDR": "127.0.0.1",
                "SERVER_PROTOCOL": "HTTP/1.1",
            }
            if self.headers.get("Git-Protocol"):
                env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
            if self.headers.get("Content-Encoding"):
                env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
            out = subprocess.run(
                ["git", "http-backend"], input=data, env=env, capture_output=True, check=False
            ).stdout
            head, _, payload = out.partition(b"\r\n\r\n")
            if not _:
                head, _, payload = out.partition(b"\n\n")
            status, headers = 200, []
            for line in head.decode("latin-1").splitlines():
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.strip().split()[0])
                elif name:
                    headers.append((name, value.strip()))
            self.answer(status, headers, payload)

        do_GET = serve
        do_POST = serve

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
