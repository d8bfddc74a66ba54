// One-off, kept to show how tests/golden/record_v5.gpuprof was made: built
// against main at 6b941a3 (format version 5) and run with the file as its
// argument. Today's writer writes version 6, so rerunning it makes no v5 file.
#include <cstdio>
#include "record/record_file.h"
using namespace gpuprof;
int main(int argc, char** argv) {
  std::string err;
  auto w = noting_error(RecordWriter::create(argv[1], 0644), &err);
  if (!w) { std::puts(err.c_str()); return 1; }
  ProcessInfo p{4242, "python3", "python3 train.py", "/opt/torch/lib/libtorch_cpu.so", "0123abcd", "node-7"};
  ClockInfo c{1000000000ULL, 1700000000000000000ULL, 0};
  std::vector<OpInfo> ops = {{"aten::add", "Tensor", "_ZN2at4_ops10add_Tensor4callE", 3, 2},
                             {"aten::mm", "", "_ZN2at4_ops2mm4callE", 2, 2}};
  RecordOptions o; o.shapes = true; o.memory = true; o.sample_hz = 99; o.with_stack = true;
  if (!succeeded(w->begin(p, c, ops, o), &err)) { std::puts(err.c_str()); return 1; }
  // 6 events: add(mm()) on tid 101, then add on tid 102, then a catch.
  std::vector<gp_event> ev = {
      {5000000000ULL, 0x7ffd1000, 101, 4242, 0, GP_EV_OP_ENTRY, 0},
      {5000000300ULL, 0x7ffd0f80, 101, 4242, 1, GP_EV_OP_ENTRY, 0},
      {5000000900ULL, 0x7ffd0f80, 101, 4242, 1, GP_EV_OP_EXIT, 0},
      {5000001000ULL, 0x7ffd1000, 101, 4242, 0, GP_EV_OP_EXIT, 0},
      {5000002000ULL, 0x7ffe2000, 102, 4242, 0, GP_EV_OP_ENTRY, 0},
      {5000002500ULL, 0x7ffe2000, 102, 4242, 0, GP_EV_OP_EXIT, 0}};
  if (!succeeded(w->append_events(ev.data(), ev.size()), &err)) { std::puts(err.c_str()); return 1; }
  InputShapes s1 = {std::vector<int64_t>{2, 3}, std::nullopt};
  if (!succeeded(w->append_shapes(0, s1), &err) || !succeeded(w->append_shapes(4, s1), &err)) { std::puts(err.c_str()); return 1; }
  gp_mem_event m{}; m.ts_ns = 5000000100ULL; m.addr = 0x1000; m.bytes = 4096; m.tid = 101; m.kind = GP_MEM_CPU_ALLOC;
  if (!succeeded(w->append_mem_events(&m, 1), &err)) { std::puts(err.c_str()); return 1; }
  if (!succeeded(w->add_sample_frame("train.py(42): main"), &err) || !succeeded(w->add_sample_frame("libtorch_cpu.so!at::native::add"), &err) ||
      !succeeded(w->add_sample_stack({0}), &err) || !succeeded(w->add_sample_stack({0, 1}), &err)) { std::puts(err.c_str()); return 1; }
  CpuSample cs{5000000500ULL, 101, 1, true, 0};
  if (!succeeded(w->append_samples(&cs, 1), &err) || !succeeded(w->append_entry_stack(0, 0), &err) ||
      !succeeded(w->append_sample_kernel_stack(0, 1), &err)) { std::puts(err.c_str()); return 1; }
  if (!succeeded(w->add_launch_name("void kernel<float>()"), &err)) { std::puts(err.c_str()); return 1; }
  CudaLaunch l; l.ts_ns = 5000000600ULL; l.function = 0xabc; l.stream = 7; l.grid[0] = 4; l.block[0] = 128; l.tid = 101; l.api = GP_LAUNCH_KERNEL; l.name_id = 0;
  GpuCorrelation g{5000000600ULL, 77, 101, 211, 2};
  GpuActivity a; a.start_ns = 5000001500ULL; a.end_ns = 5000001800ULL; a.correlation_id = 77; a.device = 0; a.stream = 7; a.name_id = 0;
  if (!succeeded(w->append_launches(&l, 1), &err) || !succeeded(w->append_gpu_correlations(&g, 1), &err) || !succeeded(w->append_gpu_activities(&a, 1), &err) ||
      !succeeded(w->set_cuda_runtime({"/usr/lib/libcudart.so.12", 3, 0}), &err) || !succeeded(w->set_cupti_shim({"/opt/shim.so", 1, 0, 0}), &err) ||
      !succeeded(w->set_thread_names({{101, "python3"}, {102, "worker"}}), &err)) { std::puts(err.c_str()); return 1; }
  RecordStats st; st.events_recorded = 6; st.stop_reason = "target exited";
  if (!succeeded(w->finish(st, 6000000000ULL), &err)) { std::puts(err.c_str()); return 1; }
  return 0;
}
