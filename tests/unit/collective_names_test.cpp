// torch.distributed's collectives by their exported symbols
// (torch/collective_names.h): the symbols as libtorch_cpu 1.13 and 2.6
// export them, and look-alikes that are not collectives.
#include "torch/collective_names.h"

#include <gtest/gtest.h>

namespace gpuprof {
namespace {

TEST(CollectiveNames, BackendCollectivesAreNamedByTheirClassPath) {
  EXPECT_EQ(collective_of_symbol("_ZN4c10d16ProcessGroupGloo9allreduceERSt6vectorIN2at6TensorESaIS3_EERKNS_16AllreduceOptionsE"),
            "c10d::ProcessGroupGloo::allreduce");
  EXPECT_EQ(collective_of_symbol("_ZN4c10d16ProcessGroupGloo9broadcastERSt6vectorIN2at6TensorESaIS3_EERKNS_16BroadcastOptionsE"),
            "c10d::ProcessGroupGloo::broadcast");
  EXPECT_EQ(collective_of_symbol("_ZN4c10d16ProcessGroupGloo7barrierERKNS_14BarrierOptionsE"),
            "c10d::ProcessGroupGloo::barrier");
  EXPECT_EQ(collective_of_symbol("_ZN4c10d16ProcessGroupGloo15_allgather_baseERN2at6TensorES3_RKNS_16AllgatherOptionsE"),
            "c10d::ProcessGroupGloo::_allgather_base");
  EXPECT_EQ(collective_of_symbol("_ZN4c10d15ProcessGroupMPI9allgatherERSt6vectorIS1_IN2at6TensorESaIS3_EESaIS5_EERS5_RKNS_16AllgatherOptionsE"),
            "c10d::ProcessGroupMPI::allgather");
}

TEST(CollectiveNames, WaitsAreNamedByTheirWorkClass) {
  EXPECT_EQ(collective_of_symbol("_ZN4c10d4Work4waitENSt6chrono8durationIlSt5ratioILl1ELl1000EEEE"), "c10d::Work::wait");
  EXPECT_EQ(collective_of_symbol("_ZN4c10d16ProcessGroupGloo8SendWork4waitENSt6chrono8durationIlSt5ratioILl1ELl1000EEEE"),
            "c10d::ProcessGroupGloo::SendWork::wait");
}

TEST(CollectiveNames, OtherC10dFunctionsAreNotCollectives) {
  // Stores wait too; a backend has other methods; the base class's inline
  // collectives are no exported function; a const method or another
  // namespace is not one.
  EXPECT_EQ(collective_of_symbol("_ZN4c10d8TCPStore4waitERKSt6vectorINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESaIS7_EE"),
            std::nullopt);
  EXPECT_EQ(collective_of_symbol("_ZN4c10d16ProcessGroupGloo7enqueueEN3c1013intrusive_ptrINS0_9AsyncWorkENS2_6detail34intrusive_target_default_null_typeIS4_EEEE"),
            std::nullopt);
  EXPECT_EQ(collective_of_symbol("_ZN4c10d16ProcessGroupGloo7runLoopEi"), std::nullopt);
  EXPECT_EQ(collective_of_symbol("_ZN4c10d12ProcessGroup9allreduceERSt6vectorIN2at6TensorESaIS3_EERKNS_16AllreduceOptionsE"),
            std::nullopt);
  EXPECT_EQ(collective_of_symbol("_ZNK4c10d4Work11isCompletedEv"), std::nullopt);
  EXPECT_EQ(collective_of_symbol("_ZN4c10d4Work6resultEv"), std::nullopt);
  EXPECT_EQ(collective_of_symbol("_ZN5torch8autograd9generated14AddmmBackward05applyEOSt6vectorIN2at6TensorESaIS5_EE"),
            std::nullopt);
  EXPECT_EQ(collective_of_symbol("allreduce"), std::nullopt);
}

}  // namespace
}  // namespace gpuprof
