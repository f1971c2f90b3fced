"""Reading throughput of the BFCL result and OpenTelemetry readers, on generated files.

- BFCL: N result lines (half prompt-mode Python call lists, half JSON as function-calling handlers
  write them; one in 20 unparseable), read into trajectories: lines/s.
- OTel: an OTLP JSONL export of T traces, each a conversation of 3 chat spans (full history resent
  on every call, as most frameworks do) and 2 tool spans: traces/s, spans/s, and the peak memory
  of reading it (the reader holds all spans of the file: a trace may be split across lines).

Run: .venv/bin/python bench/bench_readers.py [bfcl_lines] [otel_traces]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def bfcl_file(path: Path, n: int) -> None:
    with open(path, "w") as fh:
        for i in range(n):
            if i % 20 == 19:
                result = "I need more information to answer that."
            elif i % 2:
                result = f"[calculate_triangle_area(base={i}, height=5, unit='units'), math.hypot(x={i}.5, y=[1, 2, 3])]"
            else:
                result = json.dumps([{"name": "spotify.play", "arguments": {"artist": f"artist {i}", "duration": 20}}])
            fh.write(json.dumps({"id": f"simple_{i}", "result": result, "input_token_count": 400, "output_token_count": 30, "latency": 1.5}) + "\n")


def _attr(key: str, value: str | int) -> dict:
    return {"key": key, "value": {"intValue": str(value)} if isinstance(value, int) else {"stringValue": value}}


def otel_file(path: Path, traces: int) -> int:
    spans_written = 0
    t0 = 1_760_000_000_000_000_000
    with open(path, "w") as fh:
        for t in range(traces):
            trace = f"{t:032x}"
            history = [{"role": "user", "parts": [{"type": "text", "content": f"Weather in city {t} and city {t + 1}?"}]}]
            spans = []
            for k in range(3):
                start = t0 + t * 10**10 + k * 10**9
                if k < 2:
                    out = [
                        {
                            "role": "assistant",
                            "parts": [{"type": "tool_call", "id": f"c{t}-{k}", "name": "get_weather", "arguments": {"city": f"city {t + k}"}}],
                        }
                    ]
                else:
                    out = [{"role": "assistant", "parts": [{"type": "text", "content": "Rain in both."}]}]
                attributes = [
                    _attr("gen_ai.operation.name", "chat"),
                    _attr("gen_ai.request.model", "m"),
                    _attr("gen_ai.usage.input_tokens", 100 + k),
                    _attr("gen_ai.input.messages", json.dumps(history)),
                    _attr("gen_ai.output.messages", json.dumps(out)),
                ]
                spans.append({"traceId": trace, "spanId": f"{k:016x}", "name": "chat m", "startTimeUnixNano": str(start), "attributes": attributes})
                if k < 2:
                    tool = [_attr("gen_ai.operation.name", "execute_tool"), _attr("gen_ai.tool.name", "get_weather"), _attr("gen_ai.tool.call.id", f"c{t}-{k}")]
                    tool.append(_attr("gen_ai.tool.call.result", "rain"))
                    spans.append(
                        {
                            "traceId": trace,
                            "spanId": f"{k + 8:016x}",
                            "name": "execute_tool get_weather",
                            "startTimeUnixNano": str(start + 5 * 10**8),
                            "attributes": tool,
                        }
                    )
                    history = [*history, *out, {"role": "tool", "parts": [{"type": "tool_call_response", "id": f"c{t}-{k}", "response": "rain"}]}]
            spans_written += len(spans)
            fh.write(json.dumps({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}]}]}) + "\n")
    return spans_written


def timed(read) -> tuple[float, int]:
    best, count = float("inf"), 0
    for _ in range(3):
        start = time.perf_counter()
        count = sum(1 for item in read() if item.trajectory is not None)
        best = min(best, time.perf_counter() - start)
    return best, count


def main() -> None:
    from pipelines.ingest import iter_trajectories

    lines = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    traces = int(sys.argv[2]) if len(sys.argv) > 2 else 2_000
    with tempfile.TemporaryDirectory() as tmp:
        bfcl = Path(tmp) / "BFCL_v3_simple_result.json"
        bfcl_file(bfcl, lines)
        seconds, read = timed(lambda: iter_trajectories(bfcl))
        print(f"BFCL results: {read} of {lines} lines read in {seconds:.2f} s (best of 3): {lines / seconds:,.0f} lines/s")

        otel = Path(tmp) / "traces.jsonl"
        spans = otel_file(otel, traces)
        size = otel.stat().st_size
        seconds, read = timed(lambda: iter_trajectories(otel))
        print(
            f"OTel OTLP JSONL: {read} trajectories from {traces} traces / {spans} spans ({size / 2**20:.1f} MiB) in {seconds:.2f} s: "
            f"{traces / seconds:,.0f} traces/s, {spans / seconds:,.0f} spans/s"
        )
        tracemalloc.start()
        for _ in iter_trajectories(otel):
            pass
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"OTel peak memory while reading: {peak / 2**20:.1f} MiB = {peak / size:.1f}x the file (all spans are held: a trace may span lines)")


if __name__ == "__main__":
    main()
