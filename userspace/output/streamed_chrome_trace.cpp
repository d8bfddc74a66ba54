// streamed_chrome_trace.cpp: each thread's settled calls, in trace order,
// spilled to a temporary file of its own and replayed at the end.
#include "output/streamed_chrome_trace.h"

#include "analyze/call_tree.h"
#include "analyze/module_names.h"

namespace gpuprof {

// A trace shows raw times (chrome_trace.h): no compensation.
StreamedChromeTrace::StreamedChromeTrace(const Recording& head, std::optional<uint64_t> last_entry_stack)
    : settled_(nullptr), pairs_(head.options.with_stack, last_entry_stack), spills_(std::make_shared<Spills>()) {}

StreamedChromeTrace::Spills::~Spills() {
  for (auto& [tid, calls] : threads)
    if (calls.file) std::fclose(calls.file);
}

bool StreamedChromeTrace::streamable(const Recording& head) {
  if (head.process.pid == 0 || head.options.memory || head.options.shapes || head.cuda_runtime ||
      launches_read(head) != 0 || !head.gpu_activities.empty())
    return false;
  // Module calls (module_tree.h) come from module frames in the entries'
  // Python stacks: none, none to write first.
  const ModuleNames modules(head);
  for (uint32_t frame = 0; frame < head.sample_frames.size(); frame++)
    if (modules.is_module_frame(frame)) return false;
  return true;
}

void StreamedChromeTrace::on_events(std::span<const gp_event> events, uint64_t first) {
  // A step frame is named by its STEP event's step number (op_timeline.h).
  for (size_t i = 0; i < events.size(); i++)
    if (events[i].kind == GP_EV_STEP) step_of_entry_.emplace(first + i, events[i].sp);
  settled_.add(events, first);
  settled_.hand_settled([this](uint64_t event_index) { return pairs_.known_through(event_index); },
                        [this](const Timeline& forest) { spill(forest); });
}

// A forest's calls by start, parents first (build_call_tree's order, which
// the whole trace writes), to the end of its thread's file.
void StreamedChromeTrace::spill(const Timeline& forest) {
  const CallTree tree = build_call_tree(forest);
  ThreadCalls& calls = spills_->threads[forest.calls.front().tid];
  if (!calls.file && calls.held.empty()) calls.file = std::tmpfile();
  for (size_t id : tree.threads.front()) {
    Spilled s{.call = forest.calls[id]};
    if (auto step = step_of_entry_.find(s.call.entry_index); step != step_of_entry_.end()) {
      s.is_step = true;
      s.step = step->second;
      step_of_entry_.erase(step);
    }
    if (const std::optional<uint32_t> stack = pairs_.of(s.call.entry_index)) {
      s.has_stack = true;
      s.stack = *stack;
      pairs_.forget(s.call.entry_index);
    }
    if (calls.file && std::fwrite(&s, sizeof s, 1, calls.file) == 1) continue;
    if (calls.file) {  // the disk is full: what the file holds is held instead, and all that follows
      std::rewind(calls.file);
      for (Spilled back; std::fread(&back, sizeof back, 1, calls.file) == 1;) calls.held.push_back(back);
      std::fclose(calls.file);
      calls.file = nullptr;
    }
    calls.held.push_back(s);  // no temporary file: held
  }
}

StreamedTraceCalls StreamedChromeTrace::finish() {
  std::move(settled_).finish([this](const Timeline& forest) { spill(forest); });
  spills_->order = settled_.thread_order();
  return [spills = spills_](const TraceCallVisitor& visit) { spills->replay(visit); };
}

void StreamedChromeTrace::Spills::visit_one(const Spilled& s, const TraceCallVisitor& visit) {
  visit(s.call, s.is_step ? std::optional<uint64_t>(s.step) : std::nullopt,
        s.has_stack ? std::optional<uint32_t>(s.stack) : std::nullopt);
}

void StreamedChromeTrace::Spills::replay(const TraceCallVisitor& visit) {
  for (uint32_t tid : order) {
    ThreadCalls& calls = threads[tid];
    if (calls.file) {
      std::rewind(calls.file);
      for (Spilled s; std::fread(&s, sizeof s, 1, calls.file) == 1;) visit_one(s, visit);
    }
    for (const Spilled& s : calls.held) visit_one(s, visit);
  }
}

}  // namespace gpuprof
