// op_names_test.cpp: torch.profiler names from at::_ops symbols and real
// libtorch schema strings (copied from Debian's libtorch_cpu 1.13 .rodata).
#include "torch/op_names.h"

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
  // A length whose sum with the suffix's wraps around (fuzzer-found; it threw).
  EXPECT_EQ(dispatcher_call_struct("_ZN2at4_ops18446744073709551615]]4callE"), std::nullopt);
  EXPECT_EQ(dispatcher_call_struct("_ZN2at4_ops18446744073709551610x4callE"), std::nullopt);
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

TEST(ParseFullSchema, ArgumentsAndReturns) {
  auto add = parse_full_schema("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  ASSERT_TRUE(add);
  EXPECT_EQ(add->op, (OpName{"add", "Tensor"}));
  EXPECT_EQ(add->arguments,
            (std::vector<std::string>{"Tensor self", "Tensor other", "Scalar alpha=1"}));
  EXPECT_EQ(add->returns, "Tensor");

  // Alias annotations with "->", defaults with commas, quoted strings.
  auto split = parse_full_schema(
      "split.Tensor(Tensor(a -> *) self, int split_size, int dim=0) -> Tensor(a)[]");
  ASSERT_TRUE(split);
  EXPECT_EQ(split->arguments,
            (std::vector<std::string>{"Tensor(a -> *) self", "int split_size", "int dim=0"}));
  EXPECT_EQ(split->returns, "Tensor(a)[]");
  auto pool = parse_full_schema(
      "aten::max_pool2d_with_indices.out(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] "
      "padding=[0, 0], str mode=\"a,b)\", *, Tensor(a!) out, Tensor(b!) indices) -> "
      "(Tensor(a!), Tensor(b!))");
  ASSERT_TRUE(pool);
  EXPECT_EQ(pool->op, (OpName{"max_pool2d_with_indices", "out"}));
  EXPECT_EQ(pool->arguments,
            (std::vector<std::string>{"Tensor self", "int[2] kernel_size", "int[2] stride=[]",
                                      "int[2] padding=[0, 0]", "str mode=\"a,b)\"", "Tensor(a!) out",
                                      "Tensor(b!) indices"}));
  EXPECT_EQ(pool->returns, "(Tensor(a!), Tensor(b!))");
  auto none = parse_full_schema("_foreach_zero_(Tensor(a!)[] self) -> ()");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->returns, "()");
  auto no_args = parse_full_schema("aten::_get_tracing_state() -> bool");
  ASSERT_TRUE(no_args);
  EXPECT_TRUE(no_args->arguments.empty());

  EXPECT_EQ(parse_full_schema("relu(Tensor self) ->"), std::nullopt);
  EXPECT_EQ(parse_full_schema("relu(Tensor self, ) -> Tensor"), std::nullopt);
  EXPECT_EQ(parse_full_schema("relu(Tensor self -> Tensor"), std::nullopt);
  EXPECT_EQ(parse_full_schema("Expected all tensors to be on the same device"), std::nullopt);
}

TEST(SchemaArgumentType, StripsNameAndDefault) {
  EXPECT_EQ(schema_argument_type("Tensor(a!) self"), "Tensor(a!)");
  EXPECT_EQ(schema_argument_type("Tensor(a -> *) self"), "Tensor(a -> *)");
  EXPECT_EQ(schema_argument_type("int[2] stride=[1, 1]"), "int[2]");
  EXPECT_EQ(schema_argument_type("Tensor? weight=None"), "Tensor?");
  EXPECT_EQ(schema_argument_type("Dict(str, t) d"), "Dict(str, t)");
  EXPECT_EQ(schema_argument_type("Tensor"), "Tensor");
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

TEST(OpNameResolver, KeepsEveryDistinctFullSchema) {
  OpNameResolver resolver;
  const char* texts[] = {
      "hardswish_(Tensor(a!) self) -> Tensor(a!)",
      "aten::hardswish_(Tensor self) -> Tensor",
      "aten::hardswish_(Tensor(a!) self) -> Tensor(a!)",  // the same schema again
  };
  for (const char* text : texts) resolver.add_schema(*parse_full_schema(text));
  ASSERT_EQ(resolver.schemas("hardswish_").size(), 2u);
  EXPECT_EQ(resolver.schemas("hardswish_")[0].returns, "Tensor(a!)");
  EXPECT_EQ(resolver.schemas("hardswish_")[1].returns, "Tensor");
  EXPECT_EQ(resolver.schema_count(), 1u);
  EXPECT_EQ(resolver.resolve("hardswish_"), (OpName{"hardswish_", ""}));
  EXPECT_TRUE(resolver.schemas("hardswish").empty());  // exact names only
}

}  // namespace
}  // namespace gpuprof
