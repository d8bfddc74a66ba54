// live_gpu_join.h: GPU activities -> the op calls that launched them, live
// (gpuprof top with the CUPTI shim).
//
// The recorded join (gpu_attribution.h) sees the whole timeline at once; a
// live view gets three streams at their own pace: op calls as they
// complete, the shim's launch records (correlation id, thread, moment) and
// its activity records, which CUPTI hands over in batches, usually after
// the launching call has returned. A launch belongs to the innermost call
// of its thread that holds its moment; calls complete innermost first, so
// the first completed call of that thread holding the launch is it. An
// activity is credited to its launch's op as soon as both are known, joined
// by correlation id only. Records that find no partner within kExpiry of
// their arrival (a launch outside every op, an activity whose launch came
// before top attached) are dropped, so memory stays bounded.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyze/op_timeline.h"
#include "record/recording.h"

namespace gpuprof {

class LiveGpuJoin {
 public:
  static constexpr uint64_t kExpiryNs = 10'000'000'000;  // longer than any call top waits for
  // (op id, GPU nanoseconds) to credit.
  using Credit = std::pair<uint32_t, uint64_t>;

  void launch(const GpuCorrelation& launch, uint64_t now_ns);
  // Calls in completion order; returns the credits of activities that were
  // waiting for them.
  std::vector<Credit> calls(const std::vector<OpCall>& calls);
  // The credit of an activity whose launch's call is known, else nothing
  // yet (held until it is, or until it expires).
  std::optional<Credit> activity(const GpuActivity& activity, uint64_t now_ns);
  void expire(uint64_t now_ns);

  size_t pending() const;  // launches and activities held (for tests)

 private:
  struct Waiting {
    uint64_t ns = 0;
    uint64_t arrived_ns = 0;
  };
  struct Assigned {
    uint32_t op_id = 0;
    uint64_t arrived_ns = 0;
  };
  struct PendingLaunch {
    GpuCorrelation launch;
    uint64_t arrived_ns = 0;
  };
  // By tid, then by moment: a call takes the launches within its span, a
  // lookup, not a scan (a launch outside every call, as a script's own
  // kernel launch between ops, waits for its expiry: thousands of them).
  std::unordered_map<uint32_t, std::multimap<uint64_t, PendingLaunch>> launches_;
  std::unordered_map<uint64_t, Assigned> op_of_correlation_;
  std::unordered_map<uint64_t, Waiting> waiting_;  // activity ns by correlation id
};

}  // namespace gpuprof
