// planted_driver.cpp: calls planted_parent (fake_planted.cpp) N times, each
// spinning SELF_NS of its own and calling CHILDREN planted_child of
// CHILD_NS each; prints the time each op's own code really spun in all (its
// Self CPU in a table without the probes' time).
//
// Usage: planted_driver N SELF_NS CHILDREN CHILD_NS
#include <cstdio>
#include <cstdlib>

#include "fake_ops.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s N SELF_NS CHILDREN CHILD_NS\n", argv[0]);
    return 2;
  }
  const long n = std::atol(argv[1]), self_ns = std::atol(argv[2]), children = std::atol(argv[3]),
             child_ns = std::atol(argv[4]);
  long spins = 0;
  for (long i = 0; i < n; i++) spins += at::_ops::planted_parent::call(self_ns, children, child_ns);
  std::printf("planted %ld calls (%ld spins): parent self %ld ns, children %ld ns\n", n, spins > 0 ? spins : 0,
              at::_ops::planted_parent_spun_ns, at::_ops::planted_child_spun_ns);
  return 0;
}
