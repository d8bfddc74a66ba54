// op_args_test.cpp: where tensor arguments are at the entry of
// at::_ops::<op>::call.
//
// The hand-written signatures below were mangled by g++ from declarations
// with these parameter types, and every expected location was checked
// against g++ itself: each signature, with libtorch 1.13's real types from
// /usr/include (libstdc++'s std::optional for the std::optional cases), was
// called through a function pointer aimed at an assembly stub that saved
// rdi..r9 and the stack words above the return address. The same check on
// all 2952 at::_ops::*::call of Debian's libtorch 1.13, through
// decltype(&at::_ops::<op>::call), agreed with every ok plan.
#include "torch/op_args.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "torch/dispatcher_catalog.h"
#include "torch/op_names.h"

namespace gpuprof {
namespace {

constexpr uint8_t kRdi = 0, kRsi = 1, kRdx = 2, kRcx = 3, kR8 = 4, kR9 = 5;
// The n-th stack word above the return address (rsp + 8 * n).
constexpr uint8_t stack_word(int n) { return static_cast<uint8_t>(GP_ARG_IN_STACK + n - 1); }

TensorArgSlot tensor(uint32_t index, uint8_t where) { return {index, GP_ARG_TENSOR, where}; }
TensorArgSlot c10_optional(uint32_t index, uint8_t where) {
  return {index, GP_ARG_OPT_TENSOR_C10, where};
}
TensorArgSlot std_optional(uint32_t index, uint8_t where) {
  return {index, GP_ARG_OPT_TENSOR_STD, where};
}

std::vector<TensorArgSlot> plan_or_why(std::string_view mangled, std::string_view returns,
                                       OptionalAbi abi = OptionalAbi::c10_optional) {
  OpArgPlan plan = plan_op_args(mangled, returns, abi);
  EXPECT_TRUE(plan.ok) << plan.why;
  return plan.tensors;
}

TEST(DemangledParameters, SplitsAtTopLevelCommas) {
  EXPECT_EQ(demangled_parameters("_ZN2at4_ops4relu4callERKNS_6TensorE"),
            (std::vector<std::string>{"at::Tensor const&"}));
  EXPECT_EQ(
      demangled_parameters(
          "_ZN2at4_ops6conv2d4callERKNS_6TensorES4_RKN3c108optionalIS2_EENS5_8ArrayRefIlEESB_SB_l"),
      (std::vector<std::string>{"at::Tensor const&", "at::Tensor const&",
                                "c10::optional<at::Tensor> const&", "c10::ArrayRef<long>",
                                "c10::ArrayRef<long>", "c10::ArrayRef<long>", "long"}));
  // Commas inside template arguments do not split.
  EXPECT_EQ(demangled_parameters(
                "_ZN2at4_ops5small4callEbN3c1010ScalarTypeENS2_8optionalIS3_EENS2_6DeviceESt5"
                "arrayIbLm3EENS_7DimnameENS4_IlEERKNS_6TensorE"),
            (std::vector<std::string>{"bool", "c10::ScalarType", "c10::optional<c10::ScalarType>",
                                      "c10::Device", "std::array<bool, 3ul>", "at::Dimname",
                                      "c10::optional<long>", "at::Tensor const&"}));
  EXPECT_EQ(demangled_parameters("_ZN2at4_ops6noargs4callEv"), std::vector<std::string>{});
  EXPECT_EQ(demangled_parameters("not a symbol"), std::nullopt);
  EXPECT_EQ(demangled_parameters("_ZN2at4_ops"), std::nullopt);
}

TEST(ReturnsInMemory, SchemaReturns) {
  // at::Tensor, views, tuples (even of references), vectors and class
  // types come back through a hidden pointer in rdi.
  for (const char* returns :
       {"Tensor", "Tensor(a)", "(Tensor)", "(Tensor, Tensor)", "(Tensor(a!), Tensor(b!))",
        "(Tensor(a!) values, Tensor(b!) indices)", "(Tensor, Tensor, Tensor, int)", "Tensor[]",
        "Tensor(a)[]", "int[]", "SymInt[]", "Scalar", "str", "SymInt", "  Tensor "})
    EXPECT_EQ(returns_in_memory(returns), true) << returns;
  // void, at::Tensor& and scalars come back in rax / xmm0.
  for (const char* returns : {"()", "Tensor(a!)", "(Tensor(a!))", "bool", "int", "float",
                              "ScalarType", "Layout", "MemoryFormat", "Device", "QScheme"})
    EXPECT_EQ(returns_in_memory(returns), false) << returns;
  // Anything else is refused.
  for (const char* returns : {"", "t", "t(*)", "complex", "Tensor?", "Tensor(a!)[]", "Dict(str, t)",
                              "(Tensor, t)", "__torch__.torch.classes.profiler._RecordFunction"})
    EXPECT_EQ(returns_in_memory(returns), std::nullopt) << returns;
}

TEST(PlanOpArgs, IntegerRegistersThenStack) {
  // seven_tensors(T x 7) -> Tensor: the hidden pointer takes rdi.
  constexpr const char* seven = "_ZN2at4_ops13seven_tensors4callERKNS_6TensorES4_S4_S4_S4_S4_S4_";
  EXPECT_EQ(plan_or_why(seven, "Tensor"),
            (std::vector<TensorArgSlot>{tensor(0, kRsi), tensor(1, kRdx), tensor(2, kRcx),
                                        tensor(3, kR8), tensor(4, kR9), tensor(5, stack_word(1)),
                                        tensor(6, stack_word(2))}));
  EXPECT_EQ(plan_or_why(seven, "Tensor(a!)"),
            (std::vector<TensorArgSlot>{tensor(0, kRdi), tensor(1, kRsi), tensor(2, kRdx),
                                        tensor(3, kRcx), tensor(4, kR8), tensor(5, kR9),
                                        tensor(6, stack_word(1))}));
  OpArgPlan plan = plan_op_args(seven, "()");
  EXPECT_TRUE(plan.ok);
  EXPECT_EQ(plan.arg_count, 7u);
  EXPECT_TRUE(plan.why.empty());
}

TEST(PlanOpArgs, PairSpillsWhileLaterPointerTakesTheLastRegister) {
  // pair_spills(T, long x 4, ArrayRef<long>, T, T) -> (): the ArrayRef needs
  // two registers with only r9 left, so it goes on the stack (words 1-2)
  // and the next tensor still gets r9.
  EXPECT_EQ(
      plan_or_why("_ZN2at4_ops11pair_spills4callERKNS_6TensorEllllN3c108ArrayRefIlEES4_S4_", "()"),
      (std::vector<TensorArgSlot>{tensor(0, kRdi), tensor(6, kR9), tensor(7, stack_word(3))}));
  // stack_pairs(long x 6, ArrayRef<long>, T, string_view, T) -> (): every
  // pair is on the stack, two words each.
  EXPECT_EQ(
      plan_or_why("_ZN2at4_ops11stack_pairs4callEllllllN3c108ArrayRefIlEERKNS_6TensorENS2_17basic_"
                  "string_viewIcEES7_",
                  "()"),
      (std::vector<TensorArgSlot>{tensor(7, stack_word(3)), tensor(9, stack_word(6))}));
  // scalar_ref(Scalar const&, T, string_view, OptionalArrayRef<long>,
  // Stream, T) -> Tensor: string_view in rcx+r8, the OptionalArrayRef and
  // the Stream spill, the last tensor gets r9.
  EXPECT_EQ(
      plan_or_why(
          "_ZN2at4_ops10scalar_ref4callERKN3c106ScalarERKNS_6TensorENS2_17basic_string_viewIcEENS"
          "2_16OptionalArrayRefIlEENS2_6StreamES8_",
          "Tensor"),
      (std::vector<TensorArgSlot>{tensor(1, kRdx), tensor(5, kR9)}));
}

TEST(PlanOpArgs, DoublesTakeNoIntegerRegister) {
  // doubles(double, T, double, double, T) -> Tensor
  EXPECT_EQ(plan_or_why("_ZN2at4_ops7doubles4callEdRKNS_6TensorEddS4_", "Tensor"),
            (std::vector<TensorArgSlot>{tensor(1, kRsi), tensor(4, kRdx)}));
  // nine_doubles(double x 9, long x 5, T) -> Tensor: the ninth double is
  // stack word 1, the longs fill rsi..r9, the tensor is stack word 2.
  EXPECT_EQ(plan_or_why("_ZN2at4_ops12nine_doubles4callEdddddddddlllllRKNS_6TensorE", "Tensor"),
            (std::vector<TensorArgSlot>{tensor(14, stack_word(2))}));
}

TEST(PlanOpArgs, C10OptionalDoubleIsTwoIntegerWords) {
  // c10::optional<double> is {bool, union {char; double}}: the union's
  // eightbyte is INTEGER, so it takes two integer registers or two stack
  // words, and no xmm register.
  // opt_double_in_regs(long x 5, optional<double>, T) -> ()
  EXPECT_EQ(plan_or_why("_ZN2at4_ops18opt_double_in_regs4callElllllN3c108optionalIdEERKNS_6TensorE",
                        "()"),
            (std::vector<TensorArgSlot>{tensor(6, kR9)}));
  // opt_double_spills(long x 6, optional<double>, T) -> ()
  EXPECT_EQ(plan_or_why("_ZN2at4_ops17opt_double_spills4callEllllllN3c108optionalIdEERKNS_6TensorE",
                        "()"),
            (std::vector<TensorArgSlot>{tensor(7, stack_word(3))}));
  // opt_double_no_sse(double x 8, optional<double>, T) -> ()
  EXPECT_EQ(
      plan_or_why("_ZN2at4_ops17opt_double_no_sse4callEddddddddN3c108optionalIdEERKNS_6TensorE",
                  "()"),
      (std::vector<TensorArgSlot>{tensor(9, kRdx)}));
}

TEST(PlanOpArgs, InvisibleReferencesAndSmallAggregates) {
  // invisible(SymInt, T, optional<string_view>, T, optional<SymInt>,
  // optional<Generator>, T) -> Tensor: each non-trivially-copyable value is
  // a pointer in one register.
  EXPECT_EQ(
      plan_or_why(
          "_ZN2at4_ops9invisible4callEN3c106SymIntERKNS_6TensorENS2_8optionalINS2_17basic_string_"
          "viewIcEEEES6_NS7_IS3_EENS7_INS_9GeneratorEEES6_",
          "Tensor"),
      (std::vector<TensorArgSlot>{tensor(1, kRdx), tensor(3, kR8), tensor(6, stack_word(2))}));
  // small(bool, ScalarType, optional<ScalarType>, Device, array<bool, 3>,
  // Dimname, optional<long>, T) -> (): one register each up to Dimname,
  // then optional<long> (16 bytes) on the stack.
  EXPECT_EQ(
      plan_or_why(
          "_ZN2at4_ops5small4callEbN3c1010ScalarTypeENS2_8optionalIS3_EENS2_6DeviceESt5arrayIbLm3"
          "EENS_7DimnameENS4_IlEERKNS_6TensorE",
          "()"),
      (std::vector<TensorArgSlot>{tensor(7, stack_word(3))}));
}

TEST(PlanOpArgs, TensorKinds) {
  // optionals(c10::optional<Tensor> const&, std::optional<Tensor> const&, Tensor&) -> Tensor(a!)
  EXPECT_EQ(
      plan_or_why("_ZN2at4_ops9optionals4callERKN3c108optionalINS_6TensorEEERKSt8optionalIS4_ERS4_",
                  "Tensor(a!)"),
      (std::vector<TensorArgSlot>{c10_optional(0, kRdi), std_optional(1, kRsi), tensor(2, kRdx)}));
  // lists(ArrayRef<Tensor>, List<optional<Tensor>> const&, IListRef<Tensor>
  // const&, T) -> Tensor: tensor lists are printed as [], not located.
  OpArgPlan plan = plan_op_args(
      "_ZN2at4_ops5lists4callEN3c108ArrayRefINS_6TensorEEERKNS2_4ListINS2_8optionalIS4_"
      "EEEERKNS2_8IListRefIS4_EERKS4_",
      "Tensor");
  ASSERT_TRUE(plan.ok) << plan.why;
  EXPECT_EQ(plan.arg_count, 4u);
  EXPECT_EQ(plan.tensors, (std::vector<TensorArgSlot>{tensor(3, kR9)}));
}

TEST(PlanOpArgs, StdOptionalLibraries) {
  // std_opts(long x 4, std::optional<long>, std::optional<Tensor> const&,
  // OptionalArrayRef<long>, std::optional<string_view>,
  // std::optional<double>, T) -> (): with std::optional, OptionalArrayRef
  // and optional<string_view> are 24-byte values on the stack, and
  // optional<double> ({double, bool}) wants one xmm and one integer
  // register (none left: two stack words).
  constexpr const char* std_opts =
      "_ZN2at4_ops8std_opts4callEllllSt8optionalIlERKS2_INS_6TensorEEN3c1016OptionalArrayRefIlEES2_"
      "INS8_17basic_"
      "string_viewIcEEES2_IdERKS4_";
  EXPECT_EQ(plan_or_why(std_opts, "()"), (std::vector<TensorArgSlot>{std_optional(5, stack_word(1)),
                                                                     tensor(9, stack_word(10))}));
  // The symbol's own std::optional decides when the caller says c10.
  EXPECT_EQ(plan_or_why(std_opts, "()", OptionalAbi::std_optional), plan_or_why(std_opts, "()"));

  // oar_only(OptionalArrayRef<long>, T) -> (): the name is the same in both
  // kinds of library, the size is not.
  constexpr const char* oar_only =
      "_ZN2at4_ops8oar_only4callEN3c1016OptionalArrayRefIlEERKNS_6TensorE";
  EXPECT_EQ(plan_or_why(oar_only, "()", OptionalAbi::c10_optional),
            (std::vector<TensorArgSlot>{tensor(1, kRdx)}));
  EXPECT_EQ(plan_or_why(oar_only, "()", OptionalAbi::std_optional),
            (std::vector<TensorArgSlot>{tensor(1, kRdi)}));

  // std_opt_double(long x 5, std::optional<double>, T) -> (): r9 and xmm0.
  EXPECT_EQ(plan_or_why("_ZN2at4_ops14std_opt_double4callElllllSt8optionalIdERKNS_6TensorE", "()"),
            (std::vector<TensorArgSlot>{tensor(6, stack_word(1))}));
  // std_opt_double_no_sse(double x 8, std::optional<double>, T) -> (): no
  // xmm left, so the whole optional is on the stack and rdi is still free.
  EXPECT_EQ(
      plan_or_why("_ZN2at4_ops21std_opt_double_no_sse4callEddddddddSt8optionalIdERKNS_6TensorE",
                  "()"),
      (std::vector<TensorArgSlot>{tensor(9, kRdi)}));
  // std_misc(optional<SymInt>, optional<Generator>, optional<ScalarType>,
  // optional<Device>, optional<ArrayRef<long>>, T,
  // optional<std::string_view>, std::string_view, T) -> ()
  EXPECT_EQ(
      plan_or_why(
          "_ZN2at4_ops8std_misc4callESt8optionalIN3c106SymIntEES2_INS_9GeneratorEES2_INS3_"
          "10ScalarTy"
          "peEES2_INS3_6DeviceEES2_INS3_8ArrayRefIlEEERKNS_6TensorES2_ISt17basic_string_viewIcSt11"
          "char_traitsIcEEESL_SH_",
          "()"),
      (std::vector<TensorArgSlot>{tensor(5, kR8), tensor(8, kR9)}));

  const std::string_view c10_symbols[] = {"_ZN2at4_ops4relu4callERKNS_6TensorE", oar_only};
  EXPECT_EQ(optional_abi_of(c10_symbols), OptionalAbi::c10_optional);
  const std::string_view std_symbols[] = {oar_only, std_opts};
  EXPECT_EQ(optional_abi_of(std_symbols), OptionalAbi::std_optional);
}

TEST(PlanOpArgs, RefusesWhatItCannotLocate) {
  OpArgPlan plan =
      plan_op_args("_ZN2at4_ops12unknown_type4callERKNS_6TensorEN3c107complexIdEES4_", "Tensor");
  EXPECT_FALSE(plan.ok);
  EXPECT_EQ(plan.why, "unsupported parameter type c10::complex<double>");
  EXPECT_TRUE(plan.tensors.empty());

  plan = plan_op_args(
      "_ZN2at4_ops9seventeen4callERKNS_6TensorES4_S4_S4_S4_S4_S4_S4_S4_S4_S4_S4_S4_S4_S4_S4_S4_",
      "Tensor");
  EXPECT_FALSE(plan.ok);
  EXPECT_EQ(plan.why, "more than 16 tensor arguments");

  plan = plan_op_args("_ZN2at4_ops4relu4callERKNS_6TensorE", std::nullopt);
  EXPECT_FALSE(plan.ok);
  EXPECT_EQ(plan.why, "no schema");
  EXPECT_EQ(plan.arg_count, 1u);

  plan = plan_op_args("_ZN2at4_ops4relu4callERKNS_6TensorE", std::string_view("t(*)"));
  EXPECT_FALSE(plan.ok);
  EXPECT_EQ(plan.why, "unsupported return t(*)");

  plan = plan_op_args("garbage", std::string_view("Tensor"));
  EXPECT_FALSE(plan.ok);
  EXPECT_EQ(plan.why, "cannot demangle the signature");

  plan = plan_op_args("_ZN2at4_ops6noargs4callEv", std::string_view("Tensor"));
  EXPECT_TRUE(plan.ok);
  EXPECT_EQ(plan.arg_count, 0u);
  EXPECT_TRUE(plan.tensors.empty());
}

TEST(PlanOpArgs, ChoosesTheSchemaThatMatchesTheSignature) {
  constexpr const char* hardswish_ = "_ZN2at4_ops10hardswish_4callERNS_6TensorE";
  // libtorch 1.13's .rodata has both; at::Tensor& is only ever Tensor(a!).
  const Schema jit_copy = *parse_full_schema("aten::hardswish_(Tensor self) -> Tensor");
  const Schema registered = *parse_full_schema("hardswish_(Tensor(a!) self) -> Tensor(a!)");
  for (const auto& schemas :
       {std::vector<Schema>{jit_copy, registered}, std::vector<Schema>{registered, jit_copy}}) {
    OpArgPlan plan = plan_op_args(hardswish_, schemas);
    ASSERT_TRUE(plan.ok) << plan.why;
    EXPECT_EQ(plan.tensors, (std::vector<TensorArgSlot>{tensor(0, kRdi)}));
  }
  OpArgPlan plan = plan_op_args(hardswish_, std::vector<Schema>{jit_copy});
  EXPECT_FALSE(plan.ok);
  EXPECT_EQ(plan.why, "schema argument 0 (Tensor) does not match the parameter at::Tensor&");

  // torchgen passes some mutated tensors as const& (resize_, out= of fft_hfftn...).
  plan = plan_op_args(
      "_ZN2at4_ops7resize_4callERKNS_6TensorEN3c108ArrayRefINS5_6SymIntEEENS5_8optionalINS5_12"
      "MemoryFormatEEE",
      std::vector<Schema>{*parse_full_schema(
          "resize_(Tensor(a!) self, SymInt[] size, *, MemoryFormat? memory_format=None) -> "
          "Tensor(a!)")});
  ASSERT_TRUE(plan.ok) << plan.why;
  EXPECT_EQ(plan.tensors, (std::vector<TensorArgSlot>{tensor(0, kRdi)}));

  constexpr const char* relu = "_ZN2at4_ops4relu4callERKNS_6TensorE";
  plan = plan_op_args(
      relu, std::vector<Schema>{*parse_full_schema("relu(Tensor self, int x) -> Tensor")});
  EXPECT_FALSE(plan.ok);
  EXPECT_EQ(plan.why, "schema has 2 arguments, signature 1");
  // Matching schemas that disagree on the return: refused, not guessed.
  plan = plan_op_args(relu, std::vector<Schema>{*parse_full_schema("relu(Tensor self) -> Tensor"),
                                                *parse_full_schema("relu(Tensor self) -> ()")});
  EXPECT_FALSE(plan.ok);
  EXPECT_EQ(plan.why, "schemas disagree on the return: Tensor or ()");
  // ... and agreeing copies are fine.
  plan = plan_op_args(
      relu, std::vector<Schema>{*parse_full_schema("relu(Tensor self) -> Tensor"),
                                *parse_full_schema("aten::relu(Tensor self) -> (Tensor)")});
  ASSERT_TRUE(plan.ok) << plan.why;
  EXPECT_EQ(plan.tensors, (std::vector<TensorArgSlot>{tensor(0, kRsi)}));
  plan = plan_op_args(relu, std::vector<Schema>{});
  EXPECT_FALSE(plan.ok);
  EXPECT_EQ(plan.why, "no schema");
}

TEST(ToBpfPlan, CopiesSlotsInOrder) {
  OpArgPlan plan;
  plan.ok = true;
  plan.arg_count = 7;
  plan.tensors = {tensor(0, kRsi), tensor(1, kRdx), c10_optional(2, kRcx),
                  std_optional(6, stack_word(2))};
  gp_shape_plan bpf = to_bpf_plan(plan);
  ASSERT_EQ(bpf.count, 4);
  EXPECT_EQ(bpf.args[0].kind, GP_ARG_TENSOR);
  EXPECT_EQ(bpf.args[0].where, kRsi);
  EXPECT_EQ(bpf.args[2].kind, GP_ARG_OPT_TENSOR_C10);
  EXPECT_EQ(bpf.args[2].where, kRcx);
  EXPECT_EQ(bpf.args[3].kind, GP_ARG_OPT_TENSOR_STD);
  EXPECT_EQ(bpf.args[3].where, 7);
  EXPECT_EQ(bpf.args[4].kind, 0);

  plan.ok = false;
  EXPECT_EQ(to_bpf_plan(plan).count, 0);
  plan.ok = true;
  plan.tensors.clear();
  EXPECT_EQ(to_bpf_plan(plan).count, 0);
}

// The real thing: Debian's libtorch 1.13 (the test environment's setup
// installs it; the test fails, never skips, without it).
class DebianLibtorchPlans : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto catalog = load_dispatcher_catalog("/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13", ExitMode::ret);
    ASSERT_TRUE(catalog) << catalog.error();
    catalog_ = new DispatcherCatalog(std::move(*catalog));
  }
  static void TearDownTestSuite() {
    delete catalog_;
    catalog_ = nullptr;
  }
  // The plan of at::_ops::<struct_name>::call.
  static const OpArgPlan& plan(std::string_view struct_name) {
    static const OpArgPlan missing{.ok = false, .why = "no such op", .arg_count = 0, .tensors = {}};
    if (!catalog_) return missing;
    for (size_t i = 0; i < catalog_->ops.size(); i++)
      if (dispatcher_call_struct(catalog_->ops[i].symbol) == struct_name)
        return catalog_->arg_plans[i];
    return missing;
  }
  static DispatcherCatalog* catalog_;
};
DispatcherCatalog* DebianLibtorchPlans::catalog_ = nullptr;

#define EXPECT_PLAN(op, count, ...)                                        \
  do {                                                                     \
    const OpArgPlan& p = plan(op);                                         \
    EXPECT_TRUE(p.ok) << op << ": " << p.why;                              \
    EXPECT_EQ(p.arg_count, count##u) << op;                                \
    EXPECT_EQ(p.tensors, (std::vector<TensorArgSlot>{__VA_ARGS__})) << op; \
  } while (0)

TEST_F(DebianLibtorchPlans, CommonOps) {
  ASSERT_TRUE(catalog_);
  // conv2d(input, weight, bias?, stride, padding, dilation, groups) -> Tensor
  EXPECT_PLAN("conv2d", 7, tensor(0, kRsi), tensor(1, kRdx), c10_optional(2, kRcx));
  // add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha) -> Tensor(a!)
  EXPECT_PLAN("add__Tensor", 3, tensor(0, kRdi), tensor(1, kRsi));
  EXPECT_PLAN("mul_Tensor", 2, tensor(0, kRsi), tensor(1, kRdx));
  EXPECT_PLAN("addmm", 5, tensor(0, kRsi), tensor(1, kRdx), tensor(2, kRcx));
  EXPECT_PLAN("linear", 3, tensor(0, kRsi), tensor(1, kRdx), c10_optional(2, kRcx));
  EXPECT_PLAN("batch_norm", 9, tensor(0, kRsi), c10_optional(1, kRdx), c10_optional(2, kRcx),
              c10_optional(3, kR8), c10_optional(4, kR9));
  // -> (Tensor, Tensor, Tensor)
  EXPECT_PLAN("native_batch_norm", 8, tensor(0, kRsi), c10_optional(1, kRdx), c10_optional(2, kRcx),
              c10_optional(3, kR8), c10_optional(4, kR9));
  // add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
  EXPECT_PLAN("add_out", 4, tensor(0, kRdi), tensor(1, kRsi), tensor(3, kRcx));
  // Tensor lists are printed as []: cat's IListRef, index's List<optional<Tensor>>.
  EXPECT_PLAN("cat", 2);
  EXPECT_PLAN("index_Tensor", 2, tensor(0, kRsi));
  EXPECT_PLAN("lstm_input", 9, tensor(0, kRsi));
}

TEST_F(DebianLibtorchPlans, TensorsOnTheStack) {
  ASSERT_TRUE(catalog_);
  // max_pool2d_with_indices.out(self, int[2] kernel_size x 4 ArrayRefs, bool
  // ceil_mode, *, Tensor(a!) out, Tensor(b!) indices) -> (Tensor(a!), Tensor(b!)):
  // the tuple's hidden pointer, then two ArrayRefs in registers, two on the
  // stack (words 1-4), ceil_mode (word 5), out (word 6), indices (word 7).
  EXPECT_PLAN("max_pool2d_with_indices_out", 8, tensor(0, kRsi), tensor(6, stack_word(6)),
              tensor(7, stack_word(7)));
  // embedding_bag.padding_idx: an optional tensor on the stack.
  EXPECT_PLAN("embedding_bag_padding_idx", 9, tensor(0, kRsi), tensor(1, kRdx), tensor(2, kRcx),
              c10_optional(6, stack_word(2)));
  // fft_hfftn.out: `out` is a mutated const& after two OptionalArrayRefs and
  // an optional<string_view> passed by invisible reference (r9).
  EXPECT_PLAN("fft_hfftn_out", 5, tensor(0, kRdi), tensor(4, stack_word(1)));
  // upsample_nearest3d.out: three optional<double> (two integer words each)
  // spill to the stack, out still gets r9.
  EXPECT_PLAN("upsample_nearest3d_out", 6, tensor(0, kRdi), tensor(5, kR9));
  EXPECT_PLAN("special_logit_out", 3, tensor(0, kRdi), tensor(2, kRcx));
}

TEST_F(DebianLibtorchPlans, CountsAndReasons) {
  ASSERT_TRUE(catalog_);
  ASSERT_EQ(catalog_->arg_plans.size(), catalog_->ops.size());
  std::map<std::string, int> reasons;
  uint32_t not_ok = 0;
  for (const OpArgPlan& p : catalog_->arg_plans) {
    if (p.ok) continue;
    not_ok++;
    reasons[p.why]++;
  }
  EXPECT_EQ(not_ok, catalog_->ops_without_arg_plan);
  // 2931 of 2952: the 20 ops without a schema string, and
  // _transformer_decoder_only_layer_fwd.out with 19 tensors.
  EXPECT_EQ(catalog_->ops.size() - not_ok, 2931u);
  EXPECT_EQ(reasons, (std::map<std::string, int>{
                         {"no schema", 20}, {"more than 16 tensor arguments", 1},
                         {"not an aten op", 658}}));  // 604 backward nodes, evaluate_function, 2 ranges, 51 collectives
  EXPECT_FALSE(plan("_transformer_decoder_only_layer_fwd_out").ok);
  EXPECT_FALSE(plan("dropout_").ok);
}

}  // namespace
}  // namespace gpuprof
