"""The memory limit a solve or a simulation plans for, and what the devices report free.

``memory_limit`` (per device) is None, the default: ``MEMORY_FRACTION`` of the memory free on
the device (an accelerator's ``memory_stats()``: ``bytes_limit - bytes_in_use``; on CPU the
system's available memory, ``MemAvailable``, shared by the process's CPU devices); an int or
float number of bytes; or a string such as ``"2GB"``, ``"1.5 GiB"``, ``"512MiB"`` or ``"50%"``
(of the free memory).
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from project.errors import MemoryPlanError
from project.solver.memory import format_bytes

# The share of the free device memory a plan may fill by default: the rest absorbs what the
# prediction does not count (XLA's scratch, the runtime) and its error (docs/tuning.md).
MEMORY_FRACTION = 0.8
_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_PATTERN = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z%]*)\s*$", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class MemoryLimit:
    """A per-device memory limit in bytes and where it came from (for messages)."""

    bytes: int | None
    source: str


def memory_limit_of(value: Any, *, devices: Sequence[Any]) -> MemoryLimit:
    """Return the per-device limit ``value`` stands for (see the module docstring).

    Raises ``MemoryPlanError`` for a value that is not a positive number of bytes, a size
    string or a percentage.
    """
    if value is None or (isinstance(value, str) and value.strip().endswith("%")):
        share = MEMORY_FRACTION if value is None else _percentage(value)
        free = free_memory(devices)
        if free is None:
            return MemoryLimit(bytes=None, source="none: the device reports no free memory")
        return MemoryLimit(
            bytes=int(share * free), source=f"{share:.0%} of the {format_bytes(free)} free"
        )
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        msg = (
            f"memory_limit must be None, a number of bytes or a string such as '2GB', "
            f"'1.5 GiB' or '50%', got {value!r} of type {type(value).__name__}."
        )
        raise MemoryPlanError(msg)
    size = _parse_size(value) if isinstance(value, str) else float(value)
    if not math.isfinite(size) or size < 1:
        msg = (
            f"memory_limit must be a positive, finite number of bytes, got {value!r}. Give "
            "e.g. 2_000_000_000, '2GB' or '50%', or None for "
            f"{MEMORY_FRACTION:.0%} of the free device memory."
        )
        raise MemoryPlanError(msg)
    return MemoryLimit(bytes=int(size), source="memory_limit")


def _percentage(value: str) -> float:
    text = value.strip()[:-1].strip()
    try:
        share = float(text) / 100
    except ValueError:
        share = math.nan
    if not (math.isfinite(share) and 0 < share <= 1):
        msg = f"memory_limit {value!r}: a percentage must lie in (0%, 100%] of the free memory."
        raise MemoryPlanError(msg)
    return share


def _parse_size(value: str) -> float:
    match = _PATTERN.match(value)
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        msg = (
            f"memory_limit {value!r} is not a size: give a number and a unit of B, kB, MB, GB, "
            "TB (powers of 1000), KiB, MiB, GiB, TiB (powers of 1024), e.g. '2GB' or "
            "'1.5 GiB', or a percentage of the free memory such as '50%'."
        )
        raise MemoryPlanError(msg)
    return float(match.group(1)) * _UNITS[unit]


def free_memory(devices: Sequence[Any]) -> int | None:
    """Return the memory free for one device's arrays, or None where nothing reports it.

    Accelerators: ``bytes_limit - bytes_in_use`` of ``memory_stats()`` (the least over the
    devices). CPU devices share the host's memory: its available memory over their number.
    """
    stats = [_stats(d) for d in devices]
    if all(s and "bytes_limit" in s for s in stats):
        return min(s["bytes_limit"] - s.get("bytes_in_use", 0) for s in stats)
    host = _host_available()
    cpu = sum(getattr(d, "platform", "") == "cpu" for d in devices)
    return None if host is None or not cpu else host // cpu


def device_peak(devices: Iterable[Any]) -> int | None:
    """Return the largest ``peak_bytes_in_use`` of ``devices`` (None where not reported)."""
    peaks = [s.get("peak_bytes_in_use") for s in map(_stats, devices) if s]
    peaks = [p for p in peaks if p is not None]
    return max(peaks) if peaks else None


def _stats(device: Any) -> dict[str, int] | None:
    try:
        return device.memory_stats()
    except (AttributeError, NotImplementedError, RuntimeError):
        return None


def _host_available() -> int | None:
    """Return the host's available memory in bytes (``MemAvailable``), if known."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
