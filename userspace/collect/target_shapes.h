// target_shapes.h: --record-shapes for one target: the tensor sizes of
// every op's arguments, read by the op probe at entry (payload words) and
// decoded here (shape_collector.h) once the TensorImpl layout is calibrated
// on the first tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "collect/diagnostics.h"
#include "probe/op_tracer.h"
#include "record/record_outputs.h"
#include "torch/dispatcher_catalog.h"
#include "torch/shape_collector.h"

namespace gpuprof {

class TargetShapes {
 public:
  TargetShapes(OpTracer& tracer, Diagnostics& diagnostics, int target_pid)
      : tracer_(tracer), diagnostics_(diagnostics), target_pid_(target_pid) {}

  // Plans to BPF, and to catalog's ops what report needs; false (warned)
  // when BPF refused them: no shapes.
  bool setup(DispatcherCatalog& catalog);
  // c10's undefined tensor, once libc10 is mapped.
  void find_undefined_tensor();
  bool waits_for_libc10() const { return !undefined_tensor_found_; }
  // An op entry recorded at `event_index`, with its payload.
  // The layout (or its refusal) goes to BPF as soon as this entry decides
  // it, not after the ring is read: BPF sends raw windows until then, and a
  // ring that a busy target keeps full may take long to read.
  void on_entry(uint64_t event_index, uint32_t op_id, const EntryPayload& payload) {
    if (!payload.words.empty()) {
      collector_->add_entry(event_index, op_id, payload.words);
      if (!layout_decided_ && (collector_->calibrated() || collector_->refused())) hand_layout_to_bpf();
    } else if (op_id < catalog_tensor_args_.size() && catalog_tensor_args_[op_id] > 0) {
      collector_->note_entry_without_shapes(op_id);
    }
  }
  void drain(RecordOutputs& writer);
  // At the stop: the rest decoded and recorded, the layout's status said.
  void finish(RecordOutputs& writer, RecordStats& stats);

 private:
  // The layout found to BPF, said on stderr; or, refused, shapes off in
  // BPF (no more payloads that cannot be decoded), with a warning.
  void hand_layout_to_bpf();

  OpTracer& tracer_;
  Diagnostics& diagnostics_;
  const int target_pid_;
  std::optional<ShapeCollector> collector_;
  std::vector<uint32_t> catalog_tensor_args_;  // per op id, for entries without payload
  bool layout_decided_ = false;
  bool undefined_tensor_found_ = false;
};

}  // namespace gpuprof
