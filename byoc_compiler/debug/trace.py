"""Chrome trace-event JSON of a profile: open it in Perfetto (ui.perfetto.dev) or chrome://tracing.

One process per build, one lane (thread) per target: `host` for host kernels, one per target that
runs regions; lane 0 holds one event for the whole run. Every step is a complete event ("ph": "X") placed at its median start within the run
with its median duration (microseconds, as the format wants), with the step number, function, ops
and GFLOP/s in its args. Lanes are named with "thread_name" metadata events.
"""
from __future__ import annotations

import json
from pathlib import Path

REQUIRED = ("name", "ph", "pid", "tid")      # every event; complete events ("X") also ts and dur


def trace_events(profiles) -> list[dict]:
    events = []
    for pid, prof in enumerate(profiles, start=1):
        events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": prof.label}})
        events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "whole run"}})
        lanes: dict[str, int] = {}
        for s in prof.steps:
            if s.target not in lanes:
                lanes[s.target] = len(lanes) + 1
                events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": lanes[s.target],
                               "args": {"name": s.target}})
            args = {"step": s.step, "function": s.name, "ops": s.what, "median_ms": s.ms}
            if s.gflops:
                args["gflops"] = round(s.gflops, 3)
            events.append({"name": s.what if s.target == "host" else s.name, "cat": s.target, "ph": "X",
                           "ts": round(s.start_ms * 1e3, 3), "dur": round(s.ms * 1e3, 3),
                           "pid": pid, "tid": lanes[s.target], "args": args})
        events.append({"name": "run", "cat": "run", "ph": "X", "ts": 0.0, "dur": round(prof.run_ms * 1e3, 3),
                       "pid": pid, "tid": 0, "args": {"median_ms": prof.run_ms, "repeat": prof.repeat}})
    return events


def write_trace(path, profiles) -> Path:
    path = Path(path)
    path.write_text(json.dumps({"traceEvents": trace_events(profiles), "displayTimeUnit": "ms"}, indent=1))
    return path


def validate_trace(data: dict) -> list[str]:
    """Problems with a loaded trace (the parts of the trace-event format we write); empty when valid."""
    problems = []
    events = data.get("traceEvents") if isinstance(data, dict) else None
    if not isinstance(events, list):
        return ["no traceEvents list"]
    for i, e in enumerate(events):
        missing = [k for k in REQUIRED if k not in e]
        if missing:
            problems.append(f"event {i} lacks {', '.join(missing)}")
        elif e["ph"] == "X" and not all(isinstance(e.get(k), (int, float)) and e[k] >= 0 for k in ("ts", "dur")):
            problems.append(f"event {i}: a complete event needs numbers ts >= 0 and dur >= 0 (microseconds)")
        elif e["ph"] == "M" and not isinstance(e.get("args", {}).get("name"), str):
            problems.append(f"event {i}: a metadata event needs args.name")
        elif e["ph"] not in ("X", "M"):
            problems.append(f"event {i}: phase {e['ph']!r} is not one we write")
    return problems
