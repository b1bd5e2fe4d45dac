"""Skips that cannot hide failures: in CI, every skip and xfail must match the reviewed allow-list.

Loaded by tests/conftest.py. Where the environment variable CI is true (.ci/run sets it, as CI services
do), a test reported skipped or xfailed whose reason matches no entry of tests/skip_allowlist.toml is
reported as failed instead, naming the reason and the file to review. Elsewhere (a developer's machine)
skips stay skips. This judges what actually happened at run time, so no form of skip escapes it (a
skip mark, pytest.skip or pytest.xfail in a body or fixture, importorskip, an empty parameter list).
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from needs import in_ci

ALLOWLIST = Path(__file__).resolve().parent / "skip_allowlist.toml"


@dataclass(frozen=True)
class Allowed:
    reason: re.Pattern
    test: re.Pattern | None
    why: str

    def covers(self, nodeid: str, reason: str) -> bool:
        return bool(self.reason.search(reason)) and (self.test is None or bool(self.test.search(nodeid)))


def load_allowlist(path: Path = ALLOWLIST) -> list[Allowed]:
    entries = tomllib.loads(path.read_text()).get("allow", [])
    out = []
    for n, entry in enumerate(entries, 1):
        if not entry.get("reason") or not entry.get("why", "").strip():
            raise ValueError(f"{path.name}: entry {n} needs both `reason` (a regular expression) and `why`")
        out.append(Allowed(re.compile(entry["reason"]), re.compile(entry["test"]) if entry.get("test") else None,
                           entry["why"]))
    return out


def skip_reason(report) -> str | None:
    """The reason of a skipped or xfailed report (None when it neither skipped nor xfailed)."""
    if not report.skipped:
        return None
    if hasattr(report, "wasxfail"):
        return re.sub(r"^reason: ", "", report.wasxfail)
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return re.sub(r"^Skipped: ", "", text)


def unreviewed(nodeid: str, reason: str, allowed: list[Allowed]) -> str | None:
    """The failure message for a skip that no entry covers; None when one does."""
    if any(a.covers(nodeid, reason) for a in allowed):
        return None
    return (f"skipped/xfailed in CI for a reason not on the reviewed allow-list: {reason!r}. Fix what the "
            f"skip hides, or add an entry (reason pattern, test pattern, why) to tests/{ALLOWLIST.name} "
            f"(docs/matrix.md, 'Skips').")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    reason = skip_reason(report)
    if reason is None or not in_ci():
        return
    message = unreviewed(item.nodeid, reason, _allowed(item.config))
    if message:
        report.outcome = "failed"
        report.longrepr = message
        if hasattr(report, "wasxfail"):
            del report.wasxfail


def _allowed(config) -> list[Allowed]:
    cached = getattr(config, "_byoc_skip_allowlist", None)
    if cached is None:
        cached = config._byoc_skip_allowlist = load_allowlist()
    return cached
