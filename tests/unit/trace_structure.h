// trace_structure.h: what a Chrome trace viewer relies on, checked on a
// parsed trace (chrome_trace_test, chrome_trace_several_test).
#pragma once

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace gpuprof::test {

// Everything a viewer relies on, checked on the parsed document; returns
// the problems found ("" when none).
inline std::string structural_problems(const std::string& text) {
  using json = nlohmann::json;
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    return std::string("not JSON: ") + e.what();
  }
  std::string problems;
  auto problem = [&](const std::string& what) { problems += what + "\n"; };
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
    return "no traceEvents array";
  const json frames = doc.value("stackFrames", json::object());
  for (const auto& [id, frame] : frames.items()) {
    if (!frame.contains("name") || !frame["name"].is_string()) problem("stack frame " + id + " has no name");
    if (frame.contains("parent") && !frames.contains(frame["parent"].get<std::string>()))
      problem("stack frame " + id + " has an unknown parent");
  }
  std::set<std::pair<int64_t, int64_t>> named_threads;
  std::set<int64_t> named_processes;
  std::set<std::pair<int64_t, int64_t>> used_threads;
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<double, double>>> slices;  // (pid, tid) -> (ts, end)
  std::map<uint64_t, std::pair<int, int>> flows;  // id -> (s count, f count)
  for (const json& e : doc["traceEvents"]) {
    const std::string ph = e.value("ph", "");
    if (ph.empty() || !e.contains("pid") || !e["pid"].is_number_integer() || !e.contains("tid") ||
        !e["tid"].is_number_integer() || !e.contains("name") || !e["name"].is_string()) {
      problem("event without ph, pid, tid or name: " + e.dump());
      continue;
    }
    const int64_t pid = e["pid"], tid = e["tid"];
    if (ph == "M") {
      if (e["name"] == "process_name") named_processes.insert(pid);
      if (e["name"] == "thread_name") named_threads.insert({pid, tid});
      continue;
    }
    if (!e.contains("ts") || !e["ts"].is_number()) {
      problem("event without ts: " + e.dump());
      continue;
    }
    if (ph != "C") used_threads.insert({pid, tid});
    if (e.contains("sf") && !frames.contains(e["sf"].get<std::string>())) problem("unknown sf: " + e.dump());
    if (ph == "X") {
      if (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0) problem("bad dur: " + e.dump());
      if (!e.contains("cat")) problem("X without cat: " + e.dump());
      slices[{pid, tid}].push_back({e["ts"].get<double>(), e["ts"].get<double>() + e.value("dur", 0.0)});
    } else if (ph == "s" || ph == "f") {
      auto& [s, f] = flows[e.value("id", uint64_t{0})];
      (ph == "s" ? s : f)++;
      if (ph == "f" && e.value("bp", "") != "e") problem("f without bp e: " + e.dump());
    } else if (ph == "i") {
      if (e.value("s", "") != "t") problem("instant event not thread-scoped: " + e.dump());
    } else if (ph != "C") {
      problem("unexpected ph: " + e.dump());
    }
  }
  for (const auto& [id, counts] : flows)
    if (counts.first != 1 || counts.second != 1)
      problem("flow " + std::to_string(id) + " has " + std::to_string(counts.first) + " s and " +
              std::to_string(counts.second) + " f events");
  for (const auto& [thread, list] : slices) {
    // Sorted by start, longest first: each slice must fit in the one it
    // starts inside, or start after it ends.
    std::vector<std::pair<double, double>> sorted = list;
    std::sort(sorted.begin(), sorted.end(),
              [](const auto& a, const auto& b) { return a.first != b.first ? a.first < b.first : a.second > b.second; });
    std::vector<double> open_ends;
    for (const auto& [ts, end] : sorted) {
      while (!open_ends.empty() && open_ends.back() <= ts && !(open_ends.back() == ts && end == ts))
        open_ends.pop_back();
      if (!open_ends.empty() && end > open_ends.back())
        problem("slice [" + std::to_string(ts) + ", " + std::to_string(end) + "] on " + std::to_string(thread.first) +
                "/" + std::to_string(thread.second) + " overlaps its parent's end " + std::to_string(open_ends.back()));
      open_ends.push_back(end);
    }
  }
  for (const auto& thread : used_threads) {
    if (!named_threads.count(thread))
      problem("thread " + std::to_string(thread.first) + "/" + std::to_string(thread.second) + " has no name");
    if (!named_processes.count(thread.first)) problem("process " + std::to_string(thread.first) + " has no name");
  }
  return problems;
}

}  // namespace gpuprof::test
