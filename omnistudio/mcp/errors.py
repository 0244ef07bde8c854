"""Tool errors: the one line the CLI prints after ``omnistudio: error:``, as an MCP tool error
(``isError``), never a traceback, never the SDK's ``Error executing tool`` prefix."""

from __future__ import annotations

from typing import Any

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import ValidationError

from omnistudio.errors import UserError, describe, first_line, os_error_line
from omnistudio.protocol.base import first_problem


def error_line(exc: BaseException) -> str:
    """What the CLI says for ``exc`` (a UserError's line, an OS failure's line), in one line."""
    if isinstance(exc, UserError):
        return first_line(exc)
    if isinstance(exc, ValidationError):  # the tool's typed arguments: "field: what is wrong"
        return first_problem(exc, "arguments")
    line = os_error_line(exc)
    if line is not None:
        return line
    return f"internal error: {describe(exc)}"


def tool_error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], isError=True)


class StudioMCP(FastMCP[Any]):
    """FastMCP whose tool errors are the CLI's one-line messages."""

    async def call_tool(self, name: str, arguments: dict[str, object]) -> Any:
        try:
            return await super().call_tool(name, arguments)
        except ToolError as exc:
            cause = exc.__cause__
            if cause is None:  # the SDK's own (an unknown tool): its line as it is
                return tool_error(first_line(exc))
            return tool_error(error_line(cause))
