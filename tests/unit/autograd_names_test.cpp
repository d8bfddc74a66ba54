// autograd_names_test.cpp: torch.profiler's names of backward nodes and ranges
// from mangled symbols.
#include "torch/autograd_names.h"

#include <gtest/gtest.h>

namespace gpuprof {
namespace {

TEST(AutogradNames, ApplyOfGeneratedNodesIsTheClassAlone) {
  EXPECT_EQ(autograd_node_of_apply("_ZN5torch8autograd9generated14AddmmBackward05applyEOSt6vectorIN2at6TensorESaIS5_EE"),
            "AddmmBackward0");
  // Others keep Node::name()'s default: the demangled class.
  EXPECT_EQ(autograd_node_of_apply("_ZN5torch8autograd14AccumulateGrad5applyEOSt6vectorIN2at6TensorESaIS4_EE"),
            "torch::autograd::AccumulateGrad");
}

TEST(AutogradNames, AnythingElseIsNoNode) {
  for (const char* sym : {
           "_ZN5torch8autograd14AccumulateGrad5applyERSt6vectorIN2at6TensorESaIS4_EE",  // lvalue: not apply(&&)
           "_ZN5torch8autograd14AccumulateGrad4nameEv",
           "_ZN2at4_ops2mm4callERKNS_6TensorES4_",
           "_ZN3c104impl5applyEOSt6vectorIN2at6TensorESaIS5_EE",  // not torch::autograd
           "_ZN5torch8autograd9generated5applyEOSt6vectorIN2at6TensorESaIS4_EE",  // no class
           "_ZN5torch8autograd",
           "",
       })
    EXPECT_FALSE(autograd_node_of_apply(sym)) << sym;
}

TEST(AutogradNames, VtablesNameTheirNode) {
  EXPECT_EQ(autograd_node_of_vtable("_ZTVN5torch8autograd9generated14AddmmBackward0E"), "AddmmBackward0");
  EXPECT_EQ(autograd_node_of_vtable("_ZTVN5torch8autograd14AccumulateGradE"), "torch::autograd::AccumulateGrad");
  EXPECT_FALSE(autograd_node_of_vtable("_ZTVN2at14RecordFunctionE"));
  EXPECT_FALSE(autograd_node_of_vtable("_ZTVN5torch8autograd14AccumulateGradEx"));
  EXPECT_EQ(evaluate_function_row("AddmmBackward0"), "autograd::engine::evaluate_function: AddmmBackward0");
}

TEST(AutogradNames, RangeSites) {
  EXPECT_EQ(range_site_of("_ZN5torch8autograd8profiler25record_function_enter_newERKNSt7__cxx1112basic_stringIcSt11"
                          "char_traitsIcESaIcEEERKN3c108optionalIS7_EE"),
            RangeSite::enter);
  EXPECT_EQ(range_site_of("_ZN2at14RecordFunctionC1ENS_11RecordScopeE"), RangeSite::constructor);
  EXPECT_EQ(range_site_of("_ZN2at14RecordFunctionC2ENS_11RecordScopeE"), RangeSite::constructor);
  // The dispatcher's own RecordFunctions are built from StepCallbacks: not ranges.
  EXPECT_EQ(range_site_of("_ZN2at14RecordFunctionC1EONS_13StepCallbacksE"), RangeSite::none);
  EXPECT_EQ(range_site_of("_ZN2at14RecordFunction3endEv"), RangeSite::end);
  EXPECT_EQ(range_site_of("_ZN2at14RecordFunctionD1Ev"), RangeSite::end);
  EXPECT_EQ(range_site_of("_ZN2at14RecordFunctionD0Ev"), RangeSite::none);  // calls D1
  EXPECT_EQ(range_site_of("_ZN5torch8autograd6Engine17evaluate_functionERSt10shared_ptrINS0_9GraphTaskEEPNS0_4NodeERN"
                          "S0_11InputBufferERKS2_INS0_10ReadyQueueEE"),
            RangeSite::evaluate_function);
  EXPECT_EQ(guard_range_of_op("detach"), "detach");
  EXPECT_EQ(guard_range_of_op("detach_"), "detach_");
  EXPECT_FALSE(guard_range_of_op("detach_copy"));
}

}  // namespace
}  // namespace gpuprof
