// folded_stacks.cpp: stack sums (stack_sums.h) as folded text.
#include "output/folded_stacks.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "analyze/process_filter.h"
#include "analyze/stack_sums.h"
#include "base/utf8.h"

namespace gpuprof {

Result<FoldedMetric> parse_folded_metric(std::string_view name) {
  if (name == "self_cpu_time") return FoldedMetric::kSelfCpuTime;
  if (name == "samples") return FoldedMetric::kSamples;
  if (name == "self_cuda_time") return FoldedMetric::kSelfCudaTime;
  return Error("unknown --metric '" + std::string(name) + "' (one of: self_cpu_time, samples, self_cuda_time)");
}

std::string folded_frame_name(std::string_view name) {
  if (name.empty()) return "_";
  std::string out = valid_utf8(name);
  for (char& c : out) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == ';') {
      c = ':';
    } else if (byte <= 0x20 || byte == 0x7f) {
      c = '_';
    }
  }
  return out;
}

FoldedStacks folded_stacks(const Recording& recording, FoldedMetric metric, bool raw_times) {
  const StackMetric of_metric = metric == FoldedMetric::kSamples        ? StackMetric::kSamples
                                : metric == FoldedMetric::kSelfCudaTime ? StackMetric::kSelfCudaTime
                                                                        : StackMetric::kSelfCpuTime;
  return folded_from_sums(stack_sums(recording, of_metric, raw_times), metric);
}

FoldedStacks folded_from_sums(const StackSums& sums, FoldedMetric metric) {
  // Frames as the format escapes them. Paths that print alike are summed
  // into one line, so no two lines are alike; a map keeps them in byte order.
  std::vector<std::string> names;
  names.reserve(sums.frames.size());
  for (const StackFrame& f : sums.frames) names.push_back(folded_frame_name(f.name));
  std::map<std::string, uint64_t> value_of_path;
  for (const StackSum& stack : sums.stacks) {
    std::string path;
    for (uint32_t f : stack.frames) {
      if (!path.empty()) path += ';';
      path += names[f];
    }
    value_of_path[path] += stack.value;
  }
  FoldedStacks out;
  for (const auto& [path, value] : value_of_path) {
    if (metric == FoldedMetric::kSamples) {
      out.stacks.push_back({path, value});
      continue;
    }
    const uint64_t us = value / 1000;  // truncated, as torch's int()
    if (us == 0) {
      ++out.stacks_below_1us;
      continue;
    }
    out.stacks.push_back({path, us});
  }
  (metric == FoldedMetric::kSamples ? out.samples_total : out.self_ns_total) = sums.total;
  out.gpu_ns_outside_ops = sums.gpu_ns_outside_ops;
  out.counters = sums.counters;
  return out;
}

FoldedStacks folded_stacks_by_process(const Recording& recording, FoldedMetric metric, bool raw_times) {
  if (!is_system_wide(recording)) return folded_stacks(recording, metric, raw_times);
  FoldedStacks out;
  for (const auto& [pid, activity] : process_activity(recording)) {
    if (activity.events == 0 && (metric != FoldedMetric::kSamples || activity.samples == 0)) continue;
    const Recording one = select_processes(recording, {pid});
    add_under_root(out, folded_frame_name(process_frame(one.process)), folded_stacks(one, metric, raw_times));
  }
  merge_alike_stacks(out);
  return out;
}

FoldedStacks folded_by_process_from_sums(const std::map<uint32_t, ProcessMetricSums>& sums, FoldedMetric metric) {
  FoldedStacks out;
  for (const auto& [pid, process] : sums)
    add_under_root(out, folded_frame_name(process_frame(process.selection->process)),
                   folded_from_sums(process.sums.begin()->second, metric));
  merge_alike_stacks(out);
  return out;
}

void add_under_root(FoldedStacks& into, std::string_view root, const FoldedStacks& part) {
  for (const FoldedStack& s : part.stacks) {
    std::string stack;
    stack.reserve(root.size() + 1 + s.stack.size());
    stack += root;
    stack += ';';
    stack += s.stack;
    into.stacks.push_back({std::move(stack), s.value});
  }
  into.self_ns_total += part.self_ns_total;
  into.stacks_below_1us += part.stacks_below_1us;
  into.samples_total += part.samples_total;
  into.gpu_ns_outside_ops += part.gpu_ns_outside_ops;
  into.counters += part.counters;
}

void merge_alike_stacks(FoldedStacks& folded) {
  std::vector<FoldedStack>& stacks = folded.stacks;
  std::sort(stacks.begin(), stacks.end(), [](const FoldedStack& a, const FoldedStack& b) { return a.stack < b.stack; });
  size_t kept = 0;
  for (size_t i = 0; i < stacks.size(); i++) {
    if (kept && stacks[kept - 1].stack == stacks[i].stack) {
      stacks[kept - 1].value += stacks[i].value;
      continue;
    }
    if (kept != i) stacks[kept] = std::move(stacks[i]);
    kept++;
  }
  stacks.resize(kept);
}

std::string format_folded(const FoldedStacks& folded) {
  std::string out;
  for (const FoldedStack& s : folded.stacks) {
    out += s.stack;
    out += ' ';
    out += std::to_string(s.value);
    out += '\n';
  }
  return out;
}

Result<void> write_folded(const FoldedStacks& folded, std::FILE* out) {
  for (const FoldedStack& s : folded.stacks)
    if (std::fwrite(s.stack.data(), 1, s.stack.size(), out) != s.stack.size() ||
        std::fprintf(out, " %llu\n", static_cast<unsigned long long>(s.value)) < 0)
      return Error(std::string("cannot write the folded stacks: ") + std::strerror(errno));
  if (std::fflush(out) != 0) return Error(std::string("cannot write the folded stacks: ") + std::strerror(errno));
  return {};
}

}  // namespace gpuprof
