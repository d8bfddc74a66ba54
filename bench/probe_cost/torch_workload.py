# Small-op loop for `probe_cost torch`: prints microseconds per iteration.
# Every 100th iteration raises c10::Error through at::_ops::mm::call and
# catches it in Python (tests exception safety of the exit probing).
import sys, time, torch
torch.set_num_threads(1)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
a = torch.randn(16, 16); b = torch.randn(16, 16); bad = torch.randn(3, 5)
caught = 0
def step(i):
    global caught
    x = torch.relu(a)
    y = x + b
    z = torch.mm(y, a)
    z = z.sum()
    if i % 100 == 0:
        try:
            torch.mm(a, bad)
        except RuntimeError:
            caught += 1
for i in range(50): step(i)
caught = 0
t = time.perf_counter()
for i in range(n): step(i)
dt = time.perf_counter() - t
print("us_per_iter %.2f caught %d" % (dt / n * 1e6, caught))
