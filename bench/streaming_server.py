"""A fake OpenAI-compatible streaming completion server on 127.0.0.1, for the client's
tests and its overhead benchmark (bench/inference_client.py).

It answers ``POST /v1/completions`` with ``max_tokens`` server-sent events, each one
token, after ``ttft_s`` and then every ``gap_s`` (0: at once), then a usage event and
``[DONE]``; chunked transfer and keep-alive as uvicorn sends them. Knowing exactly when
it wrote each token is what lets a test hold the client's TTFT and ITL to it.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field


@dataclass
class StreamingServer:
    """Start with ``await start()``; ``port`` is then the one it listens on."""

    ttft_s: float = 0.0
    gap_s: float = 0.0
    fail_status: int = 0  # answer every request with this HTTP status (0: never)
    port: int = 0
    served: int = 0
    _server: asyncio.Server | None = field(default=None, repr=False)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                length = 0
                for line in head.decode("latin-1").split("\r\n"):
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                body = json.loads(await reader.readexactly(length)) if length else {}
                await self._answer(writer, body)
        finally:
            writer.close()

    async def _answer(self, writer: asyncio.StreamWriter, body: dict) -> None:
        self.served += 1
        if self.fail_status:
            text = b'{"error": "refused"}'
            writer.write(
                f"HTTP/1.1 {self.fail_status} Error\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(text)}\r\n\r\n".encode()
                + text
            )
            await writer.drain()
            return
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        tokens = int(body.get("max_tokens") or 16)
        prompt = body.get("prompt")
        prompt_tokens = len(prompt) if isinstance(prompt, list) else len(str(prompt).split())
        for i in range(tokens):
            await asyncio.sleep(self.ttft_s if i == 0 else self.gap_s)
            _chunk(writer, {"choices": [{"index": 0, "text": f" t{i}"}]})
            await writer.drain()
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": tokens}
        _chunk(
            writer,
            {"choices": [{"index": 0, "text": "", "finish_reason": "length"}], "usage": usage},
        )
        data = b"data: [DONE]\n\n"
        writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
        await writer.drain()


def _chunk(writer: asyncio.StreamWriter, message: dict) -> None:
    data = b"data: " + json.dumps(message).encode() + b"\n\n"
    writer.write(b"%x\r\n%s\r\n" % (len(data), data))
