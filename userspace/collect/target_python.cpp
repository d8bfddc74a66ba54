#include "collect/target_python.h"

#include <time.h>

#include <cstdio>

#include "base/bounded_cache.h"
#include "base/session_loop.h"
#include "python/python_paths.h"
#include "python/python_runtime.h"

namespace gpuprof {

// Samples and op entries carry the thread's Python frames when the target
// runs a CPython gpuprof knows (found, never assumed: python_runtime.h).
void TargetPython::find(int pid) {
  if (config_ || !missing_.empty()) return;  // looked already
  bool may_change = false;
  const Result<PythonRuntime> runtime = find_python_runtime(pid, &may_change);
  const Result<gp_python_config> config = runtime ? python_walk_config(*runtime) : Error(runtime.error());
  if (!config) {
    missing_ = config.error();
    may_appear_ = may_appear_ && !runtime && may_change;
    return;
  }
  may_appear_ = false;
  config_ = *config;
  namer_ = std::make_unique<PythonStackNamer>(pid, runtime->offsets, PythonPathShortener::for_process(pid));
  if (module_names_) {
    module_attributes_ = std::make_unique<ModuleAttributes>(pid, runtime->offsets);
    namer_->name_module_children(
        [this](uint64_t parent, uint64_t child) -> std::optional<PythonStackNamer::ModuleChild> {
          auto held = module_attributes_->held_path(parent, child);
          if (!held) return std::nullopt;
          return PythonStackNamer::ModuleChild{std::move(held->path), held->position};
        });
  }
  if (verbose_) std::fprintf(stderr, "gpuprof: Python frames: %s\n", runtime->description.c_str());
}

bool TargetPython::next_epoch() {
  constexpr uint64_t kPythonEpochNs = 100'000'000;
  if (!namer_) return false;
  const uint64_t now = clock_ns(CLOCK_MONOTONIC);
  if (now - epoch_ns_ < kPythonEpochNs) return false;
  epoch_ns_ = now;
  namer_->next_epoch();
  stack_of_entry_words_.clear();
  return true;
}

// Nested ops of one Python call carry the same frames: the raw words are
// interned first, so most entries cost one lookup. A cut stack's key ends
// with its not-read word (one word more than whole frames: no uncut key
// can equal it).
std::optional<uint32_t> TargetPython::record_entry_stack(uint64_t event_index, std::span<const uint64_t> frame_words,
                                                        PythonStackCut cut) {
  std::vector<uint64_t> cut_key;
  if (cut.cut()) {
    cut_key.assign(frame_words.begin(), frame_words.end());
    cut_key.push_back(uint64_t{cut.not_read} | uint64_t{cut.root_not_reached} << 32);
  }
  const std::span<const uint64_t> key = cut.cut() ? std::span<const uint64_t>(cut_key) : frame_words;
  auto known = stack_of_entry_words_.find(key);  // no copy of the words: most are known
  if (known == stack_of_entry_words_.end()) {
    const uint32_t depth = static_cast<uint32_t>(frame_words.size() / GP_ENTRY_FRAME_WORDS);
    // Named in two parts when cut: the frames on either side of the cut
    // were not called from one another.
    const size_t inner = std::min<size_t>(depth, PythonStackCut::innermost_kept()) * GP_ENTRY_FRAME_WORDS;
    std::vector<std::string> names = namer_->entry_stack(frame_words.first(cut.cut() ? inner : frame_words.size()));
    if (cut.cut()) {
      std::vector<std::string> outer = namer_->entry_stack(frame_words.subspan(inner));
      names.insert(names.end(), outer.begin(), outer.end());
    }
    std::vector<std::string> frames;  // the record keeps the outermost first
    cut.outermost_first(
        depth, [&](uint32_t i) { return names[i]; }, [](std::string marker) { return marker; },
        [&](std::string frame) {
          frames.push_back(std::move(frame));
          return true;
        });
    auto id = interner_->stack_of_names(frames);
    if (!id) return std::nullopt;
    record_module_names();
    keep_bounded(stack_of_entry_words_, kStackCacheEntries);
    known = stack_of_entry_words_.emplace(std::vector<uint64_t>(key.begin(), key.end()), *id).first;
  }
  cuts_.entries++;
  cuts_.entries_cut += cut.cut();
  if (Result<void> written = writer_->append_entry_stack(event_index, known->second); !written)
    diagnostics_->write_failed(written.error());
  interner_->live().entry_stack(event_index, known->second);
  return known->second;
}

// The module names entry_stack() read, by the frames just interned.
void TargetPython::record_module_names() {
  std::vector<ModuleName> names;
  for (PythonStackNamer::ModuleEdge& edge : namer_->take_module_edges()) {
    auto parent = interner_->frame(edge.parent_frame);
    auto frame = interner_->frame(edge.frame);
    if (parent && frame) names.push_back({*parent, *frame, std::move(edge.name), edge.position});
  }
  if (names.empty()) return;
  if (Result<void> written = writer_->add_module_names(names); !written) diagnostics_->write_failed(written.error());
  interner_->live().module_names(names);
}

}  // namespace gpuprof
