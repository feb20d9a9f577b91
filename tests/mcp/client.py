"""A real MCP client (the official `mcp` Python SDK) against ctxgate's /mcp endpoint.

Usage: client.py URL API_KEY PROJECT. Prints one JSON document with what the client saw:
the server's info, the tools listed, and the results of calling them.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


async def main(url: str, key: str, project: str) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    async with streamablehttp_client(url, headers=headers) as (read, write, _):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            ctx = await session.call_tool(
                "get_context",
                {"project": project, "query": "how does the quota ledger reserve tokens", "budget": 1500},
            )
            count = await session.call_tool("count_tokens", {"text": "hello world", "model": "gpt-4o"})
            missing = await session.call_tool(
                "get_context", {"project": "no-such-project", "query": "x", "budget": 100}
            )
            turn = {"project": project, "query": "continuation tokens", "budget": 1500, "session": "mcp-turns"}
            first_turn = await session.call_tool("get_context", turn)
            second_turn = await session.call_tool("get_context", turn)
            projects = await session.call_tool("list_projects", {})
            # No budget: the tool's default (a quarter of the window, capped for MCP clients).
            # The SDK checks every successful result against the tool's outputSchema.
            large = await session.call_tool(
                "get_context", {"project": project, "query": "quota ledger", "model": "gpt-4.1"}
            )
            small = await session.call_tool(
                "get_context", {"project": project, "query": "quota ledger", "model": "gpt-4"}
            )
            search = await session.call_tool("search_code", {"project": project, "query": "quota ledger"})
            print(json.dumps({
                "server": init.serverInfo.name,
                "protocol": init.protocolVersion,
                "tools": sorted(t.name for t in tools.tools),
                "context_text": ctx.content[0].text,
                "context": ctx.structuredContent,
                "context_error": ctx.isError,
                "count": count.structuredContent,
                "missing_error": missing.isError,
                "missing": missing.structuredContent,
                "projects": projects.structuredContent,
                "first_turn": first_turn.structuredContent,
                "second_turn": second_turn.structuredContent,
                "second_turn_text": second_turn.content[0].text,
                "large": large.structuredContent,
                "large_text": large.content[0].text,
                "small": small.structuredContent,
                "search_error": search.isError,
                "search": search.structuredContent,
                "annotations": {t.name: t.annotations.readOnlyHint for t in tools.tools},
                "output_schemas": sorted(t.name for t in tools.tools if t.outputSchema),
            }))


asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
