// live_module_tree.h: top's module view (top --with-modules, key m): the
// layer table of report --modules (analyze/module_tree.h,
// output/module_table.h), of the ops recorded so far.
//
// The session hands what a recording's module tree is built from as it
// records (collect/live_consumer.h): op events, each entry's Python stack,
// the frames and stacks they name, the modules' attribute names. Each
// thread's calls go into one ModuleTreeBuilder as they settle
// (analyze/settled_calls.h: once nothing that encloses them is open), so a
// module call open at a refresh stays open, and calls are counted as
// report --modules counts them over the same ops. A call still open at a
// refresh shows at the first refresh after it settles.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "analyze/module_tree.h"
#include "analyze/settled_calls.h"
#include "record/recording.h"

namespace gpuprof {

class LiveModuleTree {
 public:
  LiveModuleTree();
  ~LiveModuleTree();

  // What the session hands over (LiveConsumer's calls of the same names).
  void begin(const std::vector<OpInfo>& ops);
  void ops_found(uint32_t first_id, const std::vector<OpInfo>& ops);
  // Before the first op event: its times are compensated by them.
  void probe_costs(const ProbeCosts& costs) { costs_ = costs; }
  void frame(uint32_t id, const std::string& name);
  void stack(uint32_t id, const std::vector<uint32_t>& frame_ids);
  void entry_stack(uint64_t event_index, uint32_t stack_id) { stack_of_entry_[event_index] = stack_id; }
  void backward_stack(uint64_t event_index, uint32_t stack_id) { forward_stack_of_entry_[event_index] = stack_id; }
  void module_names(const std::vector<ModuleName>& names);
  void op_event(const gp_event& event, uint64_t index);

  // A refresh: the calls settled by now go into the tree; interval() is
  // then what came since the refresh before.
  void roll();
  // The end of the events: every call, settled or not, goes in.
  void finish();
  ModuleTree since_start() const;
  ModuleTree interval() const;

 private:
  void add_forest(const Timeline& forest);
  void take_settled();

  Recording recording_;  // ops, frames, stacks and module names: what the builder reads
  std::optional<ProbeCosts> costs_;
  std::unique_ptr<SettledCalls> settled_;  // from the first op event on
  ModuleTreeBuilder builder_;
  bool names_grew_ = false;
  std::unordered_map<uint64_t, uint32_t> stack_of_entry_;  // entries whose call has not settled yet
  std::unordered_map<uint64_t, uint32_t> forward_stack_of_entry_;  // the same, of engine calls' forwards
  std::unordered_set<uint32_t> python_threads_;            // threads with an entry stack so far
  ModuleTree before_;  // since_start() at the refresh before the last
  ModuleTree now_;     // since_start() at the last refresh
};

// The figures of `now` less those of `before`, a tree of the same builder
// at an earlier moment (its nodes are the first of now's): one interval's.
ModuleTree module_tree_difference(const ModuleTree& now, const ModuleTree& before);

}  // namespace gpuprof
