"""What every benchmark report starts with: the machine, the library versions, and the markdown
header line that states both, so figures can be judged and compared across runs."""
from __future__ import annotations

import os
import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

__all__ = ["machine", "versions", "machine_line"]

# Benchmarks time the optimized code: a first load here waits for it, as before quick first builds
# (mb_sim.codegen.tiers); bench_cold.py measures both kinds of first load on its own.
os.environ.setdefault("MB_SIM_FIRST_BUILD", "optimized")


def machine(compiler: bool = False) -> dict:
    """CPU model, cores, load average now, platform and Python (and the C compiler's first line)."""
    cpu = "unknown"
    try:
        cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name")), cpu)
    except OSError:
        pass
    out = {"cpu": cpu, "cores": len(os.sched_getaffinity(0)), "load_average_at_start": os.getloadavg(),
           "platform": platform.platform(), "python": platform.python_version()}
    if compiler:
        try:
            out["compiler"] = subprocess.run([os.environ.get("CC", "cc"), "--version"], capture_output=True,
                                             text=True, check=False).stdout.splitlines()[0]
        except (OSError, IndexError):
            out["compiler"] = "unknown"
    return out


def versions(names: tuple[str, ...]) -> dict:
    """The installed version of each distribution in `names` (None where it is not installed)."""
    out = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def machine_line(report: dict) -> str:
    """'Machine: ...' with the load average at the start and end and the run's length."""
    m = report["machine"]
    compiler = f", {m['compiler']}" if "compiler" in m else ""
    return (f"Machine: {m['cpu']}, {m['cores']} cores ({m['platform']}, Python {m['python']}{compiler}); "
            f"load average (1 min) {m['load_average_at_start'][0]:.1f} at the start, "
            f"{m['load_average_at_end'][0]:.1f} at the end; {report['wall_seconds']:.0f} s in all.")
