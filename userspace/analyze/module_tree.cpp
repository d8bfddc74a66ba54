// module_tree.cpp: ops by the module call they ran in (module_tree.h).
#include "analyze/module_tree.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "analyze/aggregator.h"
#include "analyze/call_figures.h"
#include "analyze/call_tree.h"
#include "analyze/memory_attribution.h"
#include "analyze/module_names.h"
#include "analyze/op_timeline.h"
#include "base/index_map.h"

namespace gpuprof {
namespace {

constexpr const char* kNoModule = "[no module]";
constexpr const char* kNoPythonFrames = "[no Python frames]";
constexpr const char* kStackNotRead = "[stack not read]";
constexpr const char* kBackward = "[backward]";
constexpr uint32_t kNoFrame = kNoModuleFrame;

class TreeBuilder {
 public:
  explicit TreeBuilder(const Recording& r) : r_(r), names_(r) {}

  // The module frames of a stack, outermost first.
  std::vector<uint32_t> module_path(uint32_t stack_id) const {
    std::vector<uint32_t> path;
    if (stack_id >= r_.sample_stacks.size()) return path;
    for (uint32_t frame : r_.sample_stacks[stack_id])
      if (names_.is_module_frame(frame)) path.push_back(frame);
    return path;
  }

  // The nodes of a path of module frames, outermost first (created as
  // first seen).
  std::vector<size_t> nodes_of(const std::vector<uint32_t>& path) {
    std::vector<size_t> nodes;
    nodes.reserve(path.size());
    int64_t parent = -1;
    uint32_t parent_frame = kNoFrame;
    for (uint32_t frame : path) {
      auto [it, inserted] = child_of_.try_emplace({parent, frame}, tree_.nodes.size());
      if (inserted) {
        auto [name, position] = names_.name(parent_frame, frame);
        tree_.nodes[add_node(parent, names_.label(frame), std::move(name))].position = position;
      }
      nodes.push_back(it->second);
      parent = static_cast<int64_t>(it->second);
      parent_frame = frame;
    }
    return nodes;
  }

  size_t no_module() { return synthetic(no_module_, kNoModule); }
  size_t no_python_frames() { return synthetic(no_python_, kNoPythonFrames); }
  size_t stack_not_read() { return synthetic(not_read_, kStackNotRead); }
  size_t backward() { return synthetic(backward_, kBackward); }

  ModuleTree& tree() { return tree_; }
  const ModuleTree& tree() const { return tree_; }
  void names_grew() { names_.reread(); }

 private:
  size_t add_node(int64_t parent, std::string label, std::string name) {
    ModuleNode n;
    n.name = std::move(name);
    n.label = std::move(label);
    n.parent = parent;
    n.depth = parent < 0 ? 0 : tree_.nodes[parent].depth + 1;
    tree_.nodes.push_back(std::move(n));
    const size_t id = tree_.nodes.size() - 1;
    (parent < 0 ? tree_.tops : tree_.nodes[parent].children).push_back(id);
    return id;
  }

  size_t synthetic(std::optional<size_t>& slot, const char* name) {
    if (!slot) slot = add_node(-1, "", name);
    return *slot;
  }

  const Recording& r_;
  ModuleTree tree_;
  ModuleNames names_;
  std::map<std::pair<int64_t, uint32_t>, size_t> child_of_;  // (parent node, frame) -> node
  std::optional<size_t> no_module_, no_python_, not_read_, backward_;
};

// Ends the module calls open from `level` on (spans: one per level).
void end_module_calls(ModuleTree& tree, std::vector<ModuleCall>& spans, size_t level) {
  if (level >= spans.size()) return;
  tree.calls.insert(tree.calls.end(), spans.begin() + static_cast<ptrdiff_t>(level), spans.end());
  spans.resize(level);
}

// Counts the module calls that an op under the module nodes `nodes`
// (outermost first) starts on a thread whose previous op was under `open`
// (module_tree.h): each module that opens starts a call; and a module that
// stays open starts a new call when its first child (the first module it
// called on this thread) opens again in the same call, as when a model is
// called again with no op between its calls (an inference loop). A module
// that calls its first child twice in one forward is counted twice
// (docs/modules.md, "Limits"). The first child is the thread's, so that
// the count of each thread's calls does not depend on the order the
// threads are read in (a streamed read mixes them: streamed_module_tree.h).
//
// The calls open on the thread (one per level of `open`) are in `spans`:
// those that end go to tree.calls, those that start are opened at the op's
// start, and every open one is stretched to the op's end.
void count_module_calls(ModuleTree& tree, const std::vector<size_t>& nodes, std::vector<size_t>& open,
                        std::vector<bool>& first_child_seen, std::unordered_map<size_t, size_t>& first_child,
                        std::vector<ModuleCall>& spans, const OpCall& op) {
  for (size_t k = 0; k + 1 < nodes.size(); k++) first_child.try_emplace(nodes[k], nodes[k + 1]);
  size_t same = 0;
  while (same < open.size() && same < nodes.size() && open[same] == nodes[same]) ++same;
  first_child_seen.resize(same);
  size_t opens_from = same;  // the first level whose call starts with this op
  if (same > 0 && same < nodes.size()) {  // the deepest module that stays open, a child opening in it
    ModuleNode& staying = tree.nodes[nodes[same - 1]];
    if (first_child.at(nodes[same - 1]) == nodes[same]) {
      if (first_child_seen[same - 1]) {
        staying.calls++;
        opens_from = same - 1;
      }
      first_child_seen[same - 1] = true;
    }
  }
  end_module_calls(tree, spans, opens_from);
  for (size_t k = same; k < nodes.size(); k++) {
    ModuleNode& opened = tree.nodes[nodes[k]];
    opened.calls++;
    // Its own first child opens with it when the path goes deeper.
    first_child_seen.push_back(k + 1 < nodes.size() && first_child.at(nodes[k]) == nodes[k + 1]);
  }
  for (size_t k = opens_from; k < nodes.size(); k++)
    spans.push_back({.node = nodes[k], .tid = op.tid, .start_ns = op.start_ns, .end_ns = op.end_ns});
  for (ModuleCall& span : spans) span.end_ns = std::max(span.end_ns, op.end_ns);
  open = nodes;
}

// A module's memory is what its calls allocated minus released (torch's
// interval count, as a module's record_function range in torch.profiler
// shows it): every allocator event on the thread during one of its calls,
// between its ops too (the release of a tensor Python drops between two
// ops); self: those not during a child module's call. tree.calls: by
// thread, then start, parents first; events in time order.
void count_module_memory(ModuleTree& tree, const std::vector<CountedMemoryEvent>& events) {
  std::unordered_map<uint32_t, std::vector<const CountedMemoryEvent*>> by_thread;
  for (const CountedMemoryEvent& e : events) by_thread[e.tid].push_back(&e);
  for (auto from = tree.calls.begin(); from != tree.calls.end();) {
    const uint32_t tid = from->tid;
    auto to = std::find_if(from, tree.calls.end(), [&](const ModuleCall& c) { return c.tid != tid; });
    std::vector<const ModuleCall*> open;  // the calls around the sweep point, innermost last
    auto next = from;
    for (const CountedMemoryEvent* e : by_thread[tid]) {
      for (; next != to && next->start_ns <= e->ts_ns; ++next) {
        while (!open.empty() && open.back()->end_ns < next->start_ns) open.pop_back();
        open.push_back(&*next);
      }
      while (!open.empty() && open.back()->end_ns < e->ts_ns) open.pop_back();
      if (open.empty()) continue;
      ModuleFigures& f = tree.nodes[open.back()->node].figures;
      f.self_cpu_mem += e->cpu_bytes;
      f.self_cuda_mem += e->cuda_bytes;
    }
    from = to;
  }
}

}  // namespace

bool is_autograd_engine_call(const Recording& recording, const OpCall& call) {
  if (call.op_id >= recording.ops.size()) return false;
  const OpKind kind = recording.ops[call.op_id].kind;
  return kind == OpKind::autograd_engine || kind == OpKind::autograd_node;
}

std::string ModuleTree::path(size_t node) const {
  std::string out = nodes[node].name;
  for (int64_t p = nodes[node].parent; p >= 0; p = nodes[p].parent) out = nodes[p].name + "." + out;
  return out;
}

// A call placed under these module nodes starts at start_ns: the first
// such start orders the nodes (ModuleNode::first_ns).
void seen_at(ModuleTree& tree, const std::vector<size_t>& nodes, uint64_t start_ns) {
  for (size_t n : nodes) tree.nodes[n].first_ns = std::min(tree.nodes[n].first_ns, start_ns);
}

// One thread's module calls as its calls go (count_module_calls).
struct ThreadModules {
  std::vector<size_t> open;             // the module nodes of the thread's last outermost call
  std::vector<bool> first_child_seen;   // per level of `open`: its module's current call opened its first child
  std::unordered_map<size_t, size_t> first_child;  // module node -> the first child it called on this thread
  std::vector<ModuleCall> spans;        // per level of `open`: its module's current call
};

struct ModuleTreeBuilder::State {
  State(const Recording& r, bool keep) : recording(r), builder(r), keep_calls(keep) {}
  const Recording& recording;
  TreeBuilder builder;
  const bool keep_calls;
  std::unordered_map<uint32_t, ThreadModules> threads;
  std::vector<std::unordered_map<std::string, size_t>> op_rows;  // per node: its ops by name, into ModuleNode::ops
  // The same rows by node and op id (node << 32 | op_id), so that a call
  // finds its row without making its op's table name (a string per call
  // took about a tenth of report --modules). A known op's name stays: the
  // op table only grows (placeholders of lost ops are appended).
  IndexMap row_of_op;

  ModuleOpRow& op_row(size_t node, const std::string& name) {
    ModuleTree& tree = builder.tree();
    if (op_rows.size() < tree.nodes.size()) op_rows.resize(tree.nodes.size());
    auto [it, inserted] = op_rows[node].try_emplace(name, tree.nodes[node].ops.size());
    if (inserted) tree.nodes[node].ops.push_back({name, 0, 0, 0, {}});
    return tree.nodes[node].ops[it->second];
  }
  ModuleOpRow& op_row(size_t node, uint32_t op_id) {
    if (op_id >= recording.ops.size()) return op_row(node, op_table_name(recording.ops, op_id));
    std::vector<ModuleOpRow>& ops = builder.tree().nodes[node].ops;
    const uint64_t key = static_cast<uint64_t>(node) << 32 | op_id;
    if (std::optional<uint32_t> row = row_of_op.find(key)) return ops[*row];
    ModuleOpRow& row = op_row(node, op_table_name(recording.ops, op_id));
    row_of_op.emplace(key, static_cast<uint32_t>(&row - ops.data()));
    return row;
  }
  // Module calls end: listed when kept.
  void end_calls(ThreadModules& thread, size_t level) {
    if (keep_calls) {
      end_module_calls(builder.tree(), thread.spans, level);
    } else if (level < thread.spans.size()) {
      thread.spans.resize(level);
    }
  }
  void leave_modules(ThreadModules& thread) {
    thread.open.clear();
    thread.first_child_seen.clear();
    end_calls(thread, 0);
  }
};

ModuleTreeBuilder::ModuleTreeBuilder(const Recording& recording, bool keep_calls)
    : state_(std::make_unique<State>(recording, keep_calls)) {}
ModuleTreeBuilder::~ModuleTreeBuilder() = default;

void ModuleTreeBuilder::names_grew() { state_->builder.names_grew(); }
ModuleTree& ModuleTreeBuilder::tree() { return state_->builder.tree(); }
const ModuleTree& ModuleTreeBuilder::tree() const { return state_->builder.tree(); }

size_t ModuleTreeBuilder::add_call(const OpCall& call, std::optional<size_t> parent_node,
                                   std::optional<uint32_t> entry_stack, std::optional<uint32_t> forward_stack,
                                   bool python_thread, bool folded, const ModuleCallFigures& figures) {
  State& st = *state_;
  TreeBuilder& builder = st.builder;
  ModuleTree& tree = builder.tree();
  ThreadModules& thread = st.threads[call.tid];
  size_t node;
  if (parent_node) {
    node = *parent_node;
  } else if (is_autograd_engine_call(st.recording, call)) {
    // The engine's work, on any thread: in the module of the forward op
    // that made its node, where known, but no call of it.
    if (forward_stack) {
      const std::vector<size_t> nodes = builder.nodes_of(builder.module_path(*forward_stack));
      seen_at(tree, nodes, call.start_ns);
      node = nodes.empty() ? builder.no_module() : nodes.back();
    } else {
      node = builder.backward();
    }
    st.leave_modules(thread);
  } else if (!entry_stack) {
    if (python_thread) tree.ops_without_stack++;
    node = python_thread ? builder.stack_not_read() : builder.no_python_frames();
    st.leave_modules(thread);
  } else {
    const std::vector<size_t> nodes = builder.nodes_of(builder.module_path(*entry_stack));
    seen_at(tree, nodes, call.start_ns);
    node = nodes.empty() ? builder.no_module() : nodes.back();
    const size_t listed = tree.calls.size();
    count_module_calls(tree, nodes, thread.open, thread.first_child_seen, thread.first_child, thread.spans, call);
    if (!st.keep_calls) tree.calls.resize(listed);
  }
  if (!parent_node) {  // an outermost call: its node's own, with what it calls
    ModuleNode& in = tree.nodes[node];
    in.self_ns += call.compensated_ns();
    // Its GPU time with that of the ops it calls (memory is counted over
    // the module's calls, by build_module_tree).
    in.figures.self_cuda_ns += figures.gpu_ns;
  }
  // As the op table counts (aggregator.h): a folded call's self time is
  // its absorber's, of the same name.
  ModuleOpRow& row = st.op_row(node, call.op_id);
  row.self_ns += call.compensated_self_ns();
  // Self figures: a folded call's are its absorber's, in this row.
  row.figures.self_cpu_mem += figures.self_cpu_mem;
  row.figures.self_cuda_mem += figures.self_cuda_mem;
  row.figures.self_cuda_ns += figures.self_gpu_ns;
  if (!folded) {
    row.calls++;
    row.total_ns += call.compensated_ns();
    row.figures.cpu_mem += figures.cpu_mem;
    row.figures.cuda_mem += figures.cuda_mem;
    row.figures.cuda_ns += figures.gpu_ns;
  }
  return node;
}

void ModuleTreeBuilder::add_held_calls(const HeldCalls& held, bool python_thread) {
  State& st = *state_;
  ModuleTree& tree = st.builder.tree();
  const size_t node = python_thread ? st.builder.stack_not_read() : st.builder.no_python_frames();
  if (python_thread) tree.ops_without_stack += held.outermost;
  tree.nodes[node].self_ns += held.self_ns;
  tree.nodes[node].figures.self_cuda_ns += held.self_cuda_ns;
  for (const ModuleOpRow& held_row : held.rows) {
    ModuleOpRow& row = st.op_row(node, held_row.name);
    row.calls += held_row.calls;
    row.self_ns += held_row.self_ns;
    row.total_ns += held_row.total_ns;
    row.figures.self_cuda_ns += held_row.figures.self_cuda_ns;
    row.figures.cuda_ns += held_row.figures.cuda_ns;
  }
}

std::optional<uint64_t> ModuleTreeBuilder::open_since(uint32_t tid) const {
  auto thread = state_->threads.find(tid);
  if (thread == state_->threads.end() || thread->second.spans.empty()) return std::nullopt;
  return thread->second.spans.front().start_ns;
}

void ModuleTreeBuilder::end_threads() {
  for (auto& [tid, thread] : state_->threads) state_->end_calls(thread, 0);
  state_->threads.clear();
}

namespace {

// By thread, then start, parents first: a call ends (and is listed) after
// its children, so sort each thread's.
void sort_module_calls(ModuleTree& tree) {
  auto by_start = [&](const ModuleCall& a, const ModuleCall& b) {
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return tree.nodes[a.node].depth < tree.nodes[b.node].depth;
  };
  for (auto from = tree.calls.begin(); from != tree.calls.end();) {
    auto to = std::find_if(from, tree.calls.end(), [&](const ModuleCall& c) { return c.tid != from->tid; });
    std::sort(from, to, by_start);
    from = to;
  }
}

}  // namespace

void finish_module_tree(ModuleTree& tree) {
  sort_module_calls(tree);
  // Totals: children come after their parents in nodes.
  for (ModuleNode& n : tree.nodes) {
    n.total_ns = n.self_ns;
    n.figures.cuda_ns = n.figures.self_cuda_ns;
    n.figures.cpu_mem = n.figures.self_cpu_mem;
    n.figures.cuda_mem = n.figures.self_cuda_mem;
  }
  for (size_t i = tree.nodes.size(); i-- > 0;) {
    const ModuleNode& child = tree.nodes[i];
    if (child.parent < 0) continue;
    ModuleNode& parent = tree.nodes[child.parent];
    parent.total_ns += child.total_ns;
    parent.figures.cuda_ns += child.figures.cuda_ns;
    parent.figures.cpu_mem += child.figures.cpu_mem;
    parent.figures.cuda_mem += child.figures.cuda_mem;
  }
  // The model's modules first, the synthetic nodes after them, always in one order.
  auto rank = [&](size_t top) {
    const std::string& name = tree.nodes[top].name;
    return !tree.nodes[top].label.empty() ? 0
           : name == kNoModule              ? 1
           : name == kBackward              ? 2
           : name == kStackNotRead          ? 3
                                            : 4;
  };
  // Modules by their first call's start (ModuleNode::first_ns), not by
  // the order they were met in: a streamed read meets threads mixed.
  auto first = [&](size_t a, size_t b) {
    return std::pair(tree.nodes[a].first_ns, tree.nodes[a].label) < std::pair(tree.nodes[b].first_ns, tree.nodes[b].label);
  };
  std::sort(tree.tops.begin(), tree.tops.end(), [&](size_t a, size_t b) {
    return rank(a) != rank(b) ? rank(a) < rank(b) : rank(a) == 0 && first(a, b);
  });
  // A module's children as named_modules() lists them (their places in
  // its _modules), those without a known place after, by first call.
  for (ModuleNode& n : tree.nodes)
    std::sort(n.children.begin(), n.children.end(), [&](size_t a, size_t b) {
      if (tree.nodes[a].position != tree.nodes[b].position) return tree.nodes[a].position < tree.nodes[b].position;
      return first(a, b);
    });
  for (ModuleNode& n : tree.nodes)
    std::stable_sort(n.ops.begin(), n.ops.end(),
                     [](const ModuleOpRow& a, const ModuleOpRow& b) { return a.self_ns > b.self_ns; });
}

ModuleTree build_module_tree(const Recording& recording, bool raw_times) {
  ModuleTreeBuilder builder(recording, true);
  ModuleTree& tree = builder.tree();
  tree.has_stacks = recording.options.with_stack;
  const Timeline timeline = build_timeline(recording.events, compensation_costs(recording, raw_times));
  const CallTree calls = build_call_tree(timeline);
  const CallFigures figures = call_figures(recording, timeline);
  const bool memory = tree.memory_recorded = recording.options.memory;
  const bool gpu = tree.gpu_recorded = recording.cupti_shim.has_value();
  std::unordered_map<uint64_t, uint32_t> stack_of_entry;
  stack_of_entry.reserve(recording.entry_stacks.size());
  for (const EntryStack& s : recording.entry_stacks) stack_of_entry.emplace(s.event_index, s.stack_id);
  std::unordered_map<uint64_t, uint32_t> forward_stack_of_entry;
  for (const EntryStack& s : recording.backward_stacks) forward_stack_of_entry.emplace(s.event_index, s.stack_id);
  // The threads that ran Python at some op entry: an op of one of them
  // without a stack had its stack lost, not a thread without Python.
  std::unordered_map<uint32_t, bool> python_thread;
  for (const OpCall& c : timeline.calls)
    if (stack_of_entry.count(c.entry_index)) python_thread[c.tid] = true;

  std::vector<size_t> node_of_call(timeline.calls.size(), 0);
  // Threads in the order of their first call: the tree's first-seen order
  // does not depend on how the call tree lists its threads.
  std::vector<const std::vector<size_t>*> threads;
  for (const std::vector<size_t>& thread : calls.threads) threads.push_back(&thread);
  std::stable_sort(threads.begin(), threads.end(), [&](const auto* a, const auto* b) {
    return timeline.calls[a->front()].start_ns < timeline.calls[b->front()].start_ns;
  });
  for (const std::vector<size_t>* thread_calls : threads) {
    for (size_t i : *thread_calls) {  // parents before children
      const OpCall& call = timeline.calls[i];
      std::optional<size_t> parent;
      if (calls.parent[i] >= 0) parent = node_of_call[calls.parent[i]];
      std::optional<uint32_t> stack, forward_stack;
      if (auto found = stack_of_entry.find(call.entry_index); found != stack_of_entry.end()) stack = found->second;
      if (auto found = forward_stack_of_entry.find(call.entry_index); found != forward_stack_of_entry.end())
        forward_stack = found->second;
      ModuleCallFigures f;
      if (gpu) f.gpu_ns = figures.gpu_ns[i], f.self_gpu_ns = figures.self_gpu_ns[i];
      if (memory) {
        f.self_cpu_mem = figures.self_cpu_mem[i], f.self_cuda_mem = figures.self_cuda_mem[i];
        f.cpu_mem = figures.cpu_mem[i], f.cuda_mem = figures.cuda_mem[i];
      }
      node_of_call[i] = builder.add_call(call, parent, stack, forward_stack, python_thread.count(call.tid) != 0,
                                         figures.folded_into[i] != i, f);
    }
    builder.end_threads();
  }
  if (memory) {
    sort_module_calls(tree);  // as count_module_memory reads them
    count_module_memory(tree, counted_memory_events(recording.mem_events));
  }
  finish_module_tree(tree);
  return std::move(tree);
}

}  // namespace gpuprof
