// backward_origins.h: which forward op made each autograd node that the
// engine evaluates (record --with-modules; docs/modules.md).
//
// torch numbers every autograd node as the Node constructor makes it, with
// the making thread's next sequence number (at::sequence_number::
// get_and_increment), inside the forward op whose autograd kernel makes
// it; the engine's evaluate_function later runs the node, whose
// sequence_nr_ it carries (op_tracer_abi.h: GP_EV_NODE_MADE,
// GP_COOKIE_NODE_ARG). The op probe reads no stack at the numbering, but
// the node is made inside the thread's last op entry, whose Python stack
// (so whose module) is the making op's: a number takes that stack.
//
// Numbers are per thread in torch: two threads of one process may make
// nodes with the same number. Such a number is ambiguous and links no call
// (the call stays under [backward]), as does a node made on a thread whose
// last entry had no stack.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

namespace gpuprof {

class BackwardOrigins {
 public:
  // An op entry (or range begin) of thread tid, with its stack id, or
  // nullopt when it had none.
  void entry(uint32_t tid, std::optional<uint32_t> stack) { last_stack_[tid] = stack; }
  // GP_EV_NODE_MADE: thread tid of process pid made the node numbered sequence_nr.
  void node_made(uint32_t pid, uint32_t tid, uint64_t sequence_nr);
  // The stack of the forward op that made process pid's node sequence_nr;
  // nullopt when not known exactly (never seen, ambiguous, no stack).
  std::optional<uint32_t> origin(uint32_t pid, uint64_t sequence_nr) const;

  // At most this many numbers are kept; past it the oldest half go (a
  // backward runs nodes made a step before, not thousands of steps).
  static constexpr size_t kMaxNodes = 1 << 20;

 private:
  struct Made {
    uint32_t tid = 0;
    std::optional<uint32_t> stack;
    bool ambiguous = false;
  };
  std::unordered_map<uint32_t, std::optional<uint32_t>> last_stack_;  // by tid
  std::map<std::pair<uint32_t, uint64_t>, Made> made_;  // by (pid, sequence_nr)
};

}  // namespace gpuprof
