#include "torch/shape_collector.h"

#include <algorithm>

namespace gpuprof {
namespace {

// Calibration input: at most this many windows are kept; the first attempt
// is made at kFirstTry windows.
constexpr size_t kMaxSamples = 4096;
constexpr size_t kFirstTry = 16;
// Entries kept for decoding while uncalibrated: at this many the layout is
// found or refused (BPF then stops sending raw windows). BPF's own bound on
// them, a quarter of the ring (OpTracer::set_shapes), holds about 16384
// entries of two tensors: a reader that lags while calibrating has room.
constexpr size_t kMaxPending = 4096;

// Layouts of released libtorch builds, tried when the target's tensors are
// too uniform to calibrate from scratch (a loop over one or two shapes): one
// is taken only if it explains the live samples as calibration would demand.
constexpr gp_tensor_layout kKnownLayouts[] = {
    {.ndim_offset = 72, .sizes_offset = 80, .numel_offset = 168, .inline_dims = 5},  // 1.13 (measured)
    {.ndim_offset = 64, .sizes_offset = 72, .numel_offset = 160, .inline_dims = 5},  // 2.x (8 bytes less refcount)
};
constexpr size_t kKnownLayoutMinExplained = 32;
constexpr size_t kKnownLayoutMaxUnexplainedPerMille = 50;
// When the recording ends first (a short program): fewer tensors, but then
// every one of them must fit.
constexpr size_t kKnownLayoutMinExplainedAtEnd = 4;

// Whether `layout` reads every sample (but a few) as a tensor whose sizes
// multiply to its numel, with enough of them having dimensions.
bool known_layout_fits(std::span<const RawWindow> samples, const gp_tensor_layout& layout,
                       bool at_end) {
  size_t explained = 0, contradicted = 0;
  for (const RawWindow& w : samples) {
    const uint64_t ndim = w[layout.ndim_offset / 8];
    if (ndim > 64) {
      contradicted++;
    } else if (ndim > layout.inline_dims) {
      continue;  // out of line: not checkable from the window
    } else if (auto sizes = decode_raw_window(w, layout)) {
      explained += !sizes->empty();
    } else {
      contradicted++;
    }
  }
  if (at_end && contradicted == 0 && explained >= kKnownLayoutMinExplainedAtEnd) return true;
  return explained >= kKnownLayoutMinExplained &&
         contradicted * 1000 <= kKnownLayoutMaxUnexplainedPerMille * samples.size();
}

bool has_raw_slot(std::span<const uint64_t> words, const OpArgPlan& plan) {
  size_t at = 0;
  for (size_t i = 0; i < plan.tensors.size() && at < words.size(); i++) {
    uint64_t status = words[at];
    if (status & GP_SLOT_RAW) return true;
    at += GP_SLOT_STATUS(status) == GP_SLOT_TENSOR && at + 2 < words.size()
              ? 3 + std::min<uint64_t>(words[at + 1], GP_MAX_DIMS)
              : 1;
  }
  return false;
}

}  // namespace

ShapeCollector::ShapeCollector(std::vector<OpArgPlan> plans) : plans_(std::move(plans)) {}

void ShapeCollector::add_entry(uint64_t event_index, uint32_t op_id, std::span<const uint64_t> words) {
  if (op_id >= plans_.size() || !plans_[op_id].ok) return;
  // Entries leave in event order: one behind a kept entry is kept too.
  if (!pending_.empty() || (!layout_ && !refused_ && has_raw_slot(words, plans_[op_id]))) {
    // Harvest the windows for calibration and keep the entry until then.
    size_t at = 0;
    for (size_t i = 0; i < plans_[op_id].tensors.size() && at < words.size(); i++) {
      const uint64_t status = words[at++];
      if (GP_SLOT_STATUS(status) != GP_SLOT_TENSOR) continue;
      if (at + GP_RAW_WINDOW_WORDS > words.size()) break;
      if (samples_.size() < kMaxSamples) {
        RawWindow window;
        std::copy_n(words.begin() + static_cast<ptrdiff_t>(at), GP_RAW_WINDOW_WORDS, window.begin());
        samples_.push_back(window);
      }
      at += GP_RAW_WINDOW_WORDS;
    }
    pending_.push_back(Pending{event_index, op_id, std::vector<uint64_t>(words.begin(), words.end())});
    // Attempts at 16, 32, 64, ... windows: one attempt over n windows costs
    // O(n), so a target that never calibrates costs O(kMaxSamples) in all.
    if (samples_.size() >= std::max(kFirstTry, 2 * samples_at_last_try_)) try_calibrate(false);
    if (!layout_ && !refused_ && pending_.size() >= kMaxPending) try_calibrate(true);
    return;
  }
  ready_.push_back(Ready{event_index, decode(op_id, words)});
}

void ShapeCollector::note_entry_without_shapes(uint32_t op_id) {
  if (op_id < plans_.size() && plans_[op_id].ok) unknown_ += plans_[op_id].tensors.size();
}

void ShapeCollector::try_calibrate(bool last_chance) {
  samples_at_last_try_ = samples_.size();
  LayoutCalibration result = calibrate_tensor_layout(samples_);
  if (!result.layout && result.more_samples_may_help()) {
    for (const gp_tensor_layout& known : kKnownLayouts) {
      if (!known_layout_fits(samples_, known, last_chance)) continue;
      result.layout = known;
      result.explanation = "TensorImpl layout: " + describe_tensor_layout(known) +
                           " (a known libtorch layout, checked on " + std::to_string(samples_.size()) +
                           " live tensors: too few distinct shapes to calibrate from scratch)";
      break;
    }
  }
  if (result.layout) {
    layout_ = result.layout;
    status_ = result.explanation;
  } else if (!result.more_samples_may_help() || last_chance) {
    refused_ = true;
    status_ = result.explanation;
    if (status_.starts_with("cannot calibrate yet:"))  // no more samples are coming
      status_ = "cannot calibrate (too few tensors before the end):" +
                status_.substr(std::string_view("cannot calibrate yet:").size());
  } else {
    return;
  }
  release_pending();
}

void ShapeCollector::release_pending() {
  for (Pending& p : pending_) ready_.push_back(Ready{p.event_index, decode(p.op_id, p.words)});
  pending_.clear();
  pending_.shrink_to_fit();
  samples_.clear();
  samples_.shrink_to_fit();
}

void ShapeCollector::finish() {
  if (!layout_ && !refused_ && !pending_.empty()) try_calibrate(true);
}

std::optional<gp_tensor_layout> ShapeCollector::take_new_layout() {
  if (!layout_ || layout_taken_) return std::nullopt;
  layout_taken_ = true;
  return layout_;
}

std::vector<ShapeCollector::Ready> ShapeCollector::take_ready() {
  std::vector<Ready> out;
  out.swap(ready_);
  return out;
}

InputShapes ShapeCollector::decode(uint32_t op_id, std::span<const uint64_t> words) {
  const OpArgPlan& plan = plans_[op_id];
  InputShapes shapes(plan.arg_count, ArgShape(std::vector<int64_t>{}));
  auto unknown = [&](ArgShape& out) {
    out = std::nullopt;
    unknown_++;
  };
  size_t at = 0;
  ArgShape ignored;  // a slot whose argument the plan does not list: read past it
  for (const TensorArgSlot& slot : plan.tensors) {
    ArgShape& out = slot.arg_index < shapes.size() ? shapes[slot.arg_index] : ignored;
    if (at >= words.size()) {
      unknown(out);
      continue;
    }
    const uint64_t status = words[at++];
    if (GP_SLOT_STATUS(status) == GP_SLOT_NONE) continue;  // [] as torch prints it
    if (GP_SLOT_STATUS(status) != GP_SLOT_TENSOR) {
      unknown(out);
      continue;
    }
    if (status & GP_SLOT_RAW) {
      if (at + GP_RAW_WINDOW_WORDS > words.size()) {
        at = words.size();
        unknown(out);
        continue;
      }
      std::span<const uint64_t> window = words.subspan(at, GP_RAW_WINDOW_WORDS);
      at += GP_RAW_WINDOW_WORDS;
      std::optional<std::vector<int64_t>> sizes;
      if (layout_) sizes = decode_raw_window(window, *layout_);
      if (sizes)
        out = std::move(*sizes);
      else
        unknown(out);
      continue;
    }
    if (at + 2 > words.size()) {
      at = words.size();
      unknown(out);
      continue;
    }
    const uint64_t ndim = words[at];
    const auto numel = static_cast<int64_t>(words[at + 1]);
    at += 2;
    const size_t captured = std::min<uint64_t>(ndim, GP_MAX_DIMS);
    if (at + captured > words.size()) {
      at = words.size();
      unknown(out);
      continue;
    }
    std::vector<int64_t> sizes(captured);
    for (size_t d = 0; d < captured; d++) sizes[d] = static_cast<int64_t>(words[at + d]);
    at += captured;
    if (ndim > GP_MAX_DIMS || !shape_matches_numel(sizes, numel))
      unknown(out);
    else
      out = std::move(sizes);
  }
  return shapes;
}

}  // namespace gpuprof
