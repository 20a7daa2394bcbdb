"""A small real SMTP server on 127.0.0.1, in a thread: it keeps each message it is given.

Enough of RFC 5321 for smtplib (EHLO, MAIL, RCPT, DATA, RSET, NOOP, QUIT) and no more;
what Django's SMTP backend sends goes over a real socket to it.
"""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Message:
    sender: str
    recipients: list[str]
    data: bytes


@dataclass
class MailServer:
    port: int
    messages: list[Message] = field(default_factory=list)


@contextmanager
def smtp_server() -> Iterator[MailServer]:
    state = MailServer(port=0)

    class Handler(socketserver.StreamRequestHandler):
        def reply(self, line: str) -> None:
            self.wfile.write(f"{line}\r\n".encode())

        def handle(self) -> None:
            self.reply("220 test-smtp ready")
            sender, recipients = "", []
            while line := self.rfile.readline():
                verb = line.decode("ascii", "replace").strip()
                upper = verb.upper()
                if upper.startswith(("EHLO", "HELO")):
                    self.reply("250 test-smtp")
                elif upper.startswith("MAIL FROM:"):
                    sender, recipients = verb[10:].strip(" <>"), []
                    self.reply("250 ok")
                elif upper.startswith("RCPT TO:"):
                    recipients.append(verb[8:].strip(" <>"))
                    self.reply("250 ok")
                elif upper == "DATA":
                    self.reply("354 go on")
                    body = b""
                    while (chunk := self.rfile.readline()) not in (b".\r\n", b""):
                        body += chunk
                    state.messages.append(Message(sender, recipients, body))
                    self.reply("250 kept")
                elif upper == "QUIT":
                    self.reply("221 bye")
                    return
                else:  # RSET, NOOP
                    self.reply("250 ok")

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
