"""Is the process that left a claim or a journal entry still running? (Same host only.) Its start
time tells it from a later process given the same pid."""

from __future__ import annotations

import os
import socket


def this_process() -> tuple[int, str]:
    """``(pid, host)`` of the running process."""
    return os.getpid(), socket.gethostname()


def process_gone(pid: int, host: str) -> bool:
    """True when ``host`` is this machine and no process ``pid`` runs on it; False when it runs, when
    it belongs to another user, or when it is on another host (nothing can be known from here)."""
    if host != socket.gethostname():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, ValueError, OverflowError):
        return False
    return False


def process_start(pid: int) -> str | None:
    """When process ``pid`` of this machine started, as ``<boot id>/<clock ticks after boot>``: a
    token that tells a process from a later one given the same pid (after a restart, or once pids
    wrap around). None where it cannot be read (no such process, no ``/proc``)."""
    try:
        with open(f"/proc/{int(pid)}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip()
    except (OSError, ValueError, OverflowError):
        return None
    fields = stat[stat.rfind(")") + 2:].split()  # the command name may hold spaces and parentheses
    if len(fields) < 20 or not fields[19].isdigit():
        return None
    return f"{boot}/{fields[19]}"


def process_running(pid: int, host: str, start: str | None) -> bool | None:
    """Whether the process ``(pid, host, start)`` (``start``: :func:`process_start`'s token, None
    when unknown) still runs: True or False on this host, None on another one (nothing can be known
    from here). A running pid with another start token is another process: False."""
    if host != socket.gethostname():
        return None
    if process_gone(pid, host):
        return False
    if start is None:
        return True
    now = process_start(pid)
    return now is None or now == start
