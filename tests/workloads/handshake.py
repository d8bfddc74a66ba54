"""File handshake between a workload and its test.

The test and the target process coordinate through files in a work directory:
the writer renames a finished file into place (so the reader never sees half
of one), the reader polls for it with a deadline. A timeout exits with status
3, so a broken test cannot hang CI.
"""
import os
import sys
import time

WAIT_TIMEOUT_S = 120.0


def signal_file(workdir, name, text=""):
    tmp = os.path.join(workdir, "." + name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, os.path.join(workdir, name))


def wait_for_file(workdir, name, timeout=WAIT_TIMEOUT_S):
    path = os.path.join(workdir, name)
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            sys.stderr.write("%s: timed out waiting for %s\n" % (os.path.basename(sys.argv[0]), path))
            sys.exit(3)
        time.sleep(0.002)
