// Tests of ShapeCollector: ENTRY shape payloads (bpf/op_tracer_abi.h, "Input
// shapes") -> InputShapes. Raw payloads carry real TensorImpl windows from
// torch 1.13 (tests/data/tensorimpl_windows_torch1.13.txt), so calibration
// runs as it does on a live target.
#include "torch/shape_collector.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analyze/input_shapes.h"
#include "real_tensor_windows.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

// ---------------------------------------------------------------------------
// Plans, built by hand as plan_op_args() would.

enum : uint32_t {
  kAdd,     // add(Tensor self, Tensor other, Scalar alpha)
  kConv2d,  // conv2d(Tensor input, Tensor weight, Tensor? bias, int[] stride, ...): 7 args
  kBroken,  // a plan that failed
  kRelu,    // relu(Tensor self)
  kSpread,  // index_put-like: tensors at arguments 1 and 3 of 4
  kOpCount
};

std::vector<OpArgPlan> plans() {
  std::vector<OpArgPlan> p(kOpCount);
  p[kAdd] = {.ok = true, .why = "", .arg_count = 3,
             .tensors = {{0, GP_ARG_TENSOR, 0}, {1, GP_ARG_TENSOR, 1}}};
  p[kConv2d] = {.ok = true, .why = "", .arg_count = 7,
                .tensors = {{0, GP_ARG_TENSOR, 1}, {1, GP_ARG_TENSOR, 2}, {2, GP_ARG_OPT_TENSOR_C10, 3}}};
  p[kBroken] = {.ok = false, .why = "unknown parameter type", .arg_count = 2,
                .tensors = {{0, GP_ARG_TENSOR, 0}}};
  p[kRelu] = {.ok = true, .why = "", .arg_count = 1, .tensors = {{0, GP_ARG_TENSOR, 1}}};
  p[kSpread] = {.ok = true, .why = "", .arg_count = 4,
                .tensors = {{1, GP_ARG_TENSOR, 2}, {3, GP_ARG_TENSOR, 4}}};
  return p;
}

// ---------------------------------------------------------------------------
// Payload words, one slot at a time.

using Words = std::vector<uint64_t>;

Words raw_tensor(const RawWindow& window) {
  Words w{GP_SLOT_TENSOR | GP_SLOT_RAW};
  w.insert(w.end(), window.begin(), window.end());
  return w;
}
Words raw_none() { return {GP_SLOT_NONE | GP_SLOT_RAW}; }
Words raw_unreadable() { return {GP_SLOT_UNREADABLE | GP_SLOT_RAW}; }

// Compact mode: status, ndim, numel, min(ndim, GP_MAX_DIMS) sizes.
Words compact_tensor(const std::vector<int64_t>& sizes, std::optional<int64_t> numel = std::nullopt,
                     std::optional<uint64_t> ndim = std::nullopt) {
  int64_t product = 1;
  for (int64_t s : sizes) product *= s;
  Words w{GP_SLOT_TENSOR, ndim.value_or(sizes.size()), static_cast<uint64_t>(numel.value_or(product))};
  for (int64_t s : sizes) w.push_back(static_cast<uint64_t>(s));
  return w;
}
Words compact_none() { return {GP_SLOT_NONE}; }
Words compact_unreadable() { return {GP_SLOT_UNREADABLE}; }

Words payload(std::initializer_list<Words> slots) {
  Words out;
  for (const Words& s : slots) out.insert(out.end(), s.begin(), s.end());
  return out;
}

// ---------------------------------------------------------------------------
// Expected results.

ArgShape sizes(std::vector<int64_t> s) { return ArgShape(std::move(s)); }
const ArgShape kEmpty = sizes({});  // a non-tensor argument, or no tensor: []
const ArgShape kUnknown = std::nullopt;

struct Expected {
  uint64_t event_index;
  InputShapes shapes;
};

void expect_ready(const std::vector<ShapeCollector::Ready>& ready, const std::vector<Expected>& expected) {
  ASSERT_EQ(ready.size(), expected.size());
  for (size_t i = 0; i < ready.size(); i++) {
    EXPECT_EQ(ready[i].event_index, expected[i].event_index) << "entry " << i;
    EXPECT_EQ(ready[i].shapes, expected[i].shapes)
        << "entry " << i << " (event " << expected[i].event_index << "): got "
        << format_input_shapes(ready[i].shapes) << ", want " << format_input_shapes(expected[i].shapes);
  }
}

bool same_layout(const gp_tensor_layout& a, const gp_tensor_layout& b) {
  return a.ndim_offset == b.ndim_offset && a.sizes_offset == b.sizes_offset &&
         a.numel_offset == b.numel_offset && a.inline_dims == b.inline_dims;
}
constexpr gp_tensor_layout kTorch113{72, 80, 168, 5};

// ---------------------------------------------------------------------------
// Real TensorImpl windows.

// What a raw window decodes to: the sizes when inline (<= 5 dims in 1.13);
// out-of-line sizes are not in the window, so unknown.
ArgShape decoded(const RealTensorWindow& t) { return t.sizes.size() <= 5 ? ArgShape(t.sizes) : kUnknown; }

class ShapeCollectorRaw : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto records = load_real_tensor_windows();
    ASSERT_TRUE(records) << records.error();
    for (const RealTensorWindow& r : *records) {
      if (r.undefined) continue;  // BPF sends GP_SLOT_NONE for the undefined tensor
      order_.push_back(r.name);
      tensors_.emplace(r.name, r);
    }
    ASSERT_GE(order_.size(), 40u);
  }
  const RealTensorWindow& t(const std::string& name) const {
    auto it = tensors_.find(name);
    EXPECT_NE(it, tensors_.end()) << name;
    return it->second;
  }
  std::map<std::string, RealTensorWindow> tensors_;
  std::vector<std::string> order_;  // file order
};

// Entries recorded in raw mode wait for the layout, then all come out, in
// order, decoded with it: nothing recorded before calibration is lost.
TEST_F(ShapeCollectorRaw, EntriesWaitForCalibrationThenDecodeInOrder) {
  ShapeCollector c(plans());
  EXPECT_FALSE(c.calibrated());
  EXPECT_FALSE(c.refused());
  EXPECT_NE(c.status_line().find("calibrating"), std::string::npos) << c.status_line();

  std::vector<Expected> expected;
  uint64_t event = 0;
  // A conv2d whose input has out-of-line sizes (6 dims: not in the window),
  // whose weight could not be read, and without bias.
  c.add_entry(event, kConv2d,
              payload({raw_tensor(t("6d_2x1x3x1x2x2").window), raw_unreadable(), raw_none()}));
  expected.push_back({event, {kUnknown, kUnknown, kEmpty, kEmpty, kEmpty, kEmpty, kEmpty}});
  event += 2;
  // Then the data's inline tensors two by two, as add(a, b, alpha) and, every
  // third entry, conv2d(input, weight, bias).
  std::vector<const RealTensorWindow*> inline_tensors;
  for (const std::string& name : order_)
    if (t(name).sizes.size() <= 5) inline_tensors.push_back(&t(name));
  std::optional<gp_tensor_layout> layout = c.take_new_layout();
  EXPECT_FALSE(layout);
  size_t next = 0, entries = 1;
  for (; !layout && next + 2 < inline_tensors.size(); next += 2, entries++) {
    const RealTensorWindow& a = *inline_tensors[next];
    const RealTensorWindow& b = *inline_tensors[next + 1];
    if (entries % 3 == 2) {
      c.add_entry(event, kConv2d, payload({raw_tensor(a.window), raw_tensor(b.window), raw_none()}));
      expected.push_back({event, {decoded(a), decoded(b), kEmpty, kEmpty, kEmpty, kEmpty, kEmpty}});
    } else {
      c.add_entry(event, kAdd, payload({raw_tensor(a.window), raw_tensor(b.window)}));
      expected.push_back({event, {decoded(a), decoded(b), kEmpty}});
    }
    event += 2;
    layout = c.take_new_layout();
    if (!layout) {
      EXPECT_TRUE(c.take_ready().empty()) << "before calibration, after entry " << entries;
      EXPECT_EQ(c.unknown_tensors(), 0u);
    }
  }
  ASSERT_TRUE(layout) << c.status_line();
  EXPECT_TRUE(same_layout(*layout, kTorch113)) << c.status_line();
  EXPECT_TRUE(c.calibrated());
  EXPECT_FALSE(c.refused());
  EXPECT_EQ(c.status_line().rfind("TensorImpl layout: ndim @72, sizes @80, numel @168", 0), 0u)
      << c.status_line();
  EXPECT_GE(entries, 8u);  // calibration is tried every 16 windows, not before
  expect_ready(c.take_ready(), expected);
  EXPECT_EQ(c.unknown_tensors(), 2u);  // the 6-dim input and the unreadable weight

  // The layout is handed over once.
  EXPECT_FALSE(c.take_new_layout());
  EXPECT_TRUE(c.take_ready().empty());

  // Raw payloads still in flight once calibrated are decoded at once...
  const RealTensorWindow& late = *inline_tensors[next];
  c.add_entry(event, kRelu, raw_tensor(late.window));
  expect_ready(c.take_ready(), {{event, {decoded(late)}}});
  event += 2;
  c.add_entry(event, kRelu, raw_tensor(t("7d").window));
  expect_ready(c.take_ready(), {{event, {kUnknown}}});
  EXPECT_EQ(c.unknown_tensors(), 3u);
  event += 2;
  // ...and so are compact ones, which BPF sends from now on.
  c.add_entry(event, kAdd, payload({compact_tensor({2, 3}), compact_tensor({3})}));
  expect_ready(c.take_ready(), {{event, {sizes({2, 3}), sizes({3}), kEmpty}}});

  c.finish();  // nothing pending: no change
  EXPECT_TRUE(c.take_ready().empty());
  EXPECT_TRUE(c.calibrated());
  EXPECT_FALSE(c.take_new_layout());
}

// Fewer than 16 windows never trigger an attempt while recording; finish()
// makes a last one, which these 15 varied tensors pass.
TEST_F(ShapeCollectorRaw, FinishCalibratesOnTheWindowsItHas) {
  const std::vector<std::string> names = {
      "2d_3x4",         "2d_4x3_f64",     "2d_2x2_i32", "2d_64x128_bf16", "2d_512x2048",
      "3d_2x3x4",       "4d_2x3x5x7",     "4d_8x16x32x32", "5d_2x3x4x5x6", "1d_7",
      "1d_1000_f16",    "2d_complex64",   "2d_uint8",   "2d_bool",        "3d_7x1x3_i8"};
  std::vector<RawWindow> windows;
  for (const std::string& n : names) windows.push_back(t(n).window);
  ASSERT_TRUE(calibrate_tensor_layout(windows).layout) << "precondition: the 15 windows calibrate";

  ShapeCollector c(plans());
  std::vector<Expected> expected;
  for (size_t i = 0; i < names.size(); i++) {
    c.add_entry(10 * i, kRelu, raw_tensor(t(names[i]).window));
    expected.push_back({10 * i, {sizes(t(names[i]).sizes)}});
  }
  EXPECT_TRUE(c.take_ready().empty());
  EXPECT_FALSE(c.take_new_layout());
  c.finish();
  std::optional<gp_tensor_layout> layout = c.take_new_layout();
  ASSERT_TRUE(layout) << c.status_line();
  EXPECT_TRUE(same_layout(*layout, kTorch113));
  expect_ready(c.take_ready(), expected);
  EXPECT_EQ(c.unknown_tensors(), 0u);
}

// Recording over before the layout could be found: the kept entries come
// out with their tensors unknown, and the status says why.
TEST_F(ShapeCollectorRaw, FinishWithTooFewWindowsLeavesTensorsUnknown) {
  ShapeCollector c(plans());
  c.add_entry(1, kAdd, payload({raw_tensor(t("2d_3x4").window), raw_tensor(t("2d_3x4").window)}));
  c.add_entry(3, kConv2d, payload({raw_tensor(t("4d_2x3x5x7").window), raw_none(), raw_unreadable()}));
  c.add_entry(5, kRelu, raw_none());
  EXPECT_TRUE(c.take_ready().empty());
  c.finish();
  EXPECT_FALSE(c.calibrated());
  EXPECT_TRUE(c.refused());
  EXPECT_FALSE(c.take_new_layout());
  EXPECT_EQ(c.status_line().rfind("cannot calibrate", 0), 0u) << c.status_line();
  EXPECT_NE(c.status_line().find("3 tensors"), std::string::npos) << c.status_line();
  expect_ready(c.take_ready(), {
                                   {1, {kUnknown, kUnknown, kEmpty}},
                                   {3, {kUnknown, kEmpty, kUnknown, kEmpty, kEmpty, kEmpty, kEmpty}},
                                   {5, {kEmpty}},
                               });
  EXPECT_EQ(c.unknown_tensors(), 4u);

  // A raw payload after that is not kept: its tensor is unknown at once.
  c.add_entry(7, kRelu, raw_tensor(t("2d_4x3_f64").window));
  expect_ready(c.take_ready(), {{7, {kUnknown}}});
  EXPECT_EQ(c.unknown_tensors(), 5u);
}

// Windows that no TensorImpl layout explains: refused after 128, and what was
// kept comes out unknown without waiting for finish().
TEST(ShapeCollector, RefusedCalibrationReleasesEntriesAsUnknown) {
  ShapeCollector c(plans());
  RawWindow zeros{};
  uint64_t event = 0;
  std::vector<Expected> expected;
  while (!c.refused() && event < 2 * 200) {
    c.add_entry(event, kAdd, payload({raw_tensor(zeros), raw_tensor(zeros)}));
    expected.push_back({event, {kUnknown, kUnknown, kEmpty}});
    event += 2;
  }
  ASSERT_TRUE(c.refused()) << c.status_line();
  EXPECT_EQ(expected.size(), 64u);  // 128 windows: CalibrationOptions::refuse_after
  EXPECT_FALSE(c.calibrated());
  EXPECT_FALSE(c.take_new_layout());
  EXPECT_EQ(c.status_line().rfind("cannot calibrate: ", 0), 0u) << c.status_line();
  expect_ready(c.take_ready(), expected);
  EXPECT_EQ(c.unknown_tensors(), 128u);
  const std::string status = c.status_line();
  c.finish();
  EXPECT_EQ(c.status_line(), status);
  EXPECT_TRUE(c.take_ready().empty());
}

// ---------------------------------------------------------------------------
// Compact payloads: decoded as they come, no layout needed.

TEST(ShapeCollector, CompactPayloadsDecodeIntoTheirArgumentPositions) {
  ShapeCollector c(plans());
  c.add_entry(10, kConv2d,
              payload({compact_tensor({5, 3, 224, 224}), compact_tensor({64, 3, 7, 7}), compact_none()}));
  c.add_entry(12, kConv2d,
              payload({compact_tensor({1, 3, 8, 8}), compact_tensor({4, 3, 3, 3}), compact_tensor({4})}));
  c.add_entry(14, kSpread, payload({compact_tensor({6, 2}), compact_tensor({0})}));
  c.add_entry(16, kRelu, compact_tensor({}, 1));  // 0-dim
  c.add_entry(18, kAdd, payload({compact_tensor({2, 0, 3}), compact_tensor({1, 1, 1, 1, 1, 1, 1, 1})}));
  expect_ready(c.take_ready(),
               {
                   {10, {sizes({5, 3, 224, 224}), sizes({64, 3, 7, 7}), kEmpty, kEmpty, kEmpty, kEmpty, kEmpty}},
                   {12, {sizes({1, 3, 8, 8}), sizes({4, 3, 3, 3}), sizes({4}), kEmpty, kEmpty, kEmpty, kEmpty}},
                   {14, {kEmpty, sizes({6, 2}), kEmpty, sizes({0})}},
                   {16, {kEmpty}},
                   {18, {sizes({2, 0, 3}), sizes({1, 1, 1, 1, 1, 1, 1, 1}), kEmpty}},
               });
  EXPECT_EQ(c.unknown_tensors(), 0u);
  EXPECT_FALSE(c.calibrated());
  EXPECT_FALSE(c.refused());
  EXPECT_FALSE(c.take_new_layout());
}

// Every shape is checked against numel; an unknown argument does not throw
// off the ones after it.
TEST(ShapeCollector, CompactShapesAreVerifiedOneSlotAtATime) {
  ShapeCollector c(plans());
  // numel disagrees with the sizes (a torn read).
  c.add_entry(1, kAdd, payload({compact_tensor({4, 4}, 15), compact_tensor({4, 4})}));
  // Unreadable first argument.
  c.add_entry(2, kAdd, payload({compact_unreadable(), compact_tensor({7})}));
  // 12 dimensions fit; 13 do not: only 12 sizes are sent, so the 13th is
  // not known, even when (here, a 13th size of 1) numel agrees with the 12.
  const std::vector<int64_t> twelve = {2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3};
  c.add_entry(3, kAdd, payload({compact_tensor(twelve), compact_tensor(twelve, 6, 13)}));
  c.add_entry(4, kAdd, payload({compact_tensor(twelve, 6 * 5, 13), compact_tensor({5})}));
  // A negative size can multiply to nothing.
  c.add_entry(5, kRelu, compact_tensor({-1, 4}, 4));
  expect_ready(c.take_ready(), {
                                   {1, {kUnknown, sizes({4, 4}), kEmpty}},
                                   {2, {kUnknown, sizes({7}), kEmpty}},
                                   {3, {sizes(twelve), kUnknown, kEmpty}},
                                   {4, {kUnknown, sizes({5}), kEmpty}},
                                   {5, {kUnknown}},
                               });
  EXPECT_EQ(c.unknown_tensors(), 5u);
}

TEST(ShapeCollector, TruncatedPayloadsLeaveTheMissingSlotsUnknown) {
  ShapeCollector c(plans());
  c.add_entry(1, kConv2d, compact_tensor({2, 2}));  // weight and bias slots missing
  Words cut = payload({compact_tensor({3, 3}), compact_tensor({2, 5})});
  cut.pop_back();  // the second shape lost its last size
  c.add_entry(2, kAdd, cut);
  c.add_entry(3, kAdd, {});
  expect_ready(c.take_ready(), {
                                   {1, {sizes({2, 2}), kUnknown, kUnknown, kEmpty, kEmpty, kEmpty, kEmpty}},
                                   {2, {sizes({3, 3}), kUnknown, kEmpty}},
                                   {3, {kUnknown, kUnknown, kEmpty}},
                               });
  EXPECT_EQ(c.unknown_tensors(), 5u);
}

TEST(ShapeCollector, OpsWithoutAUsablePlanAreIgnored) {
  ShapeCollector c(plans());
  c.add_entry(1, kBroken, compact_tensor({2}));
  c.add_entry(2, kOpCount, compact_tensor({2}));
  c.add_entry(3, 1'000'000, raw_tensor(RawWindow{}));
  EXPECT_TRUE(c.take_ready().empty());
  EXPECT_EQ(c.unknown_tensors(), 0u);
  c.finish();
  EXPECT_TRUE(c.take_ready().empty());
  EXPECT_FALSE(c.refused());  // nothing was kept, so nothing to give up on
}

TEST(ShapeCollector, TakeReadyHandsEachEntryOverOnce) {
  ShapeCollector c(plans());
  c.add_entry(1, kRelu, compact_tensor({3}));
  expect_ready(c.take_ready(), {{1, {sizes({3})}}});
  EXPECT_TRUE(c.take_ready().empty());
  c.add_entry(2, kRelu, compact_none());
  expect_ready(c.take_ready(), {{2, {kEmpty}}});
}

}  // namespace
}  // namespace gpuprof
