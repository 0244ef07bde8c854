"""Which engine a command renders through: the model in this process, or a speech server (``--server``).

The choice is made here, where a client is built, and nowhere else: the take pipeline, the studio and
the commands only ever see an :class:`~omnistudio.take.link.EngineLink`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from omnistudio.errors import UserError


def remote_link(server: str | None, api_key_file: Any = None) -> Any:
    """A RemoteEngine for ``server`` (checked, key read), or None when no server is given."""
    from omnistudio.take.remote import RemoteEngine
    from omnistudio.take.remote_conn import parse_server_url, read_api_key

    if not server:
        if api_key_file:
            raise UserError("--api-key-file needs --server URL")
        return None
    return RemoteEngine(parse_server_url(server), read_api_key(api_key_file))


def check_link_args(args: argparse.Namespace) -> Any:
    """The cheap checks of --server/--api-key-file (before anything loads); the remote link or None."""
    link = remote_link(getattr(args, "server", None), getattr(args, "api_key_file", None))
    if link is not None and getattr(args, "model", None):
        raise UserError("give either --server (the server's model renders) or --model, not both")
    return link


def open_link(args: argparse.Namespace, progress: Callable[[str], None] | None = None) -> Any:
    """The link a command renders through: the server's when --server is given, else a local engine."""
    link = check_link_args(args)
    if link is not None:
        if progress is not None:
            progress(f"connecting to {link.address}")
        info = link.wait_ready(progress)  # now: an unreachable server or a wrong key is one line, before any work
        if progress is not None:
            progress(f"server {link.address}: {info.model} on {info.device}")
        return link
    from omnistudio.commands.voice_args import engine_from_args
    from omnistudio.take.link import LocalEngine

    return LocalEngine(engine_from_args(args, progress=progress))
