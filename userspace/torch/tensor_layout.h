// tensor_layout.h: where a c10::TensorImpl keeps its dimension count, sizes
// and element count, found from the target's own tensors.
//
// Shapes are read in BPF from the TensorImpl that an at::Tensor argument
// points to. The field offsets change between libtorch versions (2.x shrank
// the refcount fields, moving everything 8 bytes down) and no debug info is
// available, so instead of trusting a table gpuprof calibrates: until it
// knows the layout, BPF copies the first GP_RAW_WINDOW_WORDS words of every
// argument's TensorImpl ("raw mode", bpf/op_tracer_abi.h), and
// calibrate_tensor_layout() looks for the one structure all of them share:
//
//   c10::impl::SizesAndStrides  (1.13: @72)
//     size_t size_;                      ndim
//     union {
//       int64_t* outOfLineStorage_;      ndim > inline_dims: sizes, then strides
//       int64_t inlineStorage_[2 * inline_dims];  sizes, then strides
//     };
//   ...
//   int64_t numel_;                      (1.13: @168) product of the sizes
//
// Once the layout is known, BPF sends ndim, numel and the sizes instead
// (compact mode), and userspace checks them with shape_matches_numel(); raw
// windows still in flight are read with decode_raw_window().
//
// The undefined tensor (c10::UndefinedTensorImpl::_singleton) is, in 1.13
// memory, 1 dim of size 0 with numel 0: it decodes to [0], where
// torch.profiler prints [] for an undefined argument. Nothing in the window
// tells it from a real empty tensor without knowing more of the layout; a
// caller that must print [] has to recognise the singleton by its address.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "op_tracer_abi.h"

namespace gpuprof {

// The words BPF copies from the start of one TensorImpl in raw mode.
using RawWindow = std::array<uint64_t, GP_RAW_WINDOW_WORDS>;

enum class CalibrationStatus {
  calibrated,         // `layout` is set
  need_more_samples,  // nothing contradicts the pattern yet, but the samples
                      // do not pin one layout down: keep collecting
  refused,            // the samples contradict every layout (or enough were
                      // seen without an answer): stop, shapes are unavailable
};

// Evidence the winning layout must have; the defaults are what
// calibrate_tensor_layout() uses in production (tests lower or raise them).
struct CalibrationOptions {
  // Tensors with 1..inline_dims dims whose sizes multiply to the numel word.
  size_t min_explained = 8;
  // Distinct shapes among them: one shape repeated proves little.
  size_t min_shapes = 4;
  // Explained tensors whose contiguous strides sit right after the inline
  // sizes (and are not all 1): what pins inline_dims down.
  size_t min_stride_hits = 2;
  // Samples a layout may fail to explain, per mille of all samples: a tensor
  // resized by another thread while BPF copied it, or a TensorImpl subclass
  // that keeps its sizes elsewhere, must not block calibration.
  unsigned max_unexplained_per_mille = 50;
  // With this many samples, refuse (status refused) when the samples
  // contradict the pattern: no layout consistent with them explains more of
  // them than the tolerance above as tensors with dims (some layout always
  // fits: a word that is 0 in every sample reads as ndim 0), or contiguous
  // strides plainly follow their sizes somewhere but no layout that fits
  // explains them (no word holds numel). Below it, only ask for more: a
  // program's first arguments may all be 0-dim or 1-dim, and below 20
  // samples the tolerance is zero.
  size_t refuse_after = 128;
  // With this many samples and still no answer, stop asking for more.
  size_t give_up_after = 4096;
};

struct LayoutCalibration {
  CalibrationStatus status = CalibrationStatus::need_more_samples;
  std::optional<gp_tensor_layout> layout;  // set iff status == calibrated
  // One line for the user: "TensorImpl layout: ndim @72, sizes @80, numel
  // @168 (from 40 tensors, 12 shapes)", "cannot calibrate yet: ..." (need
  // more samples) or "cannot calibrate: ...".
  std::string explanation;

  bool more_samples_may_help() const { return status == CalibrationStatus::need_more_samples; }
};

// Finds the layout from windows of TensorImpls that were operator arguments
// (any mix of 0-dim, undefined, non-contiguous, zero-sized, > inline_dims,
// any dtype). A layout is accepted only when:
//   - it is consistent with all samples but max_unexplained_per_mille:
//     every sample reads as 0 dims with numel 0 or 1, as 1..inline_dims
//     sizes (each >= 0) whose product is the numel word, or as more dims
//     (at most 64) with a pointer where the sizes would be;
//   - it explains at least min_explained tensors with dimensions, of
//     min_shapes shapes, one of them with >= 2 dims, all >= 2 and distinct
//     (so that neither the order of the sizes nor a stray 1 fools it);
//   - min_stride_hits of those have their contiguous strides at
//     sizes + 8 * inline_dims (a layout must explain the strides, too);
//   - no other layout that meets all of the above is contradicted by as few
//     samples: two equally good explanations mean refusing to pick one.
//
// Cost: about 7 us per sample (27 ms for 4096 on one core), every call
// starting over; a caller collecting samples should recalibrate every so
// often (say when the count doubles), not on every sample.
LayoutCalibration calibrate_tensor_layout(std::span<const RawWindow> samples,
                                          const CalibrationOptions& options = {});

// The sizes of the tensor in `window` (at least GP_RAW_WINDOW_WORDS words, or
// enough to reach the layout's fields): [] for 0 dims. nullopt when the sizes
// are out of line (ndim > inline_dims) or do not multiply to numel (a torn
// read, or not a tensor the layout describes).
std::optional<std::vector<int64_t>> decode_raw_window(std::span<const uint64_t> window,
                                                      const gp_tensor_layout& layout);

// Whether sizes (each >= 0) multiply to numel without overflowing int64.
// An empty shape matches numel 1 (a 0-dim tensor) and numel 0 (the
// undefined tensor, which torch reports as []).
bool shape_matches_numel(std::span<const int64_t> sizes, int64_t numel);

// "ndim @72, sizes @80, numel @168": byte offsets, as in the explanations.
std::string describe_tensor_layout(const gp_tensor_layout& layout);

}  // namespace gpuprof
