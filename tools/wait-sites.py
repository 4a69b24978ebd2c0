#!/usr/bin/env python3
"""Reads `perf script -F comm,tid,ip,sym` of sched_switch events with call chains (stdin) and
counts them by where the thread went to sleep: the kernel function that waited, the system call
or fault, and the first two frames of the daemon's own code (tools/seq-counts MODE sched).
A count of waits, not of their time."""
import collections, re, sys

SCHED = re.compile(r"^(__schedule|schedule|preempt_schedule|__cond_resched|_cond_resched|io_schedule)")
LIBS = re.compile(r"^(\[unknown\]|_?_?libc_|read$|write$|pwrite|pread|open|close|syscall$|sem_|pthread|futex|__lll|"
                  r"lll_|___pthread|__GI|start_thread|clone|epoll_wait|_dispatch|dispatch_|swift_|\$ss|\$sS|"
                  r"\$s11SystemCalls0A4CallO8retrying|__memmove|__memset|__memcpy|mlock|munlock|madvise|linkat|fsync|syncfs)")
counts = collections.Counter()

def site(frames):
    kernel = [s for a, s in frames if a.startswith("ffff")]
    user = [s for a, s in frames if not a.startswith("ffff")]
    waited = next((s for s in kernel if not SCHED.match(s)), "?")
    entry = next((s for s in kernel if s.startswith(("__x64_sys_", "__do_sys_", "exc_", "asm_exc_"))), "")
    ours = [s for s in user if not LIBS.match(s)][:2]
    lib = next((s for s in user if s not in ours), "")
    return f"{waited} | {entry or lib} | {' < '.join(s[:70] for s in ours)}"

frames = []
for line in sys.stdin:
    parts = line.split()
    if not parts:
        if frames: counts[site(frames)] += 1
        frames = []
    elif re.fullmatch(r"[0-9a-f]+", parts[0]) and len(parts) >= 2:
        frames.append((parts[0], parts[1].split("+")[0]))
if frames: counts[site(frames)] += 1
print(f"{sum(counts.values())} context switches")
for where, n in counts.most_common(30):
    print(f"{n:7d}  {where[:200]}")
