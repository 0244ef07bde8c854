"""``omnistudio mcp``: the MCP tools over stdio for a local agent (one client, the model loaded here
on first use). stdout carries the protocol only; everything else goes to stderr."""

from __future__ import annotations

from pathlib import Path

from omnistudio.mcp.backend import LocalBackend
from omnistudio.mcp.folder import OutputFolder


def serve_stdio(backend: LocalBackend, folder: OutputFolder) -> None:
    """Answer the agent on stdin/stdout until it closes the stream."""
    # lazy: start-up (anyio, asyncio, mcp, pydantic)
    from omnistudio.mcp.tools import build_mcp

    folder.root.mkdir(parents=True, exist_ok=True)
    build_mcp(backend, folder).run("stdio")


def folder_from(value: Path | None) -> OutputFolder:
    # lazy: start-up (asyncio)
    from omnistudio.mcp.http import default_folder

    return OutputFolder(value if value is not None else default_folder())
