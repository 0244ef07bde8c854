"""The server's API key check on its own (the fast tier): the whole key, in constant time, nothing less and
nothing more; a bearer token only."""

from __future__ import annotations

import pytest

from omnistudio.server.auth import authorised

KEY = b"k3y-0123456789abcdef-secret"
OTHER = b"zz-another-key-of-the-file"


@pytest.mark.parametrize("header", [
    f"Bearer {KEY.decode()[:8]}",  # the key's prefix
    f"Bearer {KEY.decode()[:-1]}",  # one character short
    f"Bearer {KEY.decode()}x",  # the key with more after it
    f"Bearer {KEY.decode()[:8]}-something-else-entirely",  # sharing its first 8 characters
    f"Bearer {KEY.decode().upper()}",
    f"Basic {KEY.decode()}",  # not a bearer token
    KEY.decode(),  # no scheme
    "Bearer ",
    "",
])
def test_anything_but_a_whole_key_is_refused(header: str) -> None:
    assert not authorised((OTHER, KEY), header)


def test_a_whole_key_is_taken_whichever_line_of_the_file_it_is() -> None:
    assert authorised((OTHER, KEY), f"Bearer {KEY.decode()}") and authorised((OTHER, KEY), f"bearer {OTHER.decode()}")
    assert authorised((), None)  # no keys: a loopback server without a key file
