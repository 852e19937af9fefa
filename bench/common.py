"""Shared pieces of the benchmarks: the result row, timing statistics, machine info, writers.

Every benchmark returns ``Row``s. A row carries its own baseline, measured in the
same run (never a number from another machine or another day), and the ratio
``value / baseline``. ``met`` is None for a figure that has no target (it is
reported for context only).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
"""The repository root: scenarios/ and cassettes/ are read from here, whatever the cwd."""
RESULTS_DIR = ROOT / "bench" / "results"

PACKAGES = ("google-adk", "google-genai", "duckdb", "SQLAlchemy", "aiosqlite", "vcrpy", "aiohttp", "httpx",
            "pydantic", "rich")


@dataclass
class Row:
    """One figure: what was measured, against what, and whether it meets its target."""

    bench: str  # suite | store | state | executor | scale | contention
    name: str
    value: float
    unit: str
    baseline: float | None = None  # measured in the same run
    baseline_name: str = ""  # what the baseline is
    target: str = ""  # human-readable target, e.g. "<= 1.3x"
    met: bool | None = None  # None: informational, no target
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or self.baseline == 0 or self.value is None:
            return None
        return self.value / self.baseline

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ratio"] = self.ratio
        return data


@dataclass
class BenchResult:
    """What one benchmark module hands back: rows, free-form details, and files it wrote."""

    rows: list[Row] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0


# --- statistics ---------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation between closest ranks."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def geomean(values: Sequence[float]) -> float:
    values = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def loglog_slope(x1: float, y1: float, x2: float, y2: float) -> float:
    """The exponent k of y ~ x**k between two points (1.0 = linear)."""
    return math.log(y2 / y1) / math.log(x2 / x1)


@contextlib.contextmanager
def stopwatch() -> Iterator[Callable[[], float]]:
    started = time.perf_counter()
    end: list[float] = []
    yield lambda: (end[0] if end else time.perf_counter()) - started
    end.append(time.perf_counter())


# --- quiet runs ---------------------------------------------------------------------------


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Silence the agent's and ADK's logging and warnings while a benchmark drives them.

    Expected failures (scripted HTTP 500s) log tracebacks; they are part of the
    scenario, not news, and printing them would cost time and bury the table.
    """
    root = logging.getLogger()
    previous = root.level
    root.setLevel(logging.CRITICAL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            yield
        finally:
            root.setLevel(previous)


# --- machine ------------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError):
        pass
    return None


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], check=False, cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def machine_info() -> dict[str, Any]:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "ram_gib": _ram_gib(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "python_impl": platform.python_implementation(),
        "packages": versions,
        "git_commit": _git("rev-parse", "--short", "HEAD"),
        "git_dirty": bool(status) if status is not None else None,
        "ci": bool(os.environ.get("CI")),
    }


def machine_line(info: dict[str, Any]) -> str:
    return (f"{info['cpu_model']}, {info['usable_cores']}/{info['cores']} cores, {info['ram_gib']} GiB RAM, "
            f"{info['os']}, Python {info['python']}")


# --- formatting -----------------------------------------------------------------------------


def fmt_value(value: float | None, unit: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if unit in ("s",):
        return f"{value:.3f} s" if value < 10 else f"{value:.1f} s"
    if unit == "ms":
        return f"{value:.3f} ms" if value < 1 else f"{value:.2f} ms" if value < 100 else f"{value:.0f} ms"
    if unit == "B":
        return f"{value:,.0f} B"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "":
        return f"{value:.3g}"
    return f"{value:.3g} {unit}"


def fmt_ratio(ratio: float | None) -> str:
    return "—" if ratio is None else f"{ratio:.2f}x"


def fmt_met(met: bool | None) -> str:
    return "info" if met is None else ("yes" if met else "NO")


def rows_table_markdown(rows: Sequence[Row]) -> str:
    lines = ["| bench | figure | value | baseline (same run) | ratio | target | met |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        baseline = fmt_value(row.baseline, row.unit) if row.baseline is not None else "—"
        if row.baseline_name and row.baseline is not None:
            baseline = f"{baseline} ({row.baseline_name})"
        name = row.name + (f" — {row.note}" if row.note else "")
        lines.append(f"| {row.bench} | {name} | {fmt_value(row.value, row.unit)} | {baseline} | "
                     f"{fmt_ratio(row.ratio)} | {row.target or '—'} | {fmt_met(row.met)} |")
    return "\n".join(lines)


def print_rows(rows: Sequence[Row], *, title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, show_lines=False)
    for column, justify in (("bench", "left"), ("figure", "left"), ("value", "right"), ("baseline (same run)", "right"),
                            ("ratio", "right"), ("target", "left"), ("met", "center")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        baseline = fmt_value(row.baseline, row.unit) if row.baseline is not None else "—"
        if row.baseline_name and row.baseline is not None:
            baseline += f" [dim]({row.baseline_name})[/dim]"
        met = {None: "[dim]info[/dim]", True: "[green]yes[/green]", False: "[bold red]NO[/bold red]"}[row.met]
        name = row.name + (f" [dim]{row.note}[/dim]" if row.note else "")
        table.add_row(row.bench, name, fmt_value(row.value, row.unit), baseline, fmt_ratio(row.ratio),
                      row.target or "—", met)
    Console(width=max(160, Console().width)).print(table)


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def python_cmd() -> list[str]:
    return [sys.executable]
