"""Tool sources for the runner: bundled environments in-process, or any MCP server."""

from pipelines.runner.tools._base import ToolOutcome, ToolSession, ToolSource, failure, render, success
from pipelines.runner.tools.env import EnvToolSource
from pipelines.runner.tools.mcp import MCPToolSource

__all__ = ["EnvToolSource", "MCPToolSource", "ToolOutcome", "ToolSession", "ToolSource", "failure", "render", "success"]
