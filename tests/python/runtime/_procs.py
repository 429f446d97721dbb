"""Which monarch-worker processes this test process still has."""
import os


def worker_children():
    """Live (non-zombie) monarch-worker children of this process, from /proc."""
    me = os.getpid()
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        state, ppid = stat[stat.rindex(")") + 2:].split()[:2]
        if int(ppid) == me and state != "Z" and "monarch-worker" in name:
            out.append(int(entry))
    return out
