// tensor_layout.cpp: calibration of the TensorImpl layout (see the header).
//
// The search is exhaustive over a small space: the ndim word (any of the 32),
// inline_dims (1..12, so that sizes and strides fit in the window) and the
// numel word (any word outside SizesAndStrides): a few thousand layouts, each
// checked against every sample. A layout is scored by how many samples it
// explains and how many it cannot; only a unique best that meets the evidence
// thresholds is accepted.
#include "torch/tensor_layout.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <sstream>

namespace gpuprof {
namespace {

constexpr uint32_t kWindowWords = GP_RAW_WINDOW_WORDS;
constexpr uint32_t kMaxInlineDims = 12;
// More dims than this is not a tensor but some other number in that word.
// torch sets no hard limit, but no operator argument comes near it.
constexpr uint64_t kMaxPlausibleDims = 64;

// Out-of-line sizes live on the heap: a user-space address, 8-aligned.
bool looks_like_heap_pointer(uint64_t word) {
  return word >= 0x10000 && word < (1ull << 47) && word % 8 == 0;
}

// The product of sizes, nullopt when one is negative or the product does not
// fit in int64. A zero size makes the product 0 whatever the others are, as
// in torch (an empty tensor of huge other dims is valid).
std::optional<int64_t> checked_product(std::span<const int64_t> sizes) {
  for (int64_t size : sizes) {
    if (size < 0) return std::nullopt;
  }
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) return 0;
  int64_t product = 1;
  for (int64_t size : sizes) {
    if (__builtin_mul_overflow(product, size, &product)) return std::nullopt;
  }
  return product;
}

// Whether `strides` are the ones torch gives a fresh contiguous tensor of
// `sizes` (c10::contiguous_strides: a size-0 or size-1 dim counts as 1), and
// are not all 1, which would prove nothing about where strides are.
bool contiguous_strides_at(std::span<const int64_t> sizes, std::span<const uint64_t> strides) {
  int64_t expected = 1;
  bool any_above_one = false;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (static_cast<int64_t>(strides[i]) != expected) return false;
    any_above_one |= expected > 1;
    if (__builtin_mul_overflow(expected, std::max<int64_t>(sizes[i], 1), &expected)) return false;
  }
  return any_above_one;
}

// Sizes that tell a layout apart from a shuffled or shifted one: two or
// more dims, none 0 or 1, no two equal.
bool is_telling_shape(std::span<const int64_t> sizes) {
  if (sizes.size() < 2) return false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 2) return false;
    for (size_t j = 0; j < i; ++j) {
      if (sizes[i] == sizes[j]) return false;
    }
  }
  return true;
}

enum class Reading : uint8_t {
  no_dims,      // ndim word 0: numel must be 0 or 1
  inline_dims,  // 1..inline_dims sizes: numel must be their product
  out_of_line,  // more dims, a pointer where the sizes would be
  impossible,   // no tensor reads like this
};

// One sample read with a candidate ndim word and inline_dims.
struct SampleReading {
  Reading kind = Reading::impossible;
  int64_t product = 0;     // inline_dims: product of the sizes
  uint32_t shape_id = 0;   // inline_dims: equal shapes, equal ids
  bool telling = false;    // inline_dims: is_telling_shape()
  bool stride_hit = false; // inline_dims: contiguous_strides_at()
};

struct Candidate {
  uint32_t ndim_word = 0;
  uint32_t inline_dims = 0;
  uint32_t numel_word = 0;
  size_t unexplained = 0;  // samples this layout cannot read
  size_t explained = 0;    // samples with dims whose product is numel
  size_t shapes = 0;       // distinct shapes among them
  size_t stride_hits = 0;
  bool has_telling_shape = false;
  bool qualified = false;  // meets every evidence threshold

  gp_tensor_layout layout() const {
    return {ndim_word * 8, (ndim_word + 1) * 8, numel_word * 8, inline_dims};
  }
};

std::vector<SampleReading> read_samples(std::span<const RawWindow> samples, uint32_t ndim_word,
                                        uint32_t inline_dims, size_t* impossible) {
  std::vector<SampleReading> readings(samples.size());
  std::map<std::vector<int64_t>, uint32_t> shape_ids;
  *impossible = 0;
  for (size_t s = 0; s < samples.size(); ++s) {
    const RawWindow& w = samples[s];
    SampleReading& r = readings[s];
    uint64_t ndim = w[ndim_word];
    if (ndim == 0) {
      r.kind = Reading::no_dims;
    } else if (ndim <= inline_dims) {
      std::vector<int64_t> sizes(w.begin() + ndim_word + 1, w.begin() + ndim_word + 1 + ndim);
      if (auto product = checked_product(sizes)) {
        r.kind = Reading::inline_dims;
        r.product = *product;
        r.telling = is_telling_shape(sizes);
        r.stride_hit = contiguous_strides_at(
            sizes, std::span<const uint64_t>(w).subspan(ndim_word + 1 + inline_dims, ndim));
        r.shape_id = shape_ids.emplace(std::move(sizes), shape_ids.size()).first->second;
      }
    } else if (ndim <= kMaxPlausibleDims && looks_like_heap_pointer(w[ndim_word + 1])) {
      r.kind = Reading::out_of_line;
    }
    if (r.kind == Reading::impossible) ++*impossible;
  }
  return readings;
}

// Scores the numel word against readings of one (ndim word, inline_dims).
Candidate score(std::span<const RawWindow> samples, const std::vector<SampleReading>& readings,
                uint32_t numel_word) {
  Candidate c;
  c.numel_word = numel_word;
  std::vector<bool> seen_shape(samples.size(), false);
  for (size_t s = 0; s < samples.size(); ++s) {
    const SampleReading& r = readings[s];
    int64_t numel = static_cast<int64_t>(samples[s][numel_word]);
    bool ok = false;
    switch (r.kind) {
      case Reading::no_dims:
        ok = numel == 0 || numel == 1;
        break;
      case Reading::inline_dims:
        ok = numel == r.product;
        if (ok) {
          ++c.explained;
          if (!seen_shape[r.shape_id]) {
            seen_shape[r.shape_id] = true;
            ++c.shapes;
          }
          c.has_telling_shape |= r.telling;
          c.stride_hits += r.stride_hit;
        }
        break;
      case Reading::out_of_line:
        ok = numel >= 0;  // the sizes are not here to multiply
        break;
      case Reading::impossible:
        break;
    }
    c.unexplained += !ok;
  }
  return c;
}

// Better first: fewer samples contradict it, then more evidence.
bool better(const Candidate& a, const Candidate& b) {
  if (a.unexplained != b.unexplained) return a.unexplained < b.unexplained;
  if (a.explained != b.explained) return a.explained > b.explained;
  return a.stride_hits > b.stride_hits;
}

std::string what_is_missing(const Candidate& c, const CalibrationOptions& options) {
  std::ostringstream out;
  const char* sep = "";
  if (c.explained < options.min_explained) {
    out << sep << c.explained << " of " << options.min_explained << " tensors with dims";
    sep = ", ";
  }
  if (c.shapes < options.min_shapes) {
    out << sep << c.shapes << " of " << options.min_shapes << " shapes";
    sep = ", ";
  }
  if (!c.has_telling_shape) {
    out << sep << "no shape with >= 2 distinct dims above 1";
    sep = ", ";
  }
  if (c.stride_hits < options.min_stride_hits) {
    out << sep << c.stride_hits << " of " << options.min_stride_hits
        << " contiguous tensors with strides in place";
  }
  return out.str();
}

}  // namespace

std::string describe_tensor_layout(const gp_tensor_layout& layout) {
  std::ostringstream out;
  out << "ndim @" << layout.ndim_offset << ", sizes @" << layout.sizes_offset << ", numel @"
      << layout.numel_offset;
  return out.str();
}

LayoutCalibration calibrate_tensor_layout(std::span<const RawWindow> samples,
                                          const CalibrationOptions& options) {
  const size_t tolerance = samples.size() * options.max_unexplained_per_mille / 1000;

  // Every layout consistent with all samples but `tolerance`.
  std::vector<Candidate> viable;
  // Where contiguous strides show up right after their sizes, whatever the
  // numel word says: SizesAndStrides is there even if no layout fits.
  size_t most_structure_hits = 0;
  gp_tensor_layout structure_at{};
  for (uint32_t inline_dims = 1; inline_dims <= kMaxInlineDims; ++inline_dims) {
    for (uint32_t ndim_word = 0; ndim_word + 1 + 2 * inline_dims <= kWindowWords; ++ndim_word) {
      size_t impossible = 0;
      std::vector<SampleReading> readings =
          read_samples(samples, ndim_word, inline_dims, &impossible);
      const size_t structure_hits =
          std::count_if(readings.begin(), readings.end(),
                        [](const SampleReading& r) { return r.stride_hit; });
      if (structure_hits > most_structure_hits) {
        most_structure_hits = structure_hits;
        structure_at = {ndim_word * 8, (ndim_word + 1) * 8, 0, inline_dims};
      }
      if (impossible > tolerance) continue;
      const uint32_t end_of_sizes_and_strides = ndim_word + 1 + 2 * inline_dims;
      for (uint32_t numel_word = 0; numel_word < kWindowWords; ++numel_word) {
        // numel_ is a field of its own, never inside SizesAndStrides.
        if (numel_word >= ndim_word && numel_word < end_of_sizes_and_strides) continue;
        Candidate c = score(samples, readings, numel_word);
        if (c.unexplained > tolerance) continue;
        c.ndim_word = ndim_word;
        c.inline_dims = inline_dims;
        c.qualified = c.explained >= options.min_explained && c.shapes >= options.min_shapes &&
                      c.has_telling_shape && c.stride_hits >= options.min_stride_hits;
        viable.push_back(c);
      }
    }
  }

  LayoutCalibration result;
  std::vector<Candidate> qualified;
  std::copy_if(viable.begin(), viable.end(), std::back_inserter(qualified),
               [](const Candidate& c) { return c.qualified; });
  std::sort(qualified.begin(), qualified.end(), better);

  if (!qualified.empty() &&
      (qualified.size() == 1 || qualified[1].unexplained > qualified[0].unexplained)) {
    const Candidate& best = qualified[0];
    result.status = CalibrationStatus::calibrated;
    result.layout = best.layout();
    std::ostringstream out;
    out << "TensorImpl layout: " << describe_tensor_layout(*result.layout) << " (from "
        << samples.size() << " tensors, " << best.shapes << " shapes)";
    result.explanation = out.str();
    return result;
  }

  std::ostringstream out;
  result.status = CalibrationStatus::need_more_samples;
  if (!qualified.empty()) {
    // A second layout that the samples contradict no more than the best:
    // picking one would be a guess. A sample that tells them apart may come.
    out << "cannot calibrate: " << describe_tensor_layout(qualified[0].layout()) << " and "
        << describe_tensor_layout(qualified[1].layout()) << " both explain the "
        << samples.size() << " tensors";
  } else if (samples.size() >= options.refuse_after &&
             std::none_of(viable.begin(), viable.end(),
                          [&](const Candidate& c) { return c.explained > tolerance; })) {
    // Layouts that read (nearly) every sample as 0-dim always fit, e.g. a
    // zero word taken for ndim; they explain nothing, so they do not count.
    result.status = CalibrationStatus::refused;
    out << "cannot calibrate: no TensorImpl layout (ndim, sizes, numel = their product) "
           "explains the "
        << samples.size() << " tensors";
  } else if (samples.size() >= options.refuse_after &&
             most_structure_hits >= options.min_stride_hits &&
             std::none_of(viable.begin(), viable.end(),
                          [](const Candidate& c) { return c.stride_hits > 0; })) {
    // Sizes and strides are plainly there, but no numel word goes with them
    // (and whatever layouts fit read the strides as something else): this
    // is not the TensorImpl that the pattern describes.
    result.status = CalibrationStatus::refused;
    out << "cannot calibrate: sizes and strides at ndim @" << structure_at.ndim_offset
        << " (" << structure_at.inline_dims << " inline dims), but no word holds their product in "
        << "enough of the " << samples.size() << " tensors";
  } else if (viable.empty()) {
    out << "cannot calibrate yet: no TensorImpl layout fits the " << samples.size()
        << " tensors so far";
  } else {
    // The layout closest to qualifying tells the user what is missing.
    const Candidate& closest = *std::max_element(
        viable.begin(), viable.end(), [](const Candidate& a, const Candidate& b) {
          if (a.explained != b.explained) return a.explained < b.explained;
          if (a.stride_hits != b.stride_hits) return a.stride_hits < b.stride_hits;
          return a.unexplained > b.unexplained;
        });
    if (closest.explained == 0) {
      out << "cannot calibrate yet: none of the " << samples.size()
          << " tensors so far has dims that a layout explains";
    } else {
      // Not naming the layout: with little data the closest is often a
      // chance fit (a reference count of 1 read as ndim), which would only
      // confuse.
      out << "cannot calibrate yet: " << samples.size() << " tensors so far, at best "
          << what_is_missing(closest, options);
    }
  }
  if (result.status == CalibrationStatus::need_more_samples &&
      samples.size() >= options.give_up_after) {
    result.status = CalibrationStatus::refused;
    out << "; giving up";
  }
  result.explanation = out.str();
  return result;
}

std::optional<std::vector<int64_t>> decode_raw_window(std::span<const uint64_t> window,
                                                      const gp_tensor_layout& layout) {
  if (layout.ndim_offset % 8 || layout.sizes_offset % 8 || layout.numel_offset % 8) {
    return std::nullopt;
  }
  const size_t ndim_word = layout.ndim_offset / 8;
  const size_t sizes_word = layout.sizes_offset / 8;
  const size_t numel_word = layout.numel_offset / 8;
  if (ndim_word >= window.size() || numel_word >= window.size()) return std::nullopt;
  const uint64_t ndim = window[ndim_word];
  if (ndim > layout.inline_dims || sizes_word + ndim > window.size()) return std::nullopt;
  std::vector<int64_t> sizes(window.begin() + sizes_word, window.begin() + sizes_word + ndim);
  if (!shape_matches_numel(sizes, static_cast<int64_t>(window[numel_word]))) return std::nullopt;
  return sizes;
}

bool shape_matches_numel(std::span<const int64_t> sizes, int64_t numel) {
  if (sizes.empty()) return numel == 1 || numel == 0;
  std::optional<int64_t> product = checked_product(sizes);
  return product && *product == numel;
}

}  // namespace gpuprof
