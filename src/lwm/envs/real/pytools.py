"""An MCP server whose tools are real Python APIs: ``python -m lwm.envs.real.pytools GROUP``.

One group per server (``lwm.envs.real.pytools_catalog``: a module's functions, or the methods of one object made
at start, so a session's calls change what later calls see). It answers as servers built on the SDK's
``MCPServer`` do: a string as text, anything else as JSON (a container indented), an exception as an error
result naming it. Each call runs under a deadline. The MCP environment starts it sandboxed
(``MCPEnv(preset="pytools:GROUP")``); its server name is ``pytools-PACKAGE``, so an evaluation that holds out
a source holds out the whole package.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import datetime
import io
import json
import math
import signal
import sys
from collections.abc import Collection, Iterator, Mapping
from collections.abc import Set as AbstractSet
from importlib import metadata
from itertools import islice
from typing import Any

from lwm.envs.real.pytools_catalog import Group, PyTool, available, call_tool

CALL_SECONDS = 5
ITEMS = 100
"""Items of an iterator a result lists (``itertools.count()`` never ends)."""
TEXT_CHARS = 8000


class CallTimeout(Exception):
    pass


def plain(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON-able data: containers and iterators as lists (iterators cut at ``ITEMS``), arrays
    through ``tolist``, bytes as text, numbers that JSON lacks and other objects as their ``str``."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if depth > 6:
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode()
        except UnicodeDecodeError:
            return base64.b64encode(bytes(value)).decode()
    if hasattr(value, "tolist") and callable(value.tolist):  # numpy arrays and scalars
        return plain(value.tolist(), depth + 1)
    if hasattr(value, "_asdict"):  # a named tuple: its fields by name
        return plain(value._asdict(), depth)
    if isinstance(value, Mapping):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, depth + 1) for v in value]
    if isinstance(value, AbstractSet):  # sets, frozensets and dict key views
        items = [plain(v, depth + 1) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(value, Collection):  # deques, dict value views, arrays of the standard library
        return [plain(v, depth + 1) for v in islice(value, ITEMS)]
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, Iterator):
        return [plain(v, depth + 1) for v in islice(value, ITEMS)]
    return str(value)


def render(value: Any) -> str:
    """A result as the tool's answer text."""
    if isinstance(value, str):
        return value[:TEXT_CHARS]
    data = plain(value)
    if isinstance(data, str):
        return data[:TEXT_CHARS]
    records = isinstance(data, dict) or isinstance(data, list) and any(isinstance(v, dict) for v in data)
    return json.dumps(data, ensure_ascii=False, indent=2 if records else None)[:TEXT_CHARS]


def _alarm(signum: int, frame: Any) -> None:
    raise CallTimeout(f"the call took longer than {CALL_SECONDS} s")


def run_call(tool: PyTool, arguments: dict[str, Any]) -> tuple[str, bool]:
    """(answer text, is_error) for one call, under the deadline. What the function prints is part of its answer
    (``sympy.print_latex`` returns nothing and prints the LaTeX); it must not reach the protocol's stdout."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CALL_SECONDS)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            result = call_tool(tool, arguments)
        shown = printed.getvalue().rstrip("\n")
        if not shown:
            return render(result), False
        return (shown if result is None else f"{shown}\n{render(result)}"), False
    except CallTimeout as exc:
        return f"Error: {exc}", True
    except Exception as exc:  # noqa: BLE001 - the function's own exception is the tool's answer
        return f"Error: {type(exc).__name__}: {exc}"[:TEXT_CHARS], True
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def instructions(group: Group) -> str:
    if group.make is not None:
        return f"Tools on {group.about}, made empty when the session starts; each call acts on it."
    return f"The public functions of Python's `{group.module}` module, each as a tool."


def version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return f"python {sys.version_info.major}.{sys.version_info.minor}"


async def serve(group: Group) -> None:
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    tools = {tool.name: tool for tool in group.tools()}
    listed = [types.Tool.model_validate(tool.listing()) for tool in tools.values()]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = tools.get(params.name)
        if tool is None:
            text, error = f"Error: unknown tool {params.name!r}", True
        else:
            text, error = run_call(tool, dict(params.arguments or {}))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)

    server = Server(f"pytools-{group.package}", version=version(group.package), title=group.name,
                    instructions=instructions(group), on_list_tools=list_tools, on_call_tool=call)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lwm.envs.real.pytools", description=__doc__.split("\n")[0])
    parser.add_argument("group", nargs="?", help="the group to serve")
    parser.add_argument("--list", action="store_true", help="list the groups this interpreter can serve")
    args = parser.parse_args(argv)
    found, missing = available(None if args.list or not args.group else [args.group])
    if args.list or not args.group:
        for name, group in found.items():
            print(f"{name}\t{group.package}\t{len(group.tools())} tools")
        for name, why in missing.items():
            print(f"{name}\t(not available: {why})", file=sys.stderr)
        return
    if args.group not in found:
        parser.error(f"group {args.group!r} cannot be served: {missing[args.group]}")
    asyncio.run(serve(found[args.group]))


if __name__ == "__main__":
    main()
