"""A real HTTP receiver on 127.0.0.1, in a thread: what the webhook tests send to.

It answers from a script of status codes (then 200) and keeps every request as it came:
the path, the headers, the raw body bytes and when it arrived.
"""

from __future__ import annotations

import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float


@dataclass
class Receiver:
    url: str
    answers: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    requests: list[Received] = field(default_factory=list)

    def wait_for(self, count: int, timeout: float = 30) -> list[Received]:
        deadline = time.monotonic() + timeout
        while len(self.requests) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(self.requests)} requests came, not {count}")
            time.sleep(0.05)
        return self.requests


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for localhost and 127.0.0.1, and its key (openssl, as Debian ships it)."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


@contextmanager
def receiver(
    *answers: int | tuple[int, dict[str, str]], tls: tuple[Path, Path] | None = None
) -> Iterator[Receiver]:
    """Serve on a free port of 127.0.0.1; answer each POST with the next scripted status.

    ``tls``: (certificate, key) to serve https as ``localhost`` instead of http.
    """
    state = Receiver(url="", answers=[a if isinstance(a, tuple) else (a, {}) for a in answers])
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with lock:
                state.requests.append(
                    Received(self.path, dict(self.headers.items()), body, time.monotonic())
                )
                status, headers = state.answers.pop(0) if state.answers else (200, {})
            reply = f"answer {status} to request {len(state.requests)}".encode()
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    state.url = f"http://127.0.0.1:{port}/hooks/rocpath?source=test"
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        state.url = f"https://localhost:{port}/hooks/rocpath?source=test"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
