// probe_costs_text.cpp: ProbeCosts in words (probe_costs_text.h).
#include "record/probe_costs_text.h"

#include <cstdio>

namespace gpuprof {

std::string describe_probe_costs(const ProbeCosts& costs, bool every_kind) {
  auto us = [](uint32_t ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", ns / 1000.0);
    return std::string(buf);
  };
  char spread[32];
  std::snprintf(spread, sizeof spread, "%.1f%%", costs.spread_permille / 10.0);
  auto pair = [&](const ProbeCost& c) { return us(c.before_ns) + " + " + us(c.after_ns) + " us"; };
  std::string stepped;
  const size_t ops = costs.ops_single_stepped();
  if (ops || every_kind)
    stepped = "; " + (every_kind ? std::string("single-stepped sites") :
                      std::to_string(ops) + (ops == 1 ? " op" : " ops") + " with single-stepped sites") +
              ": entry " + pair(costs.entry_stepped) + ", exit " + pair(costs.exit_stepped);
  const std::string head = us(costs.total_ns()) + " us of probe time removed per call (entry " + pair(costs.entry) +
                           ", exit " + pair(costs.exit) + ", before + after the timestamp" + stepped + ")";
  if (costs.attach_total_ns || costs.recording_total_ns)
    return head + ", calibrated through the recording on gpuprof's own probes (" + std::to_string(costs.rounds) +
           " rounds of " + std::to_string(costs.rounds ? costs.calls / costs.rounds : 0) + " calls, spread " + spread +
           "; " + us(costs.attach_total_ns) + " us at attach)";
  return head + ", calibrated at attach on gpuprof's own probes (" + std::to_string(costs.calls) + " calls, " +
         std::to_string(costs.rounds) + " rounds, spread " + spread + ")";
}

}  // namespace gpuprof
