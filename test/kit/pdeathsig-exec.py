"""Runs a command so that it gets SIGTERM when the process that started it dies.

    python pdeathsig-exec.py COMMAND [ARGS...]

Linux prctl(PR_SET_PDEATHSIG) survives execve, so `vllm serve` started through this gets
SIGTERM (and then stops its own engine-core and worker children) even when the Node process
that launched it is killed without a chance to clean up.
"""
import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1

if len(sys.argv) < 2:
    sys.exit("usage: pdeathsig-exec.py COMMAND [ARGS...]")
parent = os.getppid()
if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM) != 0:
    sys.exit("prctl(PR_SET_PDEATHSIG) failed")
if os.getppid() != parent:  # the parent died before prctl took effect
    sys.exit(1)
os.execv(sys.argv[1], sys.argv[1:])
