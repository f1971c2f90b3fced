"""``judge env ...``: list domains, show their tools, serve one over MCP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from pipelines.cli._common import EXIT_USAGE

env_app = typer.Typer(help="Executable environments: SQLite-backed API tools, document retrievers, MCP server.", no_args_is_help=True)

RootOpt = typer.Option(None, "--root", help="Folder of domain folders (default: the bundled environments).")


@env_app.command("list")
def list_cmd(root: Optional[Path] = RootOpt) -> None:
    """List the domains with their version and tool count (as their files state them; `env tools` validates)."""
    from pipelines.env import describe_environment, list_environments

    for name in list_environments(root):
        d = describe_environment(name, root)
        typer.echo(f"{name}\t{d['version']}\t{d['tools']} tools ({d['writes']} write)\t{d['documents']} documents")


@env_app.command("tools")
def tools_cmd(
    domain: str,
    as_json: bool = typer.Option(False, "--json", help="Print OpenAI function specs as JSON."),
    root: Optional[Path] = RootOpt,
) -> None:
    """Show a domain's tools."""
    from pipelines.env import load_environment

    try:
        env = load_environment(domain, root)
    except ValueError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(EXIT_USAGE) from exc
    if as_json:
        typer.echo(json.dumps([t.model_dump(mode="json", exclude_none=True) for t in env.tools], indent=2, ensure_ascii=False, sort_keys=True))
        return
    for t in env.tools:
        params = ", ".join(sorted(t.properties))
        typer.echo(f"{t.name}({params})\t[{t.source}, {t.side_effect}]\t{t.description}")


@env_app.command("serve")
def serve_cmd(
    domain: str,
    transport: str = typer.Option("stdio", "--transport", help="stdio or http (streamable HTTP at /mcp)."),
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8000, "--port"),
    shortlist: Optional[int] = typer.Option(None, "--shortlist", help="Shortlist mode with this k (automatic above 128 tools)."),
    root: Optional[Path] = RootOpt,
    token: Optional[str] = typer.Option(
        None, "--token", envvar="JUDGE_MCP_TOKEN", help="Bearer token required on every HTTP request (needed to bind anything but loopback)."
    ),
) -> None:
    """Serve a domain's tools over MCP (each session gets its own copy of the domain's state)."""
    from pipelines.env import load_environment
    from pipelines.env._mcp import TOKEN_ENV, is_loopback, serve

    if transport not in ("stdio", "http"):
        typer.echo("--transport must be stdio or http", err=True)
        raise typer.Exit(EXIT_USAGE)
    if transport == "http" and not token and not is_loopback(host):
        typer.echo(f"error: --token: binding {host} (not loopback) needs a bearer token: pass --token or set {TOKEN_ENV}", err=True)
        raise typer.Exit(EXIT_USAGE)
    try:
        load_environment(domain, root)
    except ValueError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(EXIT_USAGE) from exc
    serve(domain, transport=transport, host=host, port=port, shortlist=shortlist, root=root, token=token)  # type: ignore[arg-type]
