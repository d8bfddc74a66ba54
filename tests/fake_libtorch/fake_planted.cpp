// fake_planted.cpp: ops whose durations are known, for the compensation
// test (docs/overhead.md, "Compensation"): each spins on CLOCK_MONOTONIC,
// the clock of the probes' timestamps, until its planted time has passed,
// and adds the time it really spun to a counter of the library: on a busy
// machine a spin that loses its CPU near its deadline runs late, and the
// counters hold that too. What gpuprof reports beyond them is the probes'.
// Frame pointers: every op starts with `push %rbp`, which the kernel emulates,
// as Debian's libtorch ops start (an entry on any other instruction is
// single-stepped, which costs a different amount).
#pragma GCC optimize("no-omit-frame-pointer")

#include <time.h>

#include "fake_ops.h"

namespace {

long now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

// Spins until `ns` have passed; adds the time spun to *spun.
long spin(long ns, long* spun) {
  const long start = now_ns(), until = start + ns;
  long rounds = 0, now = start;
  while ((now = now_ns()) < until) rounds++;
  *spun += now - start;
  return rounds;
}

}  // namespace

namespace at::_ops {

long planted_parent_spun_ns = 0;
long planted_child_spun_ns = 0;

__attribute__((noinline)) long planted_child::call(long ns) {
  volatile char guard[16] = {};
  guard[0] = 1;
  return spin(ns, &planted_child_spun_ns) + guard[0];
}

// Half of its own time before the children, half after, so that their
// probes fall inside its interval on both sides.
__attribute__((noinline)) long planted_parent::call(long self_ns, long children, long child_ns) {
  volatile char guard[16] = {};
  long r = spin(self_ns / 2, &planted_parent_spun_ns) + guard[0];
  for (long i = 0; i < children; i++) r += planted_child::call(child_ns);
  return r + spin(self_ns - self_ns / 2, &planted_parent_spun_ns);
}

}  // namespace at::_ops
