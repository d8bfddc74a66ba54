// shape_collector.h: ENTRY shape payloads -> InputShapes, calibrating the
// TensorImpl layout on the first tensors seen.
//
// The BPF side (op_tracer_abi.h, "Input shapes") starts in raw mode: for each tensor
// argument it copies a window of the TensorImpl. The collector keeps those
// entries, feeds their windows to calibrate_tensor_layout() (tensor_layout.h)
// and, once a layout is found, hands it to the caller (who gives it to BPF,
// which then sends compact shapes) and decodes the kept entries with it. So
// the entries recorded before calibration keep their shapes: nothing is lost
// to calibration. If the layout is refused, or never found, the shapes of
// the kept entries are unknown, and say so ("?"), rather than guessed.
//
// Compact shapes are verified: the product of the sizes must equal the
// TensorImpl's numel, or the argument is unknown.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "op_tracer_abi.h"
#include "torch/op_args.h"
#include "record/recording.h"
#include "torch/tensor_layout.h"

namespace gpuprof {

class ShapeCollector {
 public:
  // plans[op id]; ops beyond it, or with !ok plans, send no payload.
  explicit ShapeCollector(std::vector<OpArgPlan> plans);

  // One ENTRY event (events[event_index] of the recording) with its payload.
  void add_entry(uint64_t event_index, uint32_t op_id, std::span<const uint64_t> words);

  // An ENTRY of an op with tensor arguments that came without shapes (the
  // raw windows' share of the ring was spent before calibration,
  // OpTracer::set_shapes): its tensors count as unknown.
  void note_entry_without_shapes(uint32_t op_id);

  // The layout, the first time one is found after add_entry(); nullopt
  // otherwise. The caller passes it to OpTracer::set_tensor_layout().
  std::optional<gp_tensor_layout> take_new_layout();

  // Entries whose shapes are now known (or known to be unknown), in the
  // order they were added once decodable.
  struct Ready {
    uint64_t event_index;
    InputShapes shapes;
  };
  std::vector<Ready> take_ready();

  // Recording over: entries still waiting for a layout become ready with
  // their tensors unknown (or decoded, if a last calibration succeeds).
  void finish();

  // One line for the user: the layout found, or why there is none (yet).
  const std::string& status_line() const { return status_; }
  bool calibrated() const { return layout_.has_value(); }
  bool refused() const { return refused_; }
  uint64_t unknown_tensors() const { return unknown_; }

 private:
  struct Pending {
    uint64_t event_index;
    uint32_t op_id;
    std::vector<uint64_t> words;
  };
  void try_calibrate(bool last_chance);
  InputShapes decode(uint32_t op_id, std::span<const uint64_t> words);
  void release_pending();

  std::vector<OpArgPlan> plans_;
  std::optional<gp_tensor_layout> layout_;
  bool layout_taken_ = false;
  bool refused_ = false;
  std::vector<RawWindow> samples_;
  size_t samples_at_last_try_ = 0;
  std::vector<Pending> pending_;
  std::vector<Ready> ready_;
  std::string status_ = "TensorImpl layout: calibrating on the first tensors";
  uint64_t unknown_ = 0;
};

}  // namespace gpuprof
