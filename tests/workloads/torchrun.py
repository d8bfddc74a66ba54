"""torchrun, as a user starts it, on Debian's two torches.

Usage: torchrun.py [torchrun's arguments...] SCRIPT [ARGS...]

Runs torch.distributed.run's main (what the `torchrun` command runs) after
debian_distributed.mend_torchrun(): Debian's packages stop torchrun itself
before any worker starts otherwise (see there).
"""
import sys

from debian_distributed import mend_torchrun


def main():
    mend_torchrun()
    from torch.distributed.run import main as torchrun
    sys.argv[0] = "torchrun"
    torchrun()


if __name__ == "__main__":
    main()
