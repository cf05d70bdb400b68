#!/usr/bin/env python3
"""A real HTTP server on loopback for llmwatch's alerting tests: it records every request
and answers as its control file says.

  http_recorder.py DIR      listens on 127.0.0.1:<free port>, writes DIR/port,
                            appends each request to DIR/requests.jsonl as
                            {"t": unix time, "path", "headers", "body"}
  DIR/mode (read per request): "ok" (200), "500", or "429 N" (429 with Retry-After: N, once,
                            then it switches itself to "ok")
"""
import json, os, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer

DIR = sys.argv[1]


def mode():
    try:
        return open(os.path.join(DIR, "mode")).read().strip() or "ok"
    except FileNotFoundError:
        return "ok"


class Handler(BaseHTTPRequestHandler):
    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace")
        with open(os.path.join(DIR, "requests.jsonl"), "a") as f:
            f.write(json.dumps({"t": time.time(), "method": self.command, "path": self.path,
                                "headers": dict(self.headers), "body": body}) + "\n")
        m = mode()
        if m.startswith("429"):
            with open(os.path.join(DIR, "mode"), "w") as f:
                f.write("ok")
            self.send_response(429)
            self.send_header("Retry-After", m.split()[1] if len(m.split()) > 1 else "1")
            self.end_headers()
            return
        self.send_response(500 if m == "500" else 200)
        self.end_headers()
        self.wfile.write(b"ok")

    do_POST = do_GET = do_PUT = handle_any

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Handler)
with open(os.path.join(DIR, "port.tmp"), "w") as f:
    f.write(str(server.server_address[1]))
os.rename(os.path.join(DIR, "port.tmp"), os.path.join(DIR, "port"))
server.serve_forever()
