"""Is the process that left a claim or a journal entry still running? (Same host only.)"""

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
