"""Repository credentials at rest: Fernet (AES-128-CBC + HMAC-SHA256, from `cryptography`).

The key is `GATEHOUSE_REPOSITORY_KEY` when set (a Fernet key, or any passphrase, which is
stretched with HKDF), else derived from SECRET_KEY with HKDF under its own label, so the
same SECRET_KEY never keys two things. Changing either key makes stored credentials
unreadable: they are entered again in the admin."""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

_LABEL = b"gatehouse repository credentials v1"


def _fernet() -> Fernet:
    given = str(getattr(settings, "GATEHOUSE_REPOSITORY_KEY", "") or "")
    if given:
        try:
            return Fernet(given.encode())
        except ValueError:
            material = given.encode()
    else:
        material = str(settings.SECRET_KEY).encode()
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_LABEL).derive(material)
    return Fernet(base64.urlsafe_b64encode(key))


def encrypt(secret: str) -> str:
    return _fernet().encrypt(secret.encode()).decode() if secret else ""


class CredentialUnreadable(Exception):
    pass


def decrypt(token: str) -> str:
    if not token:
        return ""
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken as exc:
        raise CredentialUnreadable("the repository's credential cannot be decrypted with the current key "
                                   "(GATEHOUSE_REPOSITORY_KEY or SECRET_KEY changed): enter it again in the admin") from exc
