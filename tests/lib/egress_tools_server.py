#!/usr/bin/python3
# The HTTPS server of tests/integration/egress_tools.sh, on 127.0.0.1
# only: a PEP 503 package index and its files, an npm registry's
# packuments and tarballs, `git http-backend` (smart HTTP, through CGI)
# and plain files, all from ROOT, under the test's certificate.
# Usage: egress_tools_server.py ROOT CERT KEY PORTFILE
import http.server, os, ssl, subprocess, sys, urllib.parse

root, cert, key, portfile = sys.argv[1:5]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (self.command, self.path))

    def send_body(self, code, body, ctype="application/octet-stream"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def git(self):
        u = urllib.parse.urlsplit(self.path)
        n = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(n) if n else b""
        env = dict(os.environ, GIT_PROJECT_ROOT=os.path.join(root, "git"),
                   GIT_HTTP_EXPORT_ALL="1", REQUEST_METHOD=self.command,
                   PATH_INFO=u.path, QUERY_STRING=u.query,
                   CONTENT_TYPE=self.headers.get("Content-Type") or "",
                   CONTENT_LENGTH=str(n), REMOTE_ADDR="127.0.0.1",
                   GIT_PROTOCOL=self.headers.get("Git-Protocol") or "")
        out = subprocess.run(["git", "http-backend"], input=data, env=env,
                             capture_output=True).stdout
        head, _, body = out.partition(b"\r\n\r\n")
        code, headers = 200, []
        for line in head.split(b"\r\n"):
            k, _, v = line.decode().partition(":")
            if k.lower() == "status":
                code = int(v.split()[0])
            elif k:
                headers.append((k, v.strip()))
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        if self.path.startswith("/repo.git/"):
            return self.git()
        self.send_body(404, b"not here\n", "text/plain")

    def do_GET(self):
        if self.path.startswith("/repo.git/"):
            return self.git()
        path = urllib.parse.urlsplit(self.path).path
        # An npm packument is /NAME; its tarballs /NAME/-/FILE.
        name = path.strip("/")
        f = os.path.join(root, "www", path.lstrip("/"))
        if path.endswith("/"):
            f = os.path.join(f, "index.html")
        elif "/" not in name and os.path.exists(os.path.join(root, "npm", name + ".json")):
            f = os.path.join(root, "npm", name + ".json")
        elif "/-/" in name:
            f = os.path.join(root, "npm", name.split("/-/")[1])
        if ".." in path or not os.path.isfile(f):
            return self.send_body(404, b"not here\n", "text/plain")
        ctype = ("text/html" if f.endswith(".html") else
                 "application/json" if f.endswith(".json") else
                 "text/plain" if f.endswith(".txt") else
                 "application/octet-stream")
        with open(f, "rb") as fp:
            self.send_body(200, fp.read(), ctype)


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(portfile + ".tmp", "w") as fp:
    fp.write("%d\n" % srv.server_address[1])
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
