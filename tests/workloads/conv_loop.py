"""conv2d in a loop for SECONDS (argv[1]): oneDNN runs it in kernels it
compiles at run time (JIT code in anonymous executable memory), so CPU
samples of this loop land in JIT code most of the time."""
import sys
import time

import torch

torch.set_num_threads(1)
x = torch.randn(8, 16, 32, 32)
w = torch.randn(32, 16, 3, 3)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    torch.nn.functional.conv2d(x, w)
