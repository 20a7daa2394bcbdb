"""Steps the browser journeys share."""

from __future__ import annotations

from dataclasses import dataclass, field


def sign_in(page, username: str, password: str) -> None:
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url("**/")


@dataclass
class Watched:
    """What a page said while a test drove it: console lines ("type: text"), uncaught
    errors, and the Content-Security-Policy of every document it loaded."""

    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    policies: list[str] = field(default_factory=list)


def watch(page, init_script: str) -> Watched:
    """Listen to the page before it loads anything; ``init_script`` runs ahead of every
    page script (test_csp's WATCH gathers CSP violations into window.__csp)."""
    seen = Watched()
    page.on("console", lambda message: seen.console.append(f"{message.type}: {message.text}"))
    page.on("pageerror", lambda error: seen.errors.append(str(error)))
    page.add_init_script(init_script)
    page.on(
        "response",
        lambda r: (
            seen.policies.append(r.headers.get("content-security-policy", ""))
            if r.request.resource_type == "document"
            else None
        ),
    )
    return seen
