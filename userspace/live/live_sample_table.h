// live_sample_table.h: where a running job's CPU samples land, by Python
// line (gpuprof top -F HZ, its second view).
//
// Each sample counts for its innermost Python frame ("train.py(42):
// step"), the line the thread was running (inside whatever C code it had
// called); a sample without Python frames counts for its native leaf, in
// brackets. Per interval and since the start, like LiveOpTable.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "record/recording.h"

namespace gpuprof {

struct LiveLineRow {
  std::string line;
  uint64_t samples = 0;
  bool operator==(const LiveLineRow&) const = default;
};

struct LiveLines {
  uint64_t start_ns = 0, end_ns = 0;
  std::vector<LiveLineRow> rows;  // most samples first, then by line
  uint64_t samples = 0;
};

class LiveSampleTable {
 public:
  // Frame names by id, as the session defines them.
  void frame(uint32_t id, const std::string& name);
  // python_stack: frame ids, outermost first (empty: no Python frames).
  void add(const CpuSample& sample, const std::vector<uint32_t>& python_stack);
  void begin(uint64_t now_ns) { interval_start_ns_ = since_ns_ = now_ns; }
  LiveLines roll(uint64_t now_ns);
  LiveLines since_start() const;

 private:
  static LiveLines lines_of(const std::unordered_map<uint32_t, uint64_t>& counts,
                            const std::vector<std::string>& names);
  std::vector<std::string> names_;  // by frame id
  // By frame id; native leaves are kept under kNativeBit | id.
  std::unordered_map<uint32_t, uint64_t> current_, total_;
  uint64_t interval_start_ns_ = 0, since_ns_ = 0, last_roll_ns_ = 0;
};

}  // namespace gpuprof
