"""The MCP server (issue 27): the studio's tools for an LLM agent, on the official Python MCP SDK.

A client of the core like the server: :mod:`.tools` registers the tools on a FastMCP server, each a
thin call into the take pipeline, the finishing path, the speech check and the text front-end
(:mod:`.work`); :mod:`.running` runs a tool's work on a thread with progress notifications and a
cancel flag; :mod:`.folder` keeps every file inside the configured output folder; :mod:`.backend`
says which engine renders (a model loaded here for ``omnistudio mcp`` over stdio; the server's shared
link at ``/mcp`` of ``omnistudio serve``, mounted by :mod:`.http`).
"""
