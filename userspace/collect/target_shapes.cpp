#include "collect/target_shapes.h"

#include <cstdio>

#include "target/target_process.h"

namespace gpuprof {

// Shape plans go to BPF before any probe fires; OpInfo records, per op,
// what report needs to print the arguments that are not read per call.
bool TargetShapes::setup(DispatcherCatalog& catalog) {
  std::vector<gp_shape_plan> plans(catalog.ops.size());
  for (size_t op = 0; op < catalog.ops.size() && op < catalog.arg_plans.size(); op++) {
    const OpArgPlan& plan = catalog.arg_plans[op];
    if (!plan.ok || op >= GP_MAX_SHAPE_PLANS) continue;
    plans[op] = to_bpf_plan(plan);
    catalog.ops[op].arg_count = static_cast<int32_t>(plan.arg_count);
    catalog.ops[op].tensor_args = static_cast<uint32_t>(plan.tensors.size());
  }
  catalog_tensor_args_.clear();
  for (const OpInfo& op : catalog.ops) catalog_tensor_args_.push_back(op.tensor_args);
  std::vector<OpArgPlan> collector_plans = catalog.arg_plans;
  for (size_t op = GP_MAX_SHAPE_PLANS; op < collector_plans.size(); op++) collector_plans[op].ok = false;
  collector_.emplace(std::move(collector_plans));
  if (Result<void> set = tracer_.set_shape_plans(plans); !set) {
    diagnostics_.warn("no input shapes: " + set.error());
    for (OpInfo& op : catalog.ops) op.arg_count = -1, op.tensor_args = 0;
    return false;
  }
  find_undefined_tensor();
  tracer_.set_shapes(true);
  return true;
}

// c10::UndefinedTensorImpl::_singleton lives in libc10, which launch mode
// may see mapped only after libtorch_cpu.
void TargetShapes::find_undefined_tensor() {
  if (undefined_tensor_found_) return;
  if (auto undefined = find_symbol_in_target(target_pid_, "libc10.so",
                                              "_ZN3c1019UndefinedTensorImpl10_singletonE")) {
    tracer_.set_undefined_tensor_impl(*undefined);
    undefined_tensor_found_ = true;
  }
}

void TargetShapes::hand_layout_to_bpf() {
  layout_decided_ = true;
  if (auto layout = collector_->take_new_layout()) {
    tracer_.set_tensor_layout(*layout);
    std::fprintf(stderr, "gpuprof: %s\n", collector_->status_line().c_str());
  } else if (collector_->refused()) {
    tracer_.set_shapes(false);
    diagnostics_.warn("no input shapes: " + collector_->status_line());
  }
}

// Decoded shapes to the file (and the layout to BPF, found at the stop).
void TargetShapes::drain(RecordOutputs& writer) {
  if (!layout_decided_ && (collector_->calibrated() || collector_->refused())) hand_layout_to_bpf();
  for (ShapeCollector::Ready& ready : collector_->take_ready()) {
    if (!diagnostics_.writing()) continue;
    if (Result<void> written = writer.append_shapes(ready.event_index, ready.shapes); !written)
      diagnostics_.write_failed(written.error());
  }
}

void TargetShapes::finish(RecordOutputs& writer, RecordStats& stats) {
  bool was_calibrated = collector_->calibrated();
  collector_->finish();
  drain(writer);
  if (!collector_->calibrated() || !was_calibrated)
    std::fprintf(stderr, "gpuprof: %s\n", collector_->status_line().c_str());
  stats.shapes_unknown = collector_->unknown_tensors();
  stats.tensor_layout = collector_->status_line();
}

}  // namespace gpuprof
