// op_names_test.cpp: torch.profiler names from at::_ops symbols and real
// libtorch schema strings (copied from Debian's libtorch_cpu 1.13 .rodata).
#include "op_names.h"

#include <gtest/gtest.h>

namespace gpuprof {
namespace {

TEST(DispatcherCallStruct, TakesOnlyCallEntryPoints) {
  EXPECT_EQ(dispatcher_call_struct("_ZN2at4_ops10add_Tensor4callERKNS_6TensorES4_RKN3c106ScalarE"),
            "add_Tensor");
  EXPECT_EQ(dispatcher_call_struct("_ZN2at4_ops4relu4callERKNS_6TensorE"), "relu");
  EXPECT_EQ(dispatcher_call_struct("_ZN2at4_ops11add__Tensor4callERNS_6TensorERKS2_RKN3c106ScalarE"),
            "add__Tensor");
  // redispatch is never recorded by torch.profiler, so it is never traced.
  EXPECT_EQ(dispatcher_call_struct("_ZN2at4_ops10add_Tensor10redispatchEN3c1014DispatchKeySetE"),
            std::nullopt);
  EXPECT_EQ(dispatcher_call_struct("_ZN2at6native3addERKNS_6TensorE"), std::nullopt);
  EXPECT_EQ(dispatcher_call_struct("_ZN2at4_ops"), std::nullopt);
  EXPECT_EQ(dispatcher_call_struct("_ZN2at4_ops99relu4callE"), std::nullopt);  // length past the end
  EXPECT_EQ(dispatcher_call_struct("_ZN2at4_ops4relu8redispatE"), std::nullopt);
  // Cold and other clones of a body are not entry points.
  EXPECT_EQ(dispatcher_call_struct("_ZN2at4_ops7thrower4callEi.cold"), std::nullopt);
  EXPECT_EQ(dispatcher_call_struct("_ZN2at4_ops4relu4callERKNS_6TensorE.isra.0"), std::nullopt);
}

TEST(ParseSchema, RealSchemaStrings) {
  EXPECT_EQ(parse_schema("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"),
            (OpName{"add", "Tensor"}));
  EXPECT_EQ(parse_schema("aten::quantized_lstm.input(Tensor input, Tensor[] hx, "
                         "__torch__.torch.classes.rnn.CellParamsBase[] params, bool has_biases, "
                         "int num_layers, float dropout, bool train, bool bidirectional, bool "
                         "batch_first, *, ScalarType? dtype=None, bool use_dynamic=False) -> "
                         "(Tensor, Tensor, Tensor)"),
            (OpName{"quantized_lstm", "input"}));
  EXPECT_EQ(parse_schema("clamp_max_(Tensor(a!) self, Scalar max) -> Tensor(a!)"),
            (OpName{"clamp_max_", ""}));
  EXPECT_EQ(parse_schema("arange.start_out(Scalar start, Scalar end, Scalar step=1, *, Tensor(a!) "
                         "out) -> Tensor(a!)"),
            (OpName{"arange", "start_out"}));
}

TEST(ParseSchema, RejectsOtherStrings) {
  EXPECT_EQ(parse_schema("Expected all tensors to be on the same device"), std::nullopt);
  EXPECT_EQ(parse_schema("foo(bar)"), std::nullopt);  // no "-> returns"
  EXPECT_EQ(parse_schema("add.(Tensor self) -> Tensor"), std::nullopt);
  EXPECT_EQ(parse_schema("1add(Tensor self) -> Tensor"), std::nullopt);
  EXPECT_EQ(parse_schema(""), std::nullopt);
}

class OpNameResolverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* schema : {
             "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
             "add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
             "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
             "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
             "relu(Tensor self) -> Tensor",
             "relu_(Tensor(a!) self) -> Tensor(a!)",
             "erfinv(Tensor self) -> Tensor",
             "softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
             "dropout(Tensor input, float p, bool train) -> Tensor",
             "max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] "
             "padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
             "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
             "int[2] dilation=1, bool ceil_mode=False) -> Tensor",
         }) {
      resolver_.add_schema(*parse_schema(schema));
    }
  }
  OpNameResolver resolver_;
};

TEST_F(OpNameResolverTest, ExactSchemaMatches) {
  EXPECT_EQ(resolver_.resolve("add_Tensor"), (OpName{"add", "Tensor"}));
  EXPECT_EQ(resolver_.resolve("add__Tensor"), (OpName{"add_", "Tensor"}));
  EXPECT_EQ(resolver_.resolve("relu_"), (OpName{"relu_", ""}));
  EXPECT_EQ(resolver_.resolve("max_pool2d_with_indices"), (OpName{"max_pool2d_with_indices", ""}));
  EXPECT_EQ(resolver_.resolve("add_Tensor").torch_name(), "aten::add");
  EXPECT_EQ(resolver_.resolve("add__Tensor").torch_name(), "aten::add_");
}

// Twenty of libtorch 1.13's 2952 ops have no schema string in .rodata
// (erfinv_out, softmax_Dimname, dropout_, transpose_, ...).
TEST_F(OpNameResolverTest, FallsBackToLongestKnownName) {
  EXPECT_EQ(resolver_.resolve("erfinv_out"), (OpName{"erfinv", "out"}));
  EXPECT_EQ(resolver_.resolve("softmax_Dimname"), (OpName{"softmax", "Dimname"}));
  EXPECT_EQ(resolver_.resolve("max_pool2d_with_indices_out"),
            (OpName{"max_pool2d_with_indices", "out"}));
  // In-place ops end in '_' with nothing after it: never an empty overload.
  EXPECT_EQ(resolver_.resolve("dropout_"), (OpName{"dropout_", ""}));
  // Unknown everywhere: the whole struct name.
  EXPECT_EQ(resolver_.resolve("broadcast_to"), (OpName{"broadcast_to", ""}));
  EXPECT_EQ(resolver_.resolve("_fw_primal"), (OpName{"_fw_primal", ""}));
}

}  // namespace
}  // namespace gpuprof
