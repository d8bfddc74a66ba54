// exitless_calls.h: calls of ops whose bodies have no exit site.
//
// An op whose ::call body has no `ret` (Debian's torch 1.13 has one, a
// CUDA-only op ending in a tail jump) gets no exit probe: its calls end at
// their thread's next event, so their times mean nothing. Such ops are
// named once with -v; a warning (kept for the table) comes only when the
// recording holds calls of them, which normally it does not. When every op
// lacked exits (another session's breakpoints misread as code, before
// gpuprof read libraries shared) the warning was the only sign.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "torch/dispatcher_catalog.h"

namespace gpuprof {

class ExitlessCalls {
 public:
  // The catalog's exit-less ops, whose op ids in the recording start at first_op_id.
  void add_ops(uint32_t first_op_id, const DispatcherCatalog& catalog);
  // Per ENTRY event: one bounds check and one load for every other op.
  void on_entry(uint32_t op_id) {
    if (op_id < exitless_.size() && exitless_[op_id]) calls_[op_id]++;
  }
  // "" when no call of such an op was recorded; else what to tell the user.
  std::string warning() const;

 private:
  std::vector<bool> exitless_;             // by op id
  std::map<uint32_t, std::string> names_;  // op id -> "aten::x.overload"
  std::map<uint32_t, uint64_t> calls_;     // op id -> ENTRY events seen
};

}  // namespace gpuprof
