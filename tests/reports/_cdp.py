"""A tiny Chrome DevTools Protocol client (over aiohttp's websocket) for the browser test.

It opens a page in headless Chromium and records every console message, uncaught exception,
log entry and network request, then evaluates expressions in the page.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reports._browser import FLAGS, find_chromium

_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")


@dataclass
class PageReport:
    console: list[dict[str, Any]] = field(default_factory=list)  # {"type", "text"}
    exceptions: list[str] = field(default_factory=list)
    log_entries: list[dict[str, Any]] = field(default_factory=list)  # {"level", "source", "text", "url"}
    requests: list[str] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def errors(self) -> list[str]:
        out = [f"console.{c['type']}: {c['text']}" for c in self.console if c["type"] in ("error", "assert")]
        out += [f"exception: {e}" for e in self.exceptions]
        out += [f"log {e['source']}: {e['text']}" for e in self.log_entries if e["level"] == "error"]
        return out


async def _inspect(
    ws_url: str, page_url: str, expressions: dict[str, str], actions: list[str | dict[str, Any]], until: Callable[[PageReport], bool] | None
) -> PageReport:
    import aiohttp

    report = PageReport()
    ids = iter(range(1, 1_000_000))
    pending: dict[int, asyncio.Future] = {}
    loaded = asyncio.Event()

    async with aiohttp.ClientSession() as http, http.ws_connect(ws_url, max_msg_size=0) as ws:

        async def reader() -> None:
            async for msg in ws:
                data = json.loads(msg.data)
                if "id" in data and data["id"] in pending:
                    pending.pop(data["id"]).set_result(data)
                    continue
                method, p = data.get("method"), data.get("params", {})
                if method == "Runtime.consoleAPICalled":
                    text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
                    report.console.append({"type": p.get("type"), "text": text})
                elif method == "Runtime.exceptionThrown":
                    d = p.get("exceptionDetails", {})
                    report.exceptions.append(d.get("exception", {}).get("description") or d.get("text", ""))
                elif method == "Log.entryAdded":
                    e = p.get("entry", {})
                    report.log_entries.append({k: e.get(k) for k in ("level", "source", "text", "url")})
                elif method == "Network.requestWillBeSent":
                    report.requests.append(p.get("request", {}).get("url", ""))
                elif method == "Page.loadEventFired":
                    loaded.set()

        task = asyncio.create_task(reader())

        async def send(method: str, params: dict | None = None, session: str | None = None) -> dict:
            i = next(ids)
            fut = asyncio.get_running_loop().create_future()
            pending[i] = fut
            msg: dict[str, Any] = {"id": i, "method": method, "params": params or {}}
            if session:
                msg["sessionId"] = session
            await ws.send_str(json.dumps(msg))
            res = await asyncio.wait_for(fut, 60)
            if "error" in res:
                raise RuntimeError(f"CDP {method}: {res['error']}")
            return res.get("result", {})

        target = (await send("Target.createTarget", {"url": "about:blank"}))["targetId"]
        session = (await send("Target.attachToTarget", {"targetId": target, "flatten": True}))["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            await send(f"{domain}.enable", session=session)
        await send("Page.navigate", {"url": page_url}, session=session)
        await asyncio.wait_for(loaded.wait(), 60)
        for action in actions:
            if isinstance(action, dict):  # a raw DevTools command, e.g. Input.dispatchKeyEvent (browser-level with "browser": True)
                await send(action["method"], action.get("params"), session=None if action.get("browser") else session)
            else:
                await send("Runtime.evaluate", {"expression": action, "returnByValue": True}, session=session)
        for name, expr in expressions.items():
            res = await send("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session=session)
            report.values[name] = res.get("result", {}).get("value")
        # settle: late events (Log.entryAdded is delivered asynchronously) must be read before
        # judging "no errors": poll until no new event arrived for 3 round trips (at most ~6 s),
        # or until ``until`` holds
        quiet, seen = 0, -1
        for _ in range(30):
            await send("Runtime.evaluate", {"expression": "0"}, session=session)
            count = len(report.console) + len(report.exceptions) + len(report.log_entries) + len(report.requests)
            if until is not None and until(report):
                break
            quiet = quiet + 1 if count == seen else 0
            seen = count
            if quiet >= 3 and until is None:
                break
            await asyncio.sleep(0.2)
        with contextlib.suppress(Exception):  # the browser may close the socket before answering
            await send("Browser.close")
        task.cancel()
    return report


def inspect_page(
    html: Path,
    expressions: dict[str, str],
    actions: list[str | dict[str, Any]] | None = None,
    timeout: float = 90,
    until: Callable[[PageReport], bool] | None = None,
) -> PageReport:
    binary = find_chromium()
    assert binary is not None
    # Chromium's helper processes may still write to the profile while it is removed: the whole
    # process group is stopped first, and a leftover file never fails the test (a flake seen under load)
    with tempfile.TemporaryDirectory(prefix="report-cdp-", ignore_cleanup_errors=True) as profile:
        proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0", "--remote-allow-origins=*", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            ws_url = None
            assert proc.stderr is not None
            for line in proc.stderr:
                m = _LISTENING.search(line)
                if m:
                    ws_url = m.group(1)
                    break
            if ws_url is None:
                raise RuntimeError("chromium did not print its DevTools endpoint")
            # keep draining stderr: a full pipe would stall chromium mid-test (a flaky hang)
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
            return asyncio.run(asyncio.wait_for(_inspect(ws_url, Path(html).resolve().as_uri(), expressions, actions or [], until), timeout))
        finally:
            _stop_group(proc)


def _stop_group(proc: subprocess.Popen) -> None:
    """Terminate Chromium and every helper process it started (they share its session)."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue
