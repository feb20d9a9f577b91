"""A real MCP client (the official `mcp` Python SDK) against `ctxgate mcp` over stdio.

Usage: stdio_client.py REPO COMMAND [ARG...]. Starts COMMAND ARG... in REPO (as an MCP client
launches a server from its config), calls the tools, edits a file of REPO between two calls,
and prints one JSON document with what the client saw.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(repo: str, command: str, args: list[str]) -> None:
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ), cwd=repo)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            # No project and no budget: the folder, and the tool's default budget.
            first = await session.call_tool("get_context", {"query": "parse the config"})
            # An edit between two calls is in the next answer.
            with open(os.path.join(repo, "src", "refund.rs"), "w") as f:
                f.write("/// Gives unused tokens back to the ledger.\n"
                        "pub fn refund_unused_tokens(n: u64) -> u64 { n }\n")
            edited = await session.call_tool(
                "get_context", {"query": "refund unused tokens", "budget": 2000}
            )
            search = await session.call_tool("search_code", {"query": "render page"})
            count = await session.call_tool("count_tokens", {"text": "hello world"})
            unknown = await session.call_tool(
                "get_context", {"query": "x", "model": "no-such-model"}
            )
            projects = await session.call_tool("list_projects", {})
            required = {t.name: t.inputSchema.get("required", []) for t in tools.tools}
            print(json.dumps({
                "server": init.serverInfo.name,
                "tools": sorted(t.name for t in tools.tools),
                "required": required,
                "first_text": first.content[0].text,
                "first": first.structuredContent,
                "edited_text": edited.content[0].text,
                "edited": edited.structuredContent,
                "search": search.structuredContent,
                "count": count.structuredContent,
                "unknown_error": unknown.isError,
                "unknown": unknown.structuredContent,
                "projects": projects.structuredContent,
            }))


asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
