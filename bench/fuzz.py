"""Fuzzing campaigns: runs each fuzz target (tests/fuzz/campaign.py) for N minutes and records
executions and findings in docs/fuzzing.md.

    nice -n 19 python bench/fuzz.py --minutes 30                 # every target, 30 minutes each
    nice -n 19 python bench/fuzz.py --minutes 10 --only graph,npy --record

The corpus of each target lives in WORKDIR/<target>/corpus (seeded from the zoo and the test data on
first use) and grows across runs; inputs that crash, leak, time out or run out of memory are saved in
WORKDIR/<target>/findings and listed. --record appends one row per target to bench/RESULTS-fuzz.json
and rewrites the table in docs/fuzzing.md from it. Exits 1 if any run found something.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fuzz import campaign  # noqa: E402

RESULTS = ROOT / "bench" / "RESULTS-fuzz.json"
DOC = ROOT / "docs" / "fuzzing.md"
BEGIN, END = "<!-- fuzz-results:begin -->", "<!-- fuzz-results:end -->"


def record(rows: list[dict]) -> None:
    runs = json.loads(RESULTS.read_text()) if RESULTS.exists() else []
    runs += rows
    RESULTS.write_text(json.dumps(runs, indent=1) + "\n")
    lines = ["| date | target | seconds | executions | exec/s | corpus | findings | command |",
             "| --- | --- | ---: | ---: | ---: | ---: | --- | --- |"]
    totals: dict[str, int] = {}
    for r in runs:
        totals[r["target"]] = totals.get(r["target"], 0) + r["executions"]
        lines.append(f"| {r['date']} | {r['target']} | {r['seconds']:.0f} | {r['executions']:,} | "
                     f"{r['executions'] / max(r['seconds'], 1):,.0f} | {r['corpus']} | "
                     f"{', '.join(r['findings']) or 'none'} | `{r['command']}` |")
    c_total = sum(n for t, n in totals.items() if campaign.BY_NAME[t].is_c)
    py_total = sum(n for t, n in totals.items() if not campaign.BY_NAME[t].is_c)
    lines += ["", "Executions per target, all recorded runs: "
              + ", ".join(f"{t} {n:,}" for t, n in totals.items())
              + f". C parsers: {c_total:,}; Python: {py_total:,}."]
    text = DOC.read_text()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(head + BEGIN + "\n" + "\n".join(lines) + "\n" + END + tail)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=1.0, help="per target")
    ap.add_argument("--only", default="", help="comma-separated targets: " + ",".join(campaign.BY_NAME))
    ap.add_argument("--jobs", type=int, default=1, help="libFuzzer -fork=N (keeps going after a finding)")
    ap.add_argument("--workdir", type=Path, default=ROOT / "build" / "fuzz")
    ap.add_argument("--record", action="store_true", help="append to bench/RESULTS-fuzz.json and docs/fuzzing.md")
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(campaign.BY_NAME)
    unknown = [n for n in names if n not in campaign.BY_NAME]
    if unknown:
        ap.error(f"unknown target(s) {', '.join(unknown)}; choose from {', '.join(campaign.BY_NAME)}")
    rows, failed = [], False
    for name in names:
        target = campaign.BY_NAME[name]
        result = campaign.run(target, args.workdir / name, args.minutes * 60, jobs=args.jobs)
        failed |= bool(result.findings or result.failure)
        cmd = f"nice -n 19 python bench/fuzz.py --minutes {args.minutes:g} --only {name}" + \
            (f" --jobs {args.jobs}" if args.jobs > 1 else "")
        print(f"{name:12s} {result.executions:>12,d} executions in {result.seconds:.0f} s "
              f"({result.executions / max(result.seconds, 1):,.0f}/s), corpus {result.corpus}, findings: "
              f"{', '.join(os.fspath(p) for p in result.findings) or 'none'}"
              f"{'; ' + result.failure if result.failure else ''}", flush=True)
        rows.append({"date": datetime.date.today().isoformat(), "target": name, "seconds": result.seconds,
                     "executions": result.executions, "corpus": result.corpus,
                     "findings": [p.name for p in result.findings] + ([result.failure] if result.failure else []),
                     "command": cmd})
    if args.record:
        record(rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
