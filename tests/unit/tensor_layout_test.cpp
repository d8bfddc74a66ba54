// tensor_layout_test.cpp: TensorImpl layout calibration on synthetic windows
// (1.13's layout, a 2.x-like one 8 bytes lower, and data built to fool it)
// and on real TensorImpl memory from torch 1.13
// (tests/data/tensorimpl_windows_torch1.13.txt, written by
// tests/data/make_tensorimpl_windows.py).
#include "torch/tensor_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "real_tensor_windows.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

bool same_layout(const gp_tensor_layout& a, const gp_tensor_layout& b) {
  return a.ndim_offset == b.ndim_offset && a.sizes_offset == b.sizes_offset &&
         a.numel_offset == b.numel_offset && a.inline_dims == b.inline_dims;
}

std::string describe(const LayoutCalibration& c) {
  return c.explanation + (c.layout ? " [inline_dims " + std::to_string(c.layout->inline_dims) + "]"
                                   : std::string(" [no layout]"));
}

constexpr gp_tensor_layout kTorch113{72, 80, 168, 5};
constexpr gp_tensor_layout kTorch2x{64, 72, 160, 5};

// ---------------------------------------------------------------------------
// Synthetic windows.

struct FakeTensor {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t numel = 0;
};

FakeTensor contiguous(std::vector<int64_t> sizes) {
  FakeTensor t;
  t.strides.assign(sizes.size(), 1);
  int64_t stride = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    t.strides[i] = stride;
    stride *= std::max<int64_t>(sizes[i], 1);
  }
  t.numel = 1;
  for (int64_t s : sizes) t.numel *= s;
  t.sizes = std::move(sizes);
  return t;
}

FakeTensor strided(std::vector<int64_t> sizes, std::vector<int64_t> strides) {
  FakeTensor t = contiguous(std::move(sizes));
  t.strides = std::move(strides);
  return t;
}

// 1.13's UndefinedTensorImpl: 1 dim of size 0, stride 1, numel 0.
FakeTensor undefined_113() { return strided({0}, {1}); }

// Word offsets of a TensorImpl-like object: ndim at `ndim_word`, then
// 2 * inline_dims words of sizes and strides, storage_offset, numel.
struct FakeLayout {
  uint32_t ndim_word;
  uint32_t inline_dims;
  uint32_t numel_word;
};
constexpr FakeLayout kFake113{9, 5, 21};
constexpr FakeLayout kFake2x{8, 5, 20};

// Fills the window like a TensorImpl and what follows it on the heap:
// vtable and heap pointers, reference counts of 1, zero fields, flag bits
// and random bytes past the object.
RawWindow make_window(const FakeLayout& layout, const FakeTensor& t, std::mt19937_64& rng) {
  RawWindow w{};
  auto heap_pointer = [&] { return 0x55d000000000ull + (rng() % 0x100000) * 16; };
  w[0] = 0x7f1234567ab8ull;  // vptr
  for (uint32_t i = 1; i < layout.ndim_word; ++i) {
    switch (rng() % 3) {
      case 0: w[i] = 1; break;
      case 1: w[i] = 0; break;
      default: w[i] = heap_pointer(); break;
    }
  }
  const uint32_t n = layout.ndim_word;
  w[n] = t.sizes.size();
  if (t.sizes.size() <= layout.inline_dims) {
    for (size_t i = 0; i < t.sizes.size(); ++i) {
      w[n + 1 + i] = static_cast<uint64_t>(t.sizes[i]);
      w[n + 1 + layout.inline_dims + i] = static_cast<uint64_t>(t.strides[i]);
    }
  } else {
    w[n + 1] = heap_pointer();
  }
  w[layout.numel_word - 1] = 0;  // storage_offset
  w[layout.numel_word] = static_cast<uint64_t>(t.numel);
  w[layout.numel_word + 1] = 0x141ff00010006ull;  // dtype and flag bits
  w[layout.numel_word + 2] = 0x12800004001ull;
  for (uint32_t i = layout.numel_word + 3; i < GP_RAW_WINDOW_WORDS; ++i) w[i] = rng();
  return w;
}

// What operators see: every kind of tensor the header lists.
std::vector<FakeTensor> mixed_tensors() {
  return {
      contiguous({}),              // 0-dim
      undefined_113(),             //
      strided({}, {}),             // 0-dim, numel 0 (an undefined tensor read as 0 dims)
      contiguous({7}),             //
      contiguous({3, 4}),          //
      contiguous({4, 3}),          //
      contiguous({2, 3, 4}),       //
      contiguous({2, 3, 5, 7}),    //
      contiguous({2, 3, 4, 5, 6}), //
      contiguous({64, 128}),       //
      strided({4, 3}, {1, 4}),     // transposed
      strided({6, 4}, {8, 2}),     // sliced
      strided({4, 6}, {0, 1}),     // expanded
      contiguous({3, 0, 4}),       // zero-sized
      contiguous({0}),             //
      contiguous({2, 1, 3, 1, 2, 2}),           // out of line
      contiguous({2, 2, 2, 2, 2, 2, 3}),        //
      strided({2, 3, 4, 5}, {60, 1, 15, 3}),    // channels_last
      contiguous({1, 5}),          //
      contiguous({5}),             //
      contiguous({16, 8}),         //
      contiguous({8, 16, 32, 32}), //
  };
}

std::vector<RawWindow> windows_of(const FakeLayout& layout, const std::vector<FakeTensor>& tensors,
                                  uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  std::vector<RawWindow> windows;
  for (const FakeTensor& t : tensors) windows.push_back(make_window(layout, t, rng));
  return windows;
}

TEST(CalibrateTensorLayout, Synthetic113) {
  auto windows = windows_of(kFake113, mixed_tensors());
  LayoutCalibration c = calibrate_tensor_layout(windows);
  ASSERT_EQ(c.status, CalibrationStatus::calibrated) << describe(c);
  ASSERT_TRUE(c.layout);
  EXPECT_TRUE(same_layout(*c.layout, kTorch113)) << describe(c);
  EXPECT_FALSE(c.more_samples_may_help());
  EXPECT_EQ(c.explanation,
            "TensorImpl layout: ndim @72, sizes @80, numel @168 (from 22 tensors, 16 shapes)");
}

TEST(CalibrateTensorLayout, Synthetic2xEightBytesLower) {
  auto windows = windows_of(kFake2x, mixed_tensors());
  LayoutCalibration c = calibrate_tensor_layout(windows);
  ASSERT_EQ(c.status, CalibrationStatus::calibrated) << describe(c);
  EXPECT_TRUE(same_layout(*c.layout, kTorch2x)) << describe(c);
  EXPECT_EQ(c.explanation.rfind("TensorImpl layout: ndim @64, sizes @72, numel @160 (from 22", 0),
            0u)
      << c.explanation;
}

TEST(CalibrateTensorLayout, InlineDimsComesFromWhereTheStridesAre) {
  // A hypothetical libtorch with 4 inline dims: the 5-dim tensors are then
  // out of line, and the strides start 4 words after the sizes.
  const FakeLayout four{9, 4, 19};
  auto windows = windows_of(four, mixed_tensors());
  LayoutCalibration c = calibrate_tensor_layout(windows);
  ASSERT_EQ(c.status, CalibrationStatus::calibrated) << describe(c);
  EXPECT_TRUE(same_layout(*c.layout, gp_tensor_layout{72, 80, 152, 4})) << describe(c);
}

TEST(CalibrateTensorLayout, OrderOfSamplesDoesNotMatter) {
  auto windows = windows_of(kFake113, mixed_tensors(), 7);
  std::reverse(windows.begin(), windows.end());
  LayoutCalibration c = calibrate_tensor_layout(windows);
  ASSERT_EQ(c.status, CalibrationStatus::calibrated) << describe(c);
  EXPECT_TRUE(same_layout(*c.layout, kTorch113));
}

TEST(CalibrateTensorLayout, TooFewSamplesAsksForMore) {
  auto all = windows_of(kFake113, mixed_tensors());
  for (size_t n : {0, 1, 3, 6}) {
    std::vector<RawWindow> some(all.begin(), all.begin() + n);
    LayoutCalibration c = calibrate_tensor_layout(some);
    EXPECT_EQ(c.status, CalibrationStatus::need_more_samples) << n << ": " << describe(c);
    EXPECT_FALSE(c.layout);
    EXPECT_TRUE(c.more_samples_may_help());
    EXPECT_EQ(c.explanation.rfind("cannot calibrate yet: ", 0), 0u) << c.explanation;
  }
}

TEST(CalibrateTensorLayout, OneDimensionalOrSquareTensorsAreNotEnough) {
  // Many tensors, but 1-dim sizes are also their numel, and square shapes
  // cannot tell the sizes' order: no tensor with >= 2 distinct dims.
  std::vector<FakeTensor> tensors;
  for (int64_t k = 2; k < 40; ++k) {
    tensors.push_back(contiguous({k}));
    tensors.push_back(contiguous({k, k}));
  }
  auto windows = windows_of(kFake113, tensors);
  LayoutCalibration c = calibrate_tensor_layout(windows);
  EXPECT_EQ(c.status, CalibrationStatus::need_more_samples) << describe(c);
  EXPECT_FALSE(c.layout);
  EXPECT_NE(c.explanation.find("no shape with >= 2 distinct dims"), std::string::npos)
      << c.explanation;
}

TEST(CalibrateTensorLayout, NonContiguousOnlyIsNotEnough) {
  // Without contiguous tensors nothing shows where the strides are, so
  // inline_dims is unknown.
  std::vector<FakeTensor> tensors;
  for (int64_t k = 2; k < 20; ++k) tensors.push_back(strided({k, k + 1}, {1, k}));
  LayoutCalibration c = calibrate_tensor_layout(windows_of(kFake113, tensors));
  EXPECT_EQ(c.status, CalibrationStatus::need_more_samples) << describe(c);
  EXPECT_NE(c.explanation.find("contiguous tensors with strides in place"), std::string::npos)
      << c.explanation;
}

TEST(CalibrateTensorLayout, RefusesGarbage) {
  std::mt19937_64 rng(3);
  std::vector<RawWindow> windows(200);
  for (RawWindow& w : windows) {
    for (uint64_t& word : w) word = rng();
  }
  LayoutCalibration c = calibrate_tensor_layout(windows);
  EXPECT_EQ(c.status, CalibrationStatus::refused) << describe(c);
  EXPECT_FALSE(c.layout);
  EXPECT_FALSE(c.more_samples_may_help());

  // Few samples of garbage are not yet a refusal: the first arguments of a
  // program may be odd.
  windows.resize(20);
  EXPECT_EQ(calibrate_tensor_layout(windows).status, CalibrationStatus::need_more_samples);
}

TEST(CalibrateTensorLayout, RefusesTensorsWhoseNumelNeverMatches) {
  // ndim and sizes are there, but no word holds their product.
  std::vector<FakeTensor> tensors;
  for (int i = 0; i < 10; ++i) {
    for (FakeTensor t : mixed_tensors()) {
      t.numel = t.numel * 3 + 5;
      tensors.push_back(t);
    }
  }
  LayoutCalibration c = calibrate_tensor_layout(windows_of(kFake113, tensors));
  EXPECT_EQ(c.status, CalibrationStatus::refused) << describe(c);
  EXPECT_FALSE(c.layout);
}

TEST(CalibrateTensorLayout, RefusesToPickBetweenTwoEqualExplanations) {
  // The whole pattern twice (e.g. an object holding a copy of the sizes):
  // ndim @2 (numel @14) and ndim @16 (numel @28) both explain everything,
  // so neither may be chosen.
  std::mt19937_64 rng(5);
  std::vector<RawWindow> windows;
  for (const FakeTensor& t : mixed_tensors()) {
    RawWindow w = make_window(FakeLayout{2, 5, 14}, t, rng);
    RawWindow copy = make_window(FakeLayout{16, 5, 28}, t, rng);
    std::copy(copy.begin() + 16, copy.end(), w.begin() + 16);
    windows.push_back(w);
  }
  LayoutCalibration c = calibrate_tensor_layout(windows);
  EXPECT_EQ(c.status, CalibrationStatus::need_more_samples) << describe(c);
  EXPECT_FALSE(c.layout);
  EXPECT_NE(c.explanation.find("both explain"), std::string::npos) << c.explanation;
}

TEST(CalibrateTensorLayout, RefusesToPickBetweenTwoNumelWords) {
  std::mt19937_64 rng(6);
  std::vector<RawWindow> windows;
  for (const FakeTensor& t : mixed_tensors()) {
    RawWindow w = make_window(kFake113, t, rng);
    w[26] = w[21];  // numel in two places
    windows.push_back(w);
  }
  LayoutCalibration c = calibrate_tensor_layout(windows);
  EXPECT_EQ(c.status, CalibrationStatus::need_more_samples) << describe(c);
  EXPECT_FALSE(c.layout);

  // One sample where the copy differs settles it.
  RawWindow w = make_window(kFake113, contiguous({3, 5}), rng);
  w[26] = 99;
  windows.push_back(w);
  c = calibrate_tensor_layout(windows);
  ASSERT_EQ(c.status, CalibrationStatus::calibrated) << describe(c);
  EXPECT_TRUE(same_layout(*c.layout, kTorch113));
}

TEST(CalibrateTensorLayout, ToleratesAFewTornSamplesButNotMany) {
  std::vector<FakeTensor> tensors;
  for (int i = 0; i < 3; ++i) {
    for (const FakeTensor& t : mixed_tensors()) tensors.push_back(t);
  }
  auto windows = windows_of(kFake113, tensors);  // 66 samples: 3 may be odd
  std::mt19937_64 rng(9);
  auto torn = [&] {
    // Sizes of one shape, numel of another: a resize raced with the copy.
    RawWindow w = make_window(kFake113, contiguous({6, 7}), rng);
    w[21] = 12;
    return w;
  };
  for (int i = 0; i < 3; ++i) windows.push_back(torn());
  LayoutCalibration c = calibrate_tensor_layout(windows);
  ASSERT_EQ(c.status, CalibrationStatus::calibrated) << describe(c);
  EXPECT_TRUE(same_layout(*c.layout, kTorch113));

  for (int i = 0; i < 10; ++i) windows.push_back(torn());
  c = calibrate_tensor_layout(windows);
  EXPECT_NE(c.status, CalibrationStatus::calibrated) << describe(c);
  EXPECT_FALSE(c.layout);
}

TEST(CalibrateTensorLayout, ManyUninformativeSamplesAreNoRefusal) {
  // A program may start with hundreds of 1-dim or 0-dim arguments; that is
  // no reason to give up on its shapes.
  std::vector<FakeTensor> tensors;
  for (int i = 0; i < 300; ++i) {
    tensors.push_back(contiguous({i % 7 + 1}));
    tensors.push_back(contiguous({}));
    tensors.push_back(undefined_113());
  }
  LayoutCalibration c = calibrate_tensor_layout(windows_of(kFake113, tensors));
  EXPECT_EQ(c.status, CalibrationStatus::need_more_samples) << describe(c);
}

TEST(CalibrateTensorLayout, GivesUpAfterEnoughSamples) {
  std::vector<FakeTensor> tensors;
  for (int64_t k = 2; k < 40; ++k) tensors.push_back(contiguous({k}));
  auto windows = windows_of(kFake113, tensors);
  CalibrationOptions options;
  options.give_up_after = 30;
  LayoutCalibration c = calibrate_tensor_layout(windows, options);
  EXPECT_EQ(c.status, CalibrationStatus::refused) << describe(c);
  EXPECT_NE(c.explanation.find("giving up"), std::string::npos) << c.explanation;
}

// ---------------------------------------------------------------------------
// Decoding and verifying shapes.

TEST(DecodeRawWindow, InlineShapes) {
  std::mt19937_64 rng(11);
  for (const FakeTensor& t : mixed_tensors()) {
    RawWindow w = make_window(kFake113, t, rng);
    auto sizes = decode_raw_window(w, kTorch113);
    if (t.sizes.size() > 5) {
      EXPECT_FALSE(sizes) << "out of line: " << t.sizes.size() << " dims";
    } else {
      ASSERT_TRUE(sizes) << t.sizes.size() << " dims";
      EXPECT_EQ(*sizes, t.sizes);
    }
  }
}

TEST(DecodeRawWindow, ZeroDimsAndUndefined) {
  std::mt19937_64 rng(12);
  EXPECT_EQ(decode_raw_window(make_window(kFake113, contiguous({}), rng), kTorch113),
            std::vector<int64_t>{});
  EXPECT_EQ(decode_raw_window(make_window(kFake113, strided({}, {}), rng), kTorch113),
            std::vector<int64_t>{});
  // 1.13's undefined singleton is [0] in memory (the header explains).
  EXPECT_EQ(decode_raw_window(make_window(kFake113, undefined_113(), rng), kTorch113),
            std::vector<int64_t>{0});
}

TEST(DecodeRawWindow, RejectsInconsistentWindows) {
  std::mt19937_64 rng(13);
  RawWindow w = make_window(kFake113, contiguous({3, 4}), rng);
  w[21] = 13;  // numel
  EXPECT_FALSE(decode_raw_window(w, kTorch113));
  w = make_window(kFake113, contiguous({}), rng);
  w[21] = 2;  // a 0-dim tensor has 1 element (or 0 when undefined)
  EXPECT_FALSE(decode_raw_window(w, kTorch113));
  w = make_window(kFake113, contiguous({3, 4}), rng);
  w[10] = static_cast<uint64_t>(-3);  // negative size
  w[21] = static_cast<uint64_t>(-12);
  EXPECT_FALSE(decode_raw_window(w, kTorch113));
  w = make_window(kFake113, contiguous({3, 4}), rng);
  w[9] = 1000;  // garbage ndim
  EXPECT_FALSE(decode_raw_window(w, kTorch113));
}

TEST(DecodeRawWindow, RejectsLayoutsOutsideTheWindow) {
  std::mt19937_64 rng(14);
  RawWindow w = make_window(kFake113, contiguous({3, 4}), rng);
  EXPECT_FALSE(decode_raw_window(w, gp_tensor_layout{72, 80, 256, 5}));  // numel past the end
  EXPECT_FALSE(decode_raw_window(w, gp_tensor_layout{73, 81, 168, 5}));  // unaligned
  w[30] = 2;  // ndim @240: sizes would run past the window
  w[31] = 3;
  EXPECT_FALSE(decode_raw_window(w, gp_tensor_layout{240, 248, 168, 5}));
  // A short span (a truncated payload) is not read past its end.
  EXPECT_FALSE(decode_raw_window(std::span<const uint64_t>(w.data(), 20), kTorch113));
  EXPECT_TRUE(decode_raw_window(std::span<const uint64_t>(w.data(), 22), kTorch113));
}

TEST(ShapeMatchesNumel, ProductsAndOverflow) {
  using V = std::vector<int64_t>;
  EXPECT_TRUE(shape_matches_numel(V{}, 1));
  EXPECT_TRUE(shape_matches_numel(V{}, 0));  // undefined
  EXPECT_FALSE(shape_matches_numel(V{}, 2));
  EXPECT_TRUE(shape_matches_numel(V{3, 4}, 12));
  EXPECT_FALSE(shape_matches_numel(V{3, 4}, 13));
  EXPECT_TRUE(shape_matches_numel(V{3, 0, 4}, 0));
  EXPECT_FALSE(shape_matches_numel(V{-3, -4}, 12));
  EXPECT_FALSE(shape_matches_numel(V{-1}, -1));
  const int64_t big = int64_t{1} << 32;
  // 2^64 wraps to 0 in unchecked arithmetic; it must not match numel 0.
  EXPECT_FALSE(shape_matches_numel(V{big, big}, 0));
  EXPECT_TRUE(shape_matches_numel(V{big, big / 2, 0}, 0));  // empty, whatever the others
  EXPECT_TRUE(shape_matches_numel(V{std::numeric_limits<int64_t>::max(), 1},
                                  std::numeric_limits<int64_t>::max()));
  EXPECT_FALSE(shape_matches_numel(V{std::numeric_limits<int64_t>::max(), 2}, -2));
}

TEST(DescribeTensorLayout, ByteOffsets) {
  EXPECT_EQ(describe_tensor_layout(kTorch113), "ndim @72, sizes @80, numel @168");
}

// ---------------------------------------------------------------------------
// Real TensorImpl memory from torch 1.13.

class RealTorch113 : public ::testing::Test {
 protected:
  void SetUp() override {
    auto samples = load_real_tensor_windows();
    ASSERT_TRUE(samples) << samples.error();
    samples_ = std::move(samples).value();
    ASSERT_GE(samples_.size(), 40u);
    for (const RealTensorWindow& s : samples_) windows_.push_back(s.window);
  }
  std::vector<RealTensorWindow> samples_;
  std::vector<RawWindow> windows_;
};

TEST_F(RealTorch113, CalibratesTo113Layout) {
  LayoutCalibration c = calibrate_tensor_layout(windows_);
  ASSERT_EQ(c.status, CalibrationStatus::calibrated) << describe(c);
  EXPECT_TRUE(same_layout(*c.layout, kTorch113)) << describe(c);
  EXPECT_EQ(c.explanation.rfind("TensorImpl layout: ndim @72, sizes @80, numel @168 (from ", 0),
            0u)
      << c.explanation;
}

TEST_F(RealTorch113, DecodesEveryInlineSample) {
  size_t inline_count = 0, out_of_line = 0;
  for (const RealTensorWindow& s : samples_) {
    auto sizes = decode_raw_window(s.window, kTorch113);
    if (s.undefined) {
      EXPECT_EQ(sizes, std::vector<int64_t>{0}) << s.name;
    } else if (s.sizes.size() <= 5) {
      ++inline_count;
      ASSERT_TRUE(sizes) << s.name;
      EXPECT_EQ(*sizes, s.sizes) << s.name;
    } else {
      ++out_of_line;
      EXPECT_FALSE(sizes) << s.name;
    }
  }
  EXPECT_GE(inline_count, 30u);
  EXPECT_GE(out_of_line, 3u);
}

TEST_F(RealTorch113, CalibratesInAnyOrder) {
  std::mt19937_64 rng(21);
  for (int round = 0; round < 5; ++round) {
    std::shuffle(windows_.begin(), windows_.end(), rng);
    LayoutCalibration c = calibrate_tensor_layout(windows_);
    ASSERT_EQ(c.status, CalibrationStatus::calibrated) << describe(c);
    EXPECT_TRUE(same_layout(*c.layout, kTorch113));
  }
}

TEST_F(RealTorch113, NoSubsetCalibratesWrong) {
  // Whatever part of the data a program has shown so far, the answer is the
  // right layout or none. (Most subsets of 10 or more do calibrate.)
  std::mt19937_64 rng(22);
  size_t calibrated = 0;
  for (int round = 0; round < 300; ++round) {
    std::vector<RawWindow> subset = windows_;
    std::shuffle(subset.begin(), subset.end(), rng);
    subset.resize(3 + rng() % (subset.size() - 2));
    LayoutCalibration c = calibrate_tensor_layout(subset);
    if (!c.layout) continue;
    ++calibrated;
    EXPECT_TRUE(same_layout(*c.layout, kTorch113)) << describe(c);
  }
  EXPECT_GT(calibrated, 200u);
}

TEST_F(RealTorch113, FirstFewSamplesAreNotEnough) {
  std::vector<RawWindow> few(windows_.begin(), windows_.begin() + 6);
  LayoutCalibration c = calibrate_tensor_layout(few);
  EXPECT_EQ(c.status, CalibrationStatus::need_more_samples) << describe(c);
  EXPECT_FALSE(c.layout);
}

TEST_F(RealTorch113, ShiftedEightBytesDownLooksLike2x) {
  // 2.x's smaller reference counts take one word less: drop word 1 and
  // everything after it moves 8 bytes down, which the layout must follow.
  for (RawWindow& w : windows_) {
    std::copy(w.begin() + 2, w.end(), w.begin() + 1);
    w.back() = 0;
  }
  LayoutCalibration c = calibrate_tensor_layout(windows_);
  ASSERT_EQ(c.status, CalibrationStatus::calibrated) << describe(c);
  EXPECT_TRUE(same_layout(*c.layout, kTorch2x)) << describe(c);
  for (size_t i = 0; i < samples_.size(); ++i) {
    if (samples_[i].undefined || samples_[i].sizes.size() > 5) continue;
    EXPECT_EQ(decode_raw_window(windows_[i], kTorch2x), samples_[i].sizes) << samples_[i].name;
  }
}

}  // namespace
}  // namespace gpuprof
