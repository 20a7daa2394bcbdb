"""Webhook URLs: which ones may be called, how a body is signed, and one POST.

A webhook URL makes the server open a connection of a project member's choosing, so it
is held to the rules of git URLs (teams.gitintake): http or https only; the host is
resolved and every address must be global unless the operator allows the host
(ROCPATH_WEBHOOK_HOST_ALLOW, names or networks), and the connection goes to an address
that was checked, so a second DNS answer cannot move it. Redirects are not followed.

Signature (docs/alerts.md): ``X-Rocpath-Timestamp: <unix seconds>`` and
``X-Rocpath-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>." + raw body)>``.
The timestamp is signed so that a receiver can refuse an old body played again.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import http.client
import socket
import ssl
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from teams.gitintake import internal

SIGNATURE_VERSION = "v1"
EXCERPT_CHARS = 500
USER_AGENT = "rocpath-webhook/1"


class WebhookRefused(ValueError):
    """A URL the policy does not call (a permanent failure: never retried)."""


@dataclass(frozen=True)
class Response:
    status: int
    excerpt: str
    retry_after_s: float | None


def check_url(url: str) -> None:
    """Refuse what can be judged without DNS (the form and the API call this)."""
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        # Saved, such a URL failed every try (6, over hours): refuse it when it is typed.
        raise WebhookRefused(f"{url[:200]!r}: spaces or control characters in the URL")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise WebhookRefused(f"{url[:200]!r}: only http:// and https:// webhook URLs are allowed")
    if not parts.hostname:
        raise WebhookRefused(f"{url[:200]!r}: no host")
    if parts.username or parts.password:
        raise WebhookRefused(f"{url[:200]!r}: no user or password in the URL")
    try:
        parts.port  # noqa: B018  (raises on a bad port)
    except ValueError:
        raise WebhookRefused(f"{url[:200]!r}: not a valid port") from None


def redacted(url: str) -> str:
    """The URL as a viewer sees it: where it goes, not its path or query, which are often
    the receiver's bearer secret (a Slack or Teams hook's token)."""
    parts = urlsplit(url)
    where = f"{parts.scheme}://{parts.hostname or ''}"
    with contextlib.suppress(ValueError):
        if parts.port:
            where += f":{parts.port}"
    hidden = parts.path not in ("", "/") or parts.query or parts.fragment
    return where + ("/…" if hidden else "/")


def resolve(url: str) -> tuple[str, int, list[str]]:
    """(host, port, the checked addresses to connect to, tried in this order)."""
    check_url(url)
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise ConnectionError(f"the host {host} cannot be resolved") from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in answers))
    for address in addresses:
        if reason := internal(host, address, settings.ROCPATH_WEBHOOK_HOST_ALLOW):
            raise WebhookRefused(
                f"{host} is {reason}; an operator can allow it (ROCPATH_WEBHOOK_HOST_ALLOW)"
            )
    if not addresses:
        raise ConnectionError(f"the host {host} cannot be resolved")
    return host, port, addresses


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The X-Rocpath-Signature value of ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"{SIGNATURE_VERSION}={mac.hexdigest()}"


def _connect(addresses: list[str], port: int, timeout: float) -> socket.socket:
    """A connection to the first checked address that answers (never to a new DNS answer)."""
    failure: OSError | None = None
    for address in addresses:
        try:
            return socket.create_connection((address, port), timeout)
        except OSError as exc:
            failure = exc
    assert failure is not None  # resolve() returns at least one address
    raise failure


class _PinnedHTTPS(http.client.HTTPSConnection):
    """HTTPS to a checked address, with the certificate checked against the host name."""

    def __init__(self, host: str, port: int, addresses: list[str], timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._addresses = addresses

    def connect(self) -> None:
        sock = _connect(self._addresses, self.port, self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


class _PinnedHTTP(http.client.HTTPConnection):
    def __init__(self, host: str, port: int, addresses: list[str], timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._addresses = addresses

    def connect(self) -> None:
        self.sock = _connect(self._addresses, self.port, self.timeout)


def post(url: str, body: bytes, headers: dict[str, str]) -> Response:
    """One POST of ``body``; raises WebhookRefused (permanent) or OSError (passing)."""
    host, port, addresses = resolve(url)
    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    kind = _PinnedHTTPS if parts.scheme == "https" else _PinnedHTTP
    connection = kind(host, port, addresses, settings.ROCPATH_ALERT_TIMEOUT_S)
    # One deadline for the whole try: the socket timeout bounds each read, and a receiver
    # dripping a byte inside it would hold an alert worker's thread for ever (a threads
    # pool has no hard time limit). Past the deadline the socket is shut, so the blocked
    # read returns.
    deadline = settings.ROCPATH_ALERT_TRY_DEADLINE_S
    expired = threading.Event()

    def cut() -> None:
        expired.set()
        if connection.sock is not None:
            with contextlib.suppress(OSError):
                connection.sock.shutdown(socket.SHUT_RDWR)

    watchdog = threading.Timer(deadline, cut)
    watchdog.daemon = True
    watchdog.start()
    try:
        connection.request(
            "POST",
            path,
            body=body,
            headers={
                "Content-Type": "application/json",
                "User-Agent": USER_AGENT,
                **headers,
            },
        )
        answer = connection.getresponse()
        excerpt = answer.read(EXCERPT_CHARS * 4).decode("utf-8", "replace")[:EXCERPT_CHARS]
        return Response(answer.status, excerpt, _retry_after(answer.getheader("Retry-After")))
    except (http.client.HTTPException, OSError) as exc:
        if expired.is_set():
            raise TimeoutError(f"no whole answer within the try's {deadline} s deadline") from exc
        if isinstance(exc, OSError):
            raise
        raise ConnectionError(f"bad HTTP answer: {exc!r}") from exc  # count it as no answer
    finally:
        watchdog.cancel()
        connection.close()


def _retry_after(value: str | None) -> float | None:
    """Retry-After in seconds (the HTTP-date form is ignored: backoff applies)."""
    if value and value.strip().isdigit():
        return float(value.strip())
    return None
