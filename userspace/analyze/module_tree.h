// module_tree.h: the model's modules as a tree, with the op time and calls
// under each: torchprof's layer table (docs/modules.md).
//
// Which module call an op ran in comes from the Python stack of its entry
// (record --with-modules or --with-stack: Recording::entry_stacks): the
// `nn.Module: Conv2d_18` frames torch's with_stack names module calls with,
// one name per module instance. An op's module path is the list of those
// frames in its outermost call's stack, outermost first; the tree is the
// trie of the paths, children in named_modules()'s order (their places in
// the parent's _modules, recorded with their names), those without a
// recorded place after them in the order of their first calls. An op nested
// in another op belongs to the module of its outermost call.
//
// A module's calls are counted on each thread as its frame opens: an op
// whose path holds the module where the thread's previous op's path did not
// (at that depth) starts a call. Two calls of one module with no op between
// them at its parent's level (`self.relu(self.relu(x))`) count as one.
//
// Names: the root module by its class (`ResNet`), each child by its
// attribute name in its parent's _modules (`layer1`, `0`, `conv1`) when the
// recording holds it (Recording::module_names, record --with-modules), else
// by torch's instance label (`Conv2d_18`). Ops with no module frame sit in
// "[no module]" (the script's own ops). A call of torch's autograd engine
// (with the ops nested in them, on any thread) is in the module of the
// forward op that made its node, where the recording links the two
// (record --with-modules: Recording::backward_stacks, by torch's sequence
// numbers), counting no module call; else in "[backward]". Other ops of
// threads without Python frames are in "[no Python frames]", ops of Python
// threads whose entry stack was not read (a full ring, an unreadable
// frame) in "[stack not read]". These synthetic nodes count no calls.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyze/module_names.h"
#include "analyze/op_timeline.h"
#include "record/recording.h"

namespace gpuprof {


// One op name's calls directly in a module (not in a child module).
// Memory and GPU figures of a module or an op row, as the op table's
// (call_figures.h): self, and with what runs inside (total). Zero unless the
// recording has them (ModuleTree::memory_recorded, gpu_recorded).
struct ModuleFigures {
  uint64_t self_cuda_ns = 0, cuda_ns = 0;
  int64_t self_cpu_mem = 0, cpu_mem = 0;
  int64_t self_cuda_mem = 0, cuda_mem = 0;
};

struct ModuleOpRow {
  std::string name;
  uint64_t calls = 0;     // calls torch's table counts (same-name only children folded)
  uint64_t self_ns = 0;   // compensated self time
  uint64_t total_ns = 0;  // compensated duration
  ModuleFigures figures;  // the op table's Self CUDA, CUDA total, CPU Mem, ... of these calls
};

struct ModuleNode {
  std::string name;   // "ResNet", "layer1", "conv1", "Conv2d_18", "[no module]"
  std::string label;  // torch's instance label ("ResNet_0", "Conv2d_18"); "" for the synthetic nodes
  int64_t parent = -1;  // index in ModuleTree::nodes; -1 for a top node
  uint32_t position = kNoPosition;  // its place in its parent's _modules (recording.h, ModuleName)
  uint32_t depth = 0;   // 0 for a top node
  // The start of the first call placed in it or under it: the order of a
  // model's tops, and of children without a recorded place.
  uint64_t first_ns = UINT64_MAX;
  std::vector<size_t> children;  // in named_modules() order where known, else by first_ns
  uint64_t calls = 0;     // module calls (0 for a synthetic node)
  uint64_t self_ns = 0;   // its ops' time not inside a child module
  uint64_t total_ns = 0;  // self_ns and its children's total_ns
  // As self_ns and total_ns: its ops' GPU time and memory (with the ops
  // nested in them), and with its children's.
  ModuleFigures figures;
  std::vector<ModuleOpRow> ops;  // its own ops, by self time, largest first
};

// One call of a module on one thread (a Chrome trace's module slice): from
// the start of its first op to the end of its last (the outermost calls
// counted in it), so a module call encloses its ops and its child modules'
// calls, and calls of one thread never cross.
struct ModuleCall {
  size_t node = 0;
  uint32_t tid = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  bool operator==(const ModuleCall&) const = default;
};

struct ModuleTree {
  std::vector<ModuleNode> nodes;  // parents before children
  // Every module call counted in ModuleNode::calls, by thread, then start,
  // parents before their children.
  std::vector<ModuleCall> calls;
  std::vector<size_t> tops;       // the top nodes: the model's by first_ns, then the synthetic ones
  bool has_stacks = false;        // the recording holds entry stacks (--with-stack / --with-modules)
  bool memory_recorded = false;   // record --profile-memory: the memory figures apply
  bool gpu_recorded = false;      // the CUPTI shim's records: the CUDA time figures apply
  uint64_t ops_without_stack = 0; // op calls on Python threads whose entry stack was not read

  // "ResNet.layer1.0.conv1": the names from the top node down.
  std::string path(size_t node) const;
};

// raw_times: durations as the probes stamped them (default: compensated,
// as the op table's).
ModuleTree build_module_tree(const Recording& recording, bool raw_times = false);

// One op call's figures as the op table counts them (call_figures.h); zero
// when not recorded.
struct ModuleCallFigures {
  uint64_t gpu_ns = 0, self_gpu_ns = 0;
  int64_t self_cpu_mem = 0, self_cuda_mem = 0, cpu_mem = 0, cuda_mem = 0;
};

// Calls that a streamed read (streamed_module_tree.h) held back until it
// knew whether their thread runs Python: outermost calls without an entry
// stack (not the autograd engine's) and the calls nested in them, summed
// as add_call sums them into [stack not read] or [no Python frames]. GPU
// figures too; no memory figures (a recording with memory is not streamed).
struct HeldCalls {
  uint64_t outermost = 0;         // the outermost calls
  uint64_t self_ns = 0;           // their compensated durations
  uint64_t self_cuda_ns = 0;      // their GPU time, with their nested calls'
  std::vector<ModuleOpRow> rows;  // by op name, in the order first held
};

// A call of torch's autograd engine (a node it evaluates or applies): it
// is placed by the stack of the forward op that made its node, not by its
// own entry stack.
bool is_autograd_engine_call(const Recording& recording, const OpCall& call);

// The tree built call by call, each thread's calls in its order (parents
// before children): build_module_tree feeds it a whole timeline, top's live
// module view (live/live_module_tree.h) each thread's settled calls as they
// come (analyze/settled_calls.h). A module call open when a thread's calls
// pause stays open: calls are counted as in one pass over the whole run.
class ModuleTreeBuilder {
 public:
  // Reads the recording's ops, frames, stacks and module names when a call
  // needs them; keep_calls: list every module call (ModuleTree::calls).
  ModuleTreeBuilder(const Recording& recording, bool keep_calls);
  ~ModuleTreeBuilder();
  ModuleTreeBuilder(const ModuleTreeBuilder&) = delete;
  ModuleTreeBuilder& operator=(const ModuleTreeBuilder&) = delete;

  // The recording's frames or module names grew since (a live recording).
  void names_grew();
  // One call. parent_node: its parent call's node (nullopt: an outermost
  // call, placed by its entry stack, nullopt when none was read);
  // forward_stack: for a call of the autograd engine, the entry stack of
  // the forward op that made its node (Recording::backward_stacks), which
  // places it in that op's module, nullopt: under [backward];
  // python_thread: its thread ran Python at some op entry; folded: torch's
  // fold counts it in a same-name parent (aggregator.h). Returns its node.
  size_t add_call(const OpCall& call, std::optional<size_t> parent_node, std::optional<uint32_t> entry_stack,
                  std::optional<uint32_t> forward_stack, bool python_thread, bool folded,
                  const ModuleCallFigures& figures);
  // Held calls of a thread now known to run Python (python_thread) or,
  // at the end, never seen to: into [stack not read] or [no Python frames].
  void add_held_calls(const HeldCalls& held, bool python_thread);
  // Ends the module calls open on every thread (its calls are all in).
  void end_threads();
  // The start of the outermost module call still open on a thread
  // (nullopt: none is): every call listed later (ModuleTree::calls) starts
  // no earlier, so those listed before it are in their final order once
  // sorted (a streamed Chrome trace writes them: streamed_chrome_trace.h).
  std::optional<uint64_t> open_since(uint32_t tid) const;
  // The tree so far; finish_module_tree() sums and orders it.
  ModuleTree& tree();
  const ModuleTree& tree() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Totals summed (a node's own and its children's), tops, children and op
// rows put in their order (module_tree.h): what build_module_tree returns.
void finish_module_tree(ModuleTree& tree);

}  // namespace gpuprof
