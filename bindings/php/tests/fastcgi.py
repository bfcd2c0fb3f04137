"""A minimal FastCGI client (the responder role, one request per
connection), enough to drive PHP-FPM from a test: Python standard library
only, no cgi-fcgi process per request.

    resp = request(("127.0.0.1", port), {"SCRIPT_FILENAME": ..., ...})
    resp.status, resp.headers, resp.body

request_stream() yields the response's bytes as FPM sends them, so a test
can read what a script flushed before it sleeps.
"""

import socket
import struct

VERSION = 1
BEGIN_REQUEST, END_REQUEST, PARAMS, STDIN, STDOUT, STDERR = 1, 3, 4, 5, 6, 7
RESPONDER = 1
REQUEST_ID = 1


def _record(rtype, content=b""):
    return struct.pack(">BBHHBB", VERSION, rtype, REQUEST_ID, len(content),
                       0, 0) + content


def _length(n):
    return struct.pack(">B", n) if n < 128 else struct.pack(">I",
                                                             n | 0x80000000)


def _params(params):
    body = b""
    for name, value in params.items():
        n, v = name.encode(), str(value).encode()
        body += _length(len(n)) + _length(len(v)) + n + v
    out = b""
    # a record holds at most 65535 bytes of content
    for i in range(0, len(body), 65535):
        out += _record(PARAMS, body[i:i + 65535])
    return out + _record(PARAMS)


class ProtocolError(Exception):
    """The connection ended (closed or reset) before END_REQUEST: the
    worker serving the request died."""


def _read_exact(sock, n):
    buf = b""
    while len(buf) < n:
        try:
            chunk = sock.recv(n - len(buf))
        except ConnectionResetError as e:
            raise ProtocolError("connection reset after %d of %d bytes"
                                % (len(buf), n)) from e
        if not chunk:
            raise ProtocolError("connection closed after %d of %d bytes"
                                % (len(buf), n))
        buf += chunk
    return buf


def request_stream(addr, params, timeout=30):
    """Sends one request; yields ("stdout" | "stderr", bytes) as records
    arrive, then ("end", app_status).  Raises ProtocolError if the
    connection ends first."""
    with socket.create_connection(addr, timeout=timeout) as s:
        s.sendall(_record(BEGIN_REQUEST,
                          struct.pack(">HB5x", RESPONDER, 0))
                  + _params(params) + _record(STDIN))
        while True:
            _, rtype, _, clen, plen, _ = struct.unpack(
                ">BBHHBB", _read_exact(s, 8))
            content = _read_exact(s, clen) if clen else b""
            if plen:
                _read_exact(s, plen)
            if rtype == STDOUT:
                yield "stdout", content
            elif rtype == STDERR:
                yield "stderr", content
            elif rtype == END_REQUEST:
                yield "end", struct.unpack(">I", content[:4])[0]
                return


class Response:
    def __init__(self, raw, stderr):
        head, _, self.body = raw.partition(b"\r\n\r\n")
        self.headers = {}
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name:
                self.headers[name.strip()] = value.strip()
        # PHP sends "Status:" only when the code is not 200
        self.status = int(self.headers.get("Status", "200").split()[0])
        self.stderr = stderr


def request(addr, params, timeout=30):
    out, err = b"", b""
    for kind, data in request_stream(addr, params, timeout):
        if kind == "stdout":
            out += data
        elif kind == "stderr":
            err += data
    return Response(out, err)
