"""A tiny OpenAI-compatible streaming server, used to capture a real guidellm report.

Why: the guidellm fixture should come from a real run of the real client, but no
model server is available where the fixtures are made. This stdlib-only server
answers /v1/models, /health, /v1/completions and /v1/chat/completions (streamed as
server-sent events, one word per chunk, with a final usage chunk) so that guidellm
measures genuine time-to-first-token and inter-token gaps from its own clock. It
listens on 127.0.0.1 only. It is a fixture-making tool, not imported by the tests.

Run: python tests/stack/inference/fake_openai_server.py PORT [TTFT_S] [GAP_S] [FAIL_EVERY]
"""

from __future__ import annotations

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "fake/tiny-model"
WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta")


class Handler(BaseHTTPRequestHandler):
    """Serves the few routes a benchmark client touches; streams with chunked encoding."""

    protocol_version = "HTTP/1.1"
    ttft_s = 0.02
    gap_s = 0.004
    fail_every = 0  # answer every Nth generation request with HTTP 500 (0: never)
    served = 0

    def log_message(self, format: str, *args: object) -> None:
        """Stay quiet: the client's output is what matters."""

    def _send_json(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def do_GET(self) -> None:
        """Answer the model list and health probes."""
        if self.path.startswith("/v1/models"):
            self._send_json(
                200,
                {"object": "list", "data": [{"id": MODEL, "object": "model", "root": MODEL}]},
            )
        elif self.path.startswith("/health"):
            self._send_json(200, {"status": "ok"})
        else:
            self._send_json(404, {"error": "not found"})

    def do_POST(self) -> None:
        """Stream one word per chunk, max_tokens of them, then a usage chunk."""
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        chat = self.path.startswith("/v1/chat/completions")
        if not (chat or self.path.startswith("/v1/completions")):
            self._send_json(404, {"error": "not found"})
            return
        if chat:
            prompt = " ".join(
                part
                for m in body.get("messages", [])
                for part in (
                    [m["content"]]
                    if isinstance(m.get("content"), str)
                    else [c.get("text", "") for c in m.get("content") or []]
                )
            )
            n_out = int(body.get("max_completion_tokens") or body.get("max_tokens") or 16)
        else:
            prompt = body.get("prompt") or ""
            n_out = int(body.get("max_tokens") or 16)
        n_in = len(str(prompt).split())
        Handler.served += 1
        if self.fail_every and Handler.served % self.fail_every == 0:
            self._send_json(500, {"error": {"message": "injected failure", "code": 500}})
            return
        created = int(time.time())
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        time.sleep(self.ttft_s)
        for i in range(n_out):
            if i:
                time.sleep(self.gap_s)
            word = WORDS[i % len(WORDS)] + " "
            choice = (
                {"index": 0, "delta": {"content": word}, "finish_reason": None}
                if chat
                else {"index": 0, "text": word, "finish_reason": None}
            )
            event = {
                "id": "cmpl-fake",
                "object": "chat.completion.chunk" if chat else "text_completion",
                "created": created,
                "model": MODEL,
                "choices": [choice],
            }
            self._chunk(f"data: {json.dumps(event)}\n\n")
        usage = {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out}
        final = {
            "id": "cmpl-fake",
            "created": created,
            "model": MODEL,
            "choices": [],
            "usage": usage,
        }
        self._chunk(f"data: {json.dumps(final)}\n\n")
        self._chunk("data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def main() -> None:
    """Serve on 127.0.0.1:PORT until killed."""
    port = int(sys.argv[1])
    if len(sys.argv) > 2:
        Handler.ttft_s = float(sys.argv[2])
    if len(sys.argv) > 3:
        Handler.gap_s = float(sys.argv[3])
    if len(sys.argv) > 4:
        Handler.fail_every = int(sys.argv[4])
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
