"""Who may talk to the server: loopback by default; any other bind needs API keys.

``--api-key-file F`` holds one key per line (blank lines and ``#`` comments ignored). A request
must send ``Authorization: Bearer KEY``; keys are compared in constant time
(:func:`hmac.compare_digest`). A wrong or missing key gets 401 before anything is queued.
"""

from __future__ import annotations

import hmac
import ipaddress
from pathlib import Path

from omnistudio.checks import key_lines
from omnistudio.errors import UserError

OPEN_ROUTES = frozenset({"/health"})  # probes: no key needed, nothing rendered


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_keys(path: Path) -> tuple[bytes, ...]:
    keys = tuple(line.encode() for line in key_lines(path))
    if not keys:
        raise UserError(f"the API key file {path} has no key in it (one key per line)")
    if any(len(k) < 16 for k in keys):
        raise UserError(f"every key in {path} must be at least 16 characters")
    return keys


def check_bind(host: str, key_file: Path | None) -> tuple[bytes, ...]:
    """The keys to require (none on loopback without a key file); refuses an open non-loopback bind."""
    if key_file is None:
        if not is_loopback(host):
            raise UserError(f"refusing to listen on {host} without --api-key-file: only 127.0.0.1/::1 "
                            "may be served without keys")
        return ()
    return read_keys(key_file)


def authorised(keys: tuple[bytes, ...], header: str | None) -> bool:
    if not keys:
        return True
    scheme, _, token = (header or "").partition(" ")
    given = token.strip().encode()
    ok = False
    for key in keys:  # every key compared, in constant time each
        ok |= hmac.compare_digest(given, key)
    return ok and scheme.lower() == "bearer"
