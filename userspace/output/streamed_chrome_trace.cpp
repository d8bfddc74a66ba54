// streamed_chrome_trace.cpp: each thread's settled calls, in trace order,
// spilled to a temporary file of its own and replayed at the end.
#include "output/streamed_chrome_trace.h"

#include <algorithm>
#include <cstring>

#include "analyze/call_tree.h"
#include "analyze/module_names.h"
#include "base/varint.h"

namespace gpuprof {

// A trace shows raw times (chrome_trace.h): no compensation.
StreamedChromeTrace::StreamedChromeTrace(const Recording& head, std::optional<uint64_t> last_entry_stack,
                                         std::optional<uint64_t> last_entry_shape,
                                         const std::optional<std::regex>& ops,
                                         const std::vector<uint64_t>& mem_chunk_earliest_ts,
                                         const std::optional<GpuActivityBounds>& gpu, bool calls_only)
    : settled_(nullptr),
      stacks_(head.options.with_stack, last_entry_stack),
      shapes_(head.options.shapes, last_entry_shape),
      spills_(std::make_shared<Spills>()),
      calls_only_(calls_only) {
  if (head.options.memory && !calls_only) memory_order_.emplace(mem_chunk_earliest_ts);
  if (gpu && !calls_only) gpu_ = std::make_unique<StreamedGpuActivities>(*gpu);
  if (ops) {
    ops_filter_.emplace(head.ops, *ops);
    join_ops_ = head.ops;
    sample_moments_.emplace(thread_moments(head.samples));
    samples_in_kept_calls_.assign(head.samples.size(), false);
    return;  // the whole trace writes no module call with --ops
  }
  // Module calls (module_tree.h) come from module frames in the entries'
  // Python stacks: without one, there are none to write.
  if (calls_only) return;
  const ModuleNames names(head);
  for (uint32_t frame = 0; frame < head.sample_frames.size() && head.options.with_stack; frame++)
    if (names.is_module_frame(frame)) {
      modules_ = std::make_unique<ModuleTreeBuilder>(head, /*keep_calls=*/true);
      break;
    }
}

bool StreamedChromeTrace::streamable(const Recording& head, bool ops) {
  return !(ops && (launches_read(head) > 0 || gpu_activities_read(head) > 0));
}

void StreamedChromeTrace::keep_launches_by_their_calls(JoinBounds bounds) {
  if (!ops_filter_ || calls_only_) return;
  // The allocator events are not joined to calls here: the memory counter
  // follows them on its own (on_mem_events).
  bounds.mem_event_ts.clear();
  auto pairs_known = [this](uint64_t event_index) {
    return stacks_.known_through(event_index) && shapes_.known_through(event_index);
  };
  // Raw times (a trace's: nullptr), no memory or GPU figures: the calls
  // alone are spilled.
  calls_joined_ = std::make_unique<StreamedCallFigures>(
      nullptr, join_ops_, /*memory=*/false, /*gpu=*/false, std::move(bounds),
      [this](const Timeline& forest, const CallFigures&) { spill(forest); }, pairs_known);
  auto kept_at = [this](const StreamedCallFigures::LaunchPlace& at) {
    return at.call >= 0 && kept_calls(*at.forest, *at.tree)[static_cast<size_t>(at.call)];
  };
  calls_joined_->on_probe_launch_placed(
      [this, kept_at](uint64_t index, const StreamedCallFigures::LaunchPlace& at) { decide_launch(index, kept_at(at)); });
  if (!gpu_) return;
  gpu_->keep_by_launching_call();
  calls_joined_->on_launch_placed([this, kept_at](uint64_t id, const StreamedCallFigures::LaunchPlace& at) {
    std::optional<std::pair<uint64_t, uint64_t>> span;
    if (kept_at(at)) span.emplace(at.forest->calls[at.call].start_ns, at.forest->calls[at.call].end_ns);
    gpu_->keep_launched_by(id, span);
  });
}

bool StreamedChromeTrace::on_launches(std::span<const CudaLaunch> launches) {
  if (calls_only_) return true;
  if (calls_joined_) {
    for (const CudaLaunch& l : launches) launches_waiting_.push_back({.launch = l});
    calls_joined_->add_launches(launches);
    release_launches();
    return true;
  }
  if (ops_filter_) return launches.empty();  // each needs its call: read whole
  append_records(spills_->launches, launches);
  spills_->launch_count += launches.size();
  return true;
}

void StreamedChromeTrace::on_gpu_correlations(std::span<const GpuCorrelation> correlations) {
  if (gpu_) gpu_->add_correlations(correlations);
  if (calls_joined_) {
    calls_joined_->add_gpu_correlations(correlations);
    release_launches();
  }
}

bool StreamedChromeTrace::on_gpu_activities(std::span<const GpuActivity> activities) {
  if (ops_filter_ && !calls_joined_) return activities.empty();  // each needs its call: read whole
  // Held first: their launches' word may come as the join reads them.
  if (gpu_) gpu_->add_activities(activities);
  if (calls_joined_) {
    calls_joined_->add_gpu_activities(activities);
    release_launches();
  }
  return true;
}

const std::vector<bool>& StreamedChromeTrace::kept_calls(const Timeline& forest, const CallTree& tree) {
  const auto key = std::make_tuple(forest.calls.front().tid, forest.calls.front().entry_index, forest.calls.size());
  if (key != kept_cache_.forest) {
    kept_cache_.kept = ops_filter_->kept(forest, tree);
    kept_cache_.forest = key;
  }
  return kept_cache_.kept;
}

void StreamedChromeTrace::decide_launch(uint64_t index, bool kept) {
  launches_waiting_[index - first_waiting_launch_].kept = kept ? 1 : 0;
}

void StreamedChromeTrace::release_launches() {
  while (!launches_waiting_.empty() && launches_waiting_.front().kept >= 0) {
    if (launches_waiting_.front().kept) {
      append_records(spills_->launches, std::span<const CudaLaunch>(&launches_waiting_.front().launch, 1));
      spills_->launch_count++;
    }
    launches_waiting_.pop_front();
    first_waiting_launch_++;
  }
}

bool StreamedChromeTrace::on_mem_events(std::span<const gp_mem_event> events) {
  if (calls_only_) return true;
  if (!memory_order_) return false;
  memory_order_->add(events, [this](const gp_mem_event& e, const AllocationSizes::Counted& counted) {
    put_memory_level(e, counted);
  });
  return true;
}

// The level after an allocator event, in time order, put aside for the
// trace's memory counters.
void StreamedChromeTrace::put_memory_level(const gp_mem_event& e, const AllocationSizes::Counted& counted) {
  const MemoryLevel level = levels_.after(e, counted);
  append_records(spills_->memory_levels, std::span<const MemoryLevel>(&level, 1));
  spills_->memory_level_count++;
}

void StreamedChromeTrace::on_events(std::span<const gp_event> events, uint64_t first) {
  // A step frame is named by its STEP event's step number (op_timeline.h).
  for (size_t i = 0; i < events.size(); i++)
    if (events[i].kind == GP_EV_STEP) step_of_entry_.emplace(first + i, events[i].sp);
  if (calls_joined_) {
    calls_joined_->add_events(events, first);
    release_launches();
    return;
  }
  settled_.add(events, first);
  // A forest waits for the stack and shape pairs of its events.
  auto pairs_known = [this](uint64_t event_index) {
    return stacks_.known_through(event_index) && shapes_.known_through(event_index);
  };
  settled_.hand_settled(pairs_known, [this](const Timeline& forest) { spill(forest); });
}

namespace {

// A spilled call holds what the trace writes of it (chrome_trace.cpp): its
// op, start, duration, entry index and whether it was unwound; a step
// frame's step number; its entry's stack and input shapes; and its depth,
// which places it in its thread's call tree (speedscope.cpp nests calls by
// it). Packed against its thread's previous call: a flags byte, then
// varints, the start and entry index as zigzag differences; about 11 bytes
// where the OpCall is 72.
// A module call (kModuleCall) is packed against its thread's previous
// module call: its node, start (a zigzag difference) and duration.
constexpr uint8_t kUnwound = 1, kIsStep = 2, kHasStack = 4, kModuleCall = 8, kHasShape = 16;
constexpr size_t kMaxPackedCall = 1 + 5 * 10 + 3 * 5;  // flags, five 64-bit varints at most, three 32-bit ones

void pack_call(std::string& out, const OpCall& call, const TraceCallEntry& entry, uint64_t& last_start,
               uint64_t& last_entry) {
  char packed[1 + 8 * 10];  // flags, eight varints at most (put_varint)
  char* p = packed;
  *p++ = static_cast<char>((call.unwound ? kUnwound : 0) | (entry.step ? kIsStep : 0) |
                           (entry.stack ? kHasStack : 0) | (entry.shape ? kHasShape : 0));
  p = put_varint(p, call.op_id);
  p = put_varint(p, zigzag(static_cast<int64_t>(call.start_ns - last_start)));
  p = put_varint(p, call.end_ns - call.start_ns);
  p = put_varint(p, zigzag(static_cast<int64_t>(call.entry_index - last_entry)));
  p = put_varint(p, call.depth);
  if (entry.step) p = put_varint(p, *entry.step);
  if (entry.stack) p = put_varint(p, *entry.stack);
  if (entry.shape) p = put_varint(p, *entry.shape);
  out.append(packed, p);
  last_start = call.start_ns;
  last_entry = call.entry_index;
}

void pack_module_call(std::string& out, const ModuleCall& call, uint64_t& last_start) {
  out.push_back(static_cast<char>(kModuleCall));
  append_varint(out, call.node);
  append_varint(out, zigzag(static_cast<int64_t>(call.start_ns - last_start)));
  append_varint(out, call.end_ns - call.start_ns);
  last_start = call.start_ns;
}

// Reads one thread's packed calls back, from its file (in pieces) and then
// from what was never written, and hands each op call to `calls` or each
// module call to `modules` (whichever is given: the trace writes every
// module call first, so it reads each spill twice).
class SpillReader {
 public:
  SpillReader(uint32_t tid, SpillFile& spill, const TraceCallVisitor* calls, const ModuleCallVisitor* modules)
      : tid_(tid), spill_(spill), calls_(calls), modules_(modules) {}

  void visit_all() {
    spill_.read_back([this](std::string_view piece) {
      buffer_.erase(0, pos_);
      pos_ = 0;
      buffer_ += piece;
      visit_buffered(/*at_end=*/false);
    });
    visit_buffered(/*at_end=*/true);
  }

 private:
  // The calls whole in the buffer (all of them at the end: no more bytes
  // will come; a cut call, which gpuprof never writes, is left out).
  void visit_buffered(bool at_end) {
    while (pos_ < buffer_.size() && (at_end || buffer_.size() - pos_ >= kMaxPackedCall)) {
      const size_t at = pos_;
      if (!visit_one()) {
        pos_ = at;
        return;
      }
    }
  }
  bool varint(uint64_t& v) { return read_varint(std::span<const char>(buffer_), pos_, v) == VarintRead::ok; }
  bool visit_one() {
    const auto flags = static_cast<uint8_t>(buffer_[pos_++]);
    if (flags & kModuleCall) {
      uint64_t node = 0, start = 0, duration = 0;
      if (!varint(node) || !varint(start) || !varint(duration)) return false;
      ModuleCall call;
      call.node = node;
      call.tid = tid_;
      call.start_ns = last_module_start_ += static_cast<uint64_t>(unzigzag(start));
      call.end_ns = call.start_ns + duration;
      if (modules_) (*modules_)(call);
      return true;
    }
    uint64_t op = 0, start = 0, duration = 0, entry = 0, depth = 0, step = 0, stack = 0, shape = 0;
    if (!varint(op) || !varint(start) || !varint(duration) || !varint(entry) || !varint(depth)) return false;
    if ((flags & kIsStep) && !varint(step)) return false;
    if ((flags & kHasStack) && !varint(stack)) return false;
    if ((flags & kHasShape) && !varint(shape)) return false;
    OpCall call;
    call.tid = tid_;
    call.op_id = static_cast<uint32_t>(op);
    call.start_ns = last_start_ += static_cast<uint64_t>(unzigzag(start));
    call.end_ns = call.start_ns + duration;
    call.entry_index = last_entry_ += static_cast<uint64_t>(unzigzag(entry));
    call.depth = static_cast<uint32_t>(depth);
    call.unwound = flags & kUnwound;
    if (!calls_) return true;
    TraceCallEntry at_entry;
    if (flags & kIsStep) at_entry.step = step;
    if (flags & kHasStack) at_entry.stack = static_cast<uint32_t>(stack);
    if (flags & kHasShape) at_entry.shape = static_cast<uint32_t>(shape);
    (*calls_)(call, at_entry);
    return true;
  }

  const uint32_t tid_;
  SpillFile& spill_;
  const TraceCallVisitor* const calls_;
  const ModuleCallVisitor* const modules_;
  std::string buffer_;
  size_t pos_ = 0;
  uint64_t last_start_ = 0, last_entry_ = 0, last_module_start_ = 0;
};

}  // namespace

// A forest's calls by start, parents first (build_call_tree's order, which
// the whole trace writes), packed onto the end of its thread's spill.
void StreamedChromeTrace::spill(const Timeline& forest) {
  build_call_tree(forest, tree_);
  const CallTree& tree = tree_;
  const uint32_t tid = forest.calls.front().tid;
  ThreadCalls& calls = spills_->threads[tid];
  std::vector<std::optional<uint32_t>>& stacks = forest_stacks_;
  stacks.assign(forest.calls.size(), std::nullopt);
  std::vector<bool> kept;
  if (ops_filter_) {
    kept = kept_calls(forest, tree);
    mark_samples(forest, tree, kept);
  }
  for (size_t id : tree.threads.front()) {
    const OpCall& call = forest.calls[id];
    TraceCallEntry entry;
    if (auto found = step_of_entry_.find(call.entry_index); found != step_of_entry_.end()) {
      entry.step = found->second;
      step_of_entry_.erase(found);
    }
    entry.stack = stacks[id] = stacks_.take(call.entry_index);
    entry.shape = shapes_.take(call.entry_index);
    if (!kept.empty() && !kept[id]) continue;
    pack_call(calls.spill.pending(), call, entry, calls.packed.start_ns, calls.packed.entry_index);
  }
  if (modules_) {
    count_modules(forest, tree, stacks);
    take_listed_module_calls();
    spill_module_calls(tid, /*at_end=*/false);
  }
  calls.spill.write_if_due();
}

// Each sample gets its innermost call as innermost_calls_at gives it in
// the whole timeline (forest_moments.h); samples between forests stay
// outside every call.
void StreamedChromeTrace::mark_samples(const Timeline& forest, const CallTree& tree, const std::vector<bool>& kept) {
  sample_moments_->place(forest, tree, [&](size_t sample, int64_t call) {
    samples_in_kept_calls_[sample] = call >= 0 && kept[call];
  });
}

// One forest's calls into the module tree, parents first, as
// build_module_tree feeds it (only the module calls are used here: a call's
// fold and its thread's Python, which place op rows, do not matter).
void StreamedChromeTrace::count_modules(const Timeline& forest, const CallTree& tree,
                                        const std::vector<std::optional<uint32_t>>& stacks) {
  const uint32_t tid = forest.calls.front().tid;
  // The tree lists a forest's calls by start, and a thread's forests come
  // in start order: its first forest's first listed call is its first call.
  first_start_.try_emplace(tid, forest.calls[tree.threads.front().front()].start_ns);
  std::vector<size_t> node_of_call(forest.calls.size(), 0);
  for (size_t id : tree.threads.front()) {
    const OpCall& call = forest.calls[id];
    const int64_t parent = tree.parent[id];
    node_of_call[id] = modules_->add_call(call, parent >= 0 ? std::optional<size_t>(node_of_call[parent]) : std::nullopt,
                                          stacks[id], std::nullopt, false, false, {});
  }
}

// The module calls the tree listed, to their threads' waiting lists.
void StreamedChromeTrace::take_listed_module_calls() {
  ModuleTree& tree = modules_->tree();
  for (const ModuleCall& call : tree.calls) {
    WaitingModuleCalls& waiting = module_calls_waiting_[call.tid];
    waiting.calls.push_back(call);
    waiting.earliest_start_ns = std::min(waiting.earliest_start_ns, call.start_ns);
  }
  tree.calls.clear();
}

// A thread's module calls waiting that start before its outermost open
// module call (all of them at the end) are in their final order once
// sorted (by start, parents first, as build_module_tree sorts them), and
// are packed into its spill. Under a module call open as long as the job,
// nothing is sorted until it ends.
void StreamedChromeTrace::spill_module_calls(uint32_t tid, bool at_end) {
  auto found = module_calls_waiting_.find(tid);
  if (found == module_calls_waiting_.end()) return;
  WaitingModuleCalls& waiting = found->second;
  const std::optional<uint64_t> open_since = at_end ? std::nullopt : modules_->open_since(tid);
  if (open_since && waiting.earliest_start_ns >= *open_since) return;
  const ModuleTree& tree = modules_->tree();
  std::vector<ModuleCall>& calls = waiting.calls;
  std::sort(calls.begin(), calls.end(), [&](const ModuleCall& a, const ModuleCall& b) {
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return tree.nodes[a.node].depth < tree.nodes[b.node].depth;
  });
  size_t ready = 0;
  while (ready < calls.size() && (!open_since || calls[ready].start_ns < *open_since)) ready++;
  ThreadCalls& spill = spills_->threads[tid];
  for (size_t i = 0; i < ready; i++) pack_module_call(spill.spill.pending(), calls[i], spill.packed.module_start_ns);
  calls.erase(calls.begin(), calls.begin() + static_cast<ptrdiff_t>(ready));
  waiting.earliest_start_ns = calls.empty() ? UINT64_MAX : calls.front().start_ns;
}

StreamedTraceCalls StreamedChromeTrace::finish() {
  if (calls_joined_) {
    std::move(*calls_joined_).finish(join_ops_);
    spills_->order = calls_joined_->thread_order();
    release_launches();  // every launch has its word now
  } else {
    std::move(settled_).finish([this](const Timeline& forest) { spill(forest); });
    spills_->order = settled_.thread_order();
  }
  StreamedTraceCalls out;
  out.calls = [spills = spills_](const TraceCallVisitor& visit) { spills->replay(spills->order, visit); };
  out.threads = spills_->order;
  out.calls_of = [spills = spills_](std::span<const uint32_t> tids, const TraceCallVisitor& visit) {
    spills->replay(tids, visit);
  };
  if (ops_filter_) out.samples_in_kept_calls = std::move(samples_in_kept_calls_);
  if (gpu_) out.gpu_activities = gpu_->finish();
  if (spills_->launch_count)
    out.launches = [spills = spills_](const LaunchVisitor& visit) { spills->replay_launches(visit); };
  if (memory_order_) {
    memory_order_->finish([this](const gp_mem_event& e, const AllocationSizes::Counted& counted) {
      put_memory_level(e, counted);
    });
    if (spills_->memory_level_count)
      out.memory_levels = [spills = spills_](const MemoryLevelVisitor& visit) { spills->replay_memory_levels(visit); };
  }
  if (!modules_) return out;
  modules_->end_threads();  // the calls still open end with their threads' last calls
  take_listed_module_calls();
  for (auto& [tid, waiting] : module_calls_waiting_) spill_module_calls(tid, /*at_end=*/true);
  // The threads with module calls by their first call's start (the order
  // build_module_tree lists them in), ties in their spills' order.
  for (uint32_t tid : spills_->order)
    if (module_calls_waiting_.count(tid)) spills_->module_order.push_back(tid);
  std::stable_sort(spills_->module_order.begin(), spills_->module_order.end(),
                   [&](uint32_t a, uint32_t b) { return first_start_.at(a) < first_start_.at(b); });
  out.module_calls = [spills = spills_](const ModuleCallVisitor& visit) { spills->replay_modules(visit); };
  out.modules = std::move(modules_->tree());
  return out;
}

void StreamedChromeTrace::Spills::replay(std::span<const uint32_t> tids, const TraceCallVisitor& visit) {
  for (uint32_t tid : tids) {
    auto it = threads.find(tid);
    if (it != threads.end()) SpillReader(tid, it->second.spill, &visit, nullptr).visit_all();
  }
}

void StreamedChromeTrace::Spills::replay_modules(const ModuleCallVisitor& visit) {
  for (uint32_t tid : module_order) {
    ThreadCalls& calls = threads[tid];
    SpillReader(tid, calls.spill, nullptr, &visit).visit_all();
  }
}

void StreamedChromeTrace::Spills::replay_launches(const LaunchVisitor& visit) {
  read_back_records<CudaLaunch>(launches, visit);
}

void StreamedChromeTrace::Spills::replay_memory_levels(const MemoryLevelVisitor& visit) {
  read_back_records<MemoryLevel>(memory_levels, visit);
}

}  // namespace gpuprof
