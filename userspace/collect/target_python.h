// target_python.h: the Python side of one target (record -p, record --
// CMD): its CPython, found once (never assumed: python_runtime.h), which
// names the frames of CPU samples (sample_collector.h) and of op entries
// (--with-stack), and the entry stacks themselves.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "collect/diagnostics.h"
#include "collect/interner.h"
#include "collect/retry_every.h"
#include "abi_common.h"
#include "probe/op_tracer.h"
#include "python/module_attributes.h"
#include "python/python_stacks.h"
#include "record/frames_not_read.h"
#include "record/record_outputs.h"

namespace gpuprof {

class TargetPython {
 public:
  // cuts: where entry stacks cut short are counted (with the samples').
  // module_names: entry stacks also name module calls by their attribute
  // in the enclosing module (record --with-modules; python_stacks.h).
  TargetPython(StackCuts& cuts, bool verbose, bool module_names = false)
      : cuts_(cuts), verbose_(verbose), module_names_(module_names) {}

  // Launched with --no-ops, sampling starts before the interpreter is up:
  // the lookup is retried while its answer may still change.
  void expect_late() { may_appear_ = true; }
  // Looks for the target's CPython, unless looked for already.
  void find(int pid);
  // Looked for again (every 100 ms at most) while it may still appear.
  bool retry_due() { return may_appear_ && !config_ && retry_.due(); }
  void look_again(int pid) {
    missing_.clear();
    find(pid);
  }
  const std::optional<gp_python_config>& config() const { return config_; }
  const std::string& missing() const { return missing_; }  // why there is none
  bool may_appear() const { return may_appear_; }
  PythonStackNamer* namer() const { return namer_.get(); }

  // A new epoch of code-object addresses (every 100 ms): true when one
  // began, and the caches keyed by them (here and the samples') go.
  bool next_epoch();

  // Entry stacks go to the recording once it is begun.
  void start_recording(Interner& interner, RecordOutputs& writer, Diagnostics& diagnostics) {
    interner_ = &interner;
    writer_ = &writer;
    diagnostics_ = &diagnostics;
  }
  // An op entry's Python stack (--with-stack), as the op probe read it:
  // its id, or nullopt when it had none (or it could not be named).
  std::optional<uint32_t> on_entry(uint64_t event_index, const EntryPayload& payload) {
    if (!payload.has_stack) {
      entries_without_stack_++;
      return std::nullopt;
    }
    if (payload.stack_words.empty()) return std::nullopt;
    return record_entry_stack(event_index, payload.stack_words, PythonStackCut::from_event(payload.stack_not_read));
  }
  uint64_t entries_without_stack() const { return entries_without_stack_; }

 private:
  // Orders word sequences of any container alike, so that a map keyed by
  // vectors can be searched with a span.
  struct LexicographicLess {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
    }
  };

  std::optional<uint32_t> record_entry_stack(uint64_t event_index, std::span<const uint64_t> frame_words,
                                             PythonStackCut cut);
  void record_module_names();

  StackCuts& cuts_;
  const bool verbose_;
  const bool module_names_;
  std::unique_ptr<ModuleAttributes> module_attributes_;  // module_names_: the target's _modules dicts
  std::optional<gp_python_config> config_;
  std::string missing_;
  bool may_appear_ = false;
  RetryEvery retry_;
  std::unique_ptr<PythonStackNamer> namer_;
  uint64_t epoch_ns_ = 0;
  Interner* interner_ = nullptr;
  RecordOutputs* writer_ = nullptr;
  Diagnostics* diagnostics_ = nullptr;
  // Raw entry frames -> stack id; looked up by span (transparent compare).
  std::map<std::vector<uint64_t>, uint32_t, LexicographicLess> stack_of_entry_words_;
  uint64_t entries_without_stack_ = 0;  // ENTRY events whose stack could not be captured
};

}  // namespace gpuprof
