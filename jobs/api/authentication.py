"""API tokens that expire and rotate.

DRF's tokens live until deleted, so a key copied into a CI log works forever. Here a token
is refused once it is older than ROCPATH_TOKEN_TTL_DAYS (from its ``created``), and rotating
replaces it: the old key stops working at once.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed


def token_expires_at(token: Token) -> datetime:
    return token.created + timedelta(days=settings.ROCPATH_TOKEN_TTL_DAYS)


def rotate_token(user: Any) -> Token:
    """A new token for the user; the old one (if any) is deleted in the same transaction."""
    with transaction.atomic():
        Token.objects.filter(user=user).delete()
        return Token.objects.create(user=user)


class ExpiringTokenAuthentication(TokenAuthentication):
    def authenticate_credentials(self, key: str) -> tuple[Any, Token]:
        user, token = super().authenticate_credentials(key)
        if token_expires_at(token) <= timezone.now():
            raise AuthenticationFailed(
                f"Token expired: tokens last {settings.ROCPATH_TOKEN_TTL_DAYS} days. "
                "Make a new one on the Token page."
            )
        return user, token
