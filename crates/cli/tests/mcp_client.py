"""A real MCP client (the `mcp` Python SDK) driving `transcope mcp` for the tests in
mcp.rs.

Reads a plan on stdin: {"command", "args", "env", "calls": [{"name", "arguments"}]};
starts the server over stdio, initializes, lists the tools, makes each call in order on
the one connection, and prints one JSON object: {"server": the server's name, "tools":
[each tool as listed, wire names], "calls": [{"is_error", "text": [each text content]}]}.
A call that fails at the protocol level is {"protocol_error": message}.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def wire(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def run(plan):
    params = StdioServerParameters(
        command=plan["command"], args=plan["args"], env=plan.get("env")
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = wire(await session.initialize())
            listed = wire(await session.list_tools())
            out = {
                "server": init["serverInfo"]["name"],
                "tools": listed["tools"],
                "calls": [],
            }
            for call in plan["calls"]:
                try:
                    r = wire(await session.call_tool(call["name"], call.get("arguments")))
                except Exception as e:  # a protocol error, reported for the test to see
                    out["calls"].append({"protocol_error": str(e)})
                    continue
                out["calls"].append(
                    {
                        "is_error": bool(r.get("isError", False)),
                        "text": [c["text"] for c in r.get("content", []) if c.get("type") == "text"],
                    }
                )
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run(json.load(sys.stdin)))))
