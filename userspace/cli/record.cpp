#include "cli/record.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <regex>

#include "chrome_trace.h"
#include "cli/trace_export.h"
#include "file_mode.h"
#include "op_tracer.h"
#include "record_file.h"
#include "record_session.h"

namespace gpuprof::cli {
namespace {

constexpr const char* kDefaultOutput = "gpuprof.data";

// perf's convention: the previous default-named recording is kept once.
void keep_previous_default_output() {
  struct stat st;
  if (stat(kDefaultOutput, &st) == 0) rename(kDefaultOutput, "gpuprof.data.old");
}

}  // namespace

void add_record_command(CLI::App& app, RecordOptions& options) {
  CLI::App* record = app.add_subcommand("record", "Trace a PyTorch process and print its operator table");
  auto* pid = record->add_option("-p,--pid", options.pid, "attach to this running process");
  auto* command = record->add_option("command", options.command,
                                     "command to launch and trace (after --); probes are in place "
                                     "before its first operator");
  pid->excludes(command);
  record->add_option("-o,--output", options.output_path,
                     "record file (default: gpuprof.data, the previous one kept as gpuprof.data.old)");
  record->add_option("-d,--duration", options.duration_s, "stop after this many seconds")
      ->check(CLI::PositiveNumber);
  record->add_option("--ring-buffer", options.ring_buffer_mb,
                     "BPF ring buffer size in MiB (power of two); raise it if events are lost")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  record->add_option("--exit-mode", options.exit_mode,
                     "where exit probes go: emulated (stack-protector branch before each ret, one "
                     "trap; ret where a body has none) or ret (every ret, single-stepped, slower)")
      ->capture_default_str()
      ->check(CLI::IsMember({"emulated", "ret"}));
  record->add_flag("--record-shapes", options.record_shapes,
                   "record the sizes of every op's tensor arguments (torch.profiler's "
                   "record_shapes); report them with --group-by-input-shape");
  record->add_flag("--profile-memory", options.profile_memory,
                   "record tensor memory allocated and released in each op (torch.profiler's "
                   "profile_memory): CPU Mem / Self CPU Mem (and CUDA) columns");
  record->add_option("-F,--freq", options.sample_hz,
                     "also take CPU samples of the target's threads at this many Hz (perf CPU clock); "
                     "report them with report --folded --metric samples")
      ->check(CLI::Range(1, 100000));
  record->add_flag("--with-stack", options.with_stack,
                   "record the Python stack at every op call (torch.profiler's with_stack); report "
                   "them with --group-by-stack-n N, and in folded stacks");
  record->add_flag("--no-ops", options.no_ops,
                   "with -F: samples only, no operator probes (the lowest overhead); any process, "
                   "PyTorch or not, and a launched CMD from its start");
  record->add_flag("-q,--quiet", options.quiet, "do not print the table when recording stops");
  record->add_flag("-v,--verbose", options.verbose, "print probe and libbpf details");
  add_table_options(*record, options.table);
  add_trace_export_options(*record, options.table.trace);
  record->footer(
      "Stops on Ctrl-C, SIGTERM, -d SECONDS, or the target's exit; then writes the record file\n"
      "and prints the table (same columns as torch.profiler's key_averages().table()).\n"
      "CUDA kernel launches are traced with the ops once the target maps libcudart; GPU times\n"
      "come from gpuprof's CUPTI shim (libgpuprof_cupti.so next to gpuprof), which record -- CMD\n"
      "injects (CUDA_INJECTION64_PATH); start a job to attach to with that variable set\n"
      "(docs/cuda.md). Read them with: gpuprof report FILE --launches | --kernels.\n\n"
      "Examples:\n"
      "  sudo gpuprof record -p 4242                      # attach; Ctrl-C stops\n"
      "  sudo gpuprof record -p 4242 -d 10 --sort-by self_cpu_time_total --row-limit 10\n"
      "  sudo gpuprof record -p 4242 -d 5 --record-shapes --profile-memory \\\n"
      "       --group-by-input-shape --sort-by self_cpu_memory_usage\n"
      "  sudo gpuprof record -o run.gpuprof -- /usr/bin/python3 train.py\n"
      "  sudo gpuprof record -p 4242 -d 5 --with-stack --group-by-stack-n 5\n"
      "  sudo gpuprof record -p 4242 -d 10 -F 99 -o run.gpuprof && gpuprof report run.gpuprof \\\n"
      "       --folded --metric samples > run.folded\n"
      "  sudo gpuprof record -F 99 --no-ops -o py.gpuprof -- python3 script.py   # any Python\n"
      "  sudo gpuprof record -p 4242 -d 5 -F 99 --chrome-trace run.json.gz        # Perfetto/Chrome\n");
}

int run_record(RecordOptions options) {
  if ((options.pid > 0) == !options.command.empty()) {
    std::fprintf(stderr, "gpuprof: error: give either -p PID or -- COMMAND (see gpuprof record --help)\n");
    return 2;
  }
  std::string error;
  auto sort_key = parse_sort_key(options.table.sort_by, &error);
  if (!sort_key) {
    std::fprintf(stderr, "gpuprof: error: %s\n", error.c_str());
    return 2;
  }
  // Refuse now what the table would refuse after the whole recording.
  Profile promised;
  promised.memory_recorded = options.profile_memory;
  // Whether the target has the CUPTI shim is only known once it runs: a
  // CUDA time key is checked again when the table is printed.
  promised.gpu_recorded = !options.no_ops;
  if (std::string why = sort_key_unavailable(*sort_key, promised); !why.empty()) {
    std::fprintf(stderr, "gpuprof: error: %s\n", why.c_str());
    return 2;
  }
  if (options.no_ops && (options.sample_hz == 0 || options.record_shapes || options.profile_memory ||
                         options.with_stack)) {
    std::fprintf(stderr, "gpuprof: error: --no-ops records CPU samples only: it needs -F HZ and no "
                         "--record-shapes, --profile-memory or --with-stack\n");
    return 2;
  }
  auto file_mode = parse_file_mode(options.table.trace.mode, &error);
  if (!file_mode) {
    std::fprintf(stderr, "gpuprof: error: %s\n", error.c_str());
    return 2;
  }
  // Refuse a bad --time-range or --ops now, not after the recording.
  if (!options.table.trace.time_range.empty() && !parse_trace_time_range(options.table.trace.time_range, &error)) {
    std::fprintf(stderr, "gpuprof: error: %s\n", error.c_str());
    return 2;
  }
  if (!options.table.trace.ops.empty()) {
    try {
      std::regex check(options.table.trace.ops, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      std::fprintf(stderr, "gpuprof: error: --ops %s: not a regular expression (%s)\n",
                   options.table.trace.ops.c_str(), e.what());
      return 2;
    }
  }
  if (options.table.group_by_input_shape && !options.record_shapes) {
    std::fprintf(stderr, "gpuprof: error: --group-by-input-shape needs --record-shapes\n");
    return 2;
  }
  if (options.table.group_by_stack_n > 0 && !options.with_stack) {
    std::fprintf(stderr, "gpuprof: error: --group-by-stack-n needs --with-stack\n");
    return 2;
  }
  uint32_t ring_bytes = options.ring_buffer_mb << 20;
  if ((ring_bytes & (ring_bytes - 1)) != 0) {
    std::fprintf(stderr, "gpuprof: error: --ring-buffer must be a power of two (MiB)\n");
    return 2;
  }
  if (options.output_path.empty()) {
    keep_previous_default_output();
    options.output_path = kDefaultOutput;
  }
  set_libbpf_verbose(options.verbose);

  RecordConfig config;
  config.pid = options.pid;
  config.command = options.command;
  config.output_path = options.output_path;
  config.output_mode = *file_mode;
  config.duration_s = options.duration_s;
  config.ring_buffer_bytes = ring_bytes;
  config.exit_mode = options.exit_mode == "ret" ? ExitMode::ret : ExitMode::emulated;
  config.record_shapes = options.record_shapes;
  config.profile_memory = options.profile_memory;
  config.sample_hz = options.sample_hz;
  config.ops = !options.no_ops;
  config.with_stack = options.with_stack;
  config.verbose = options.verbose;
  RecordOutcome outcome = run_record_session(config);

  int status = 0;
  if (!outcome.ok) {
    std::fprintf(stderr, "gpuprof: error: %s\n", outcome.error.c_str());
    status = 1;
  }
  if (outcome.ok && !options.table.trace.output.empty()) {
    auto recording = read_recording(options.output_path, &error);
    const int traced = recording ? export_chrome_trace(*recording, options.output_path, options.table.trace) : 1;
    if (!recording) std::fprintf(stderr, "gpuprof: error: %s\n", error.c_str());
    if (traced != 0) status = traced;
  }
  // A recording that was written is reported even after a late error.
  if (!options.quiet && (outcome.ok || outcome.error.find("write") == std::string::npos)) {
    struct stat st;
    if (stat(options.output_path.c_str(), &st) == 0 && outcome.stop_reason.size()) {
      options.table.input_path = options.output_path;
      ReportOptions table = options.table;
      table.trace = {};  // written above; the table is printed either way
      if (outcome.ok && status == 0) status = run_report(table);
    }
  }
  if (outcome.target_running && outcome.stop_reason != "terminated") {
    // Launch mode, stopped by -d or Ctrl-C: like `time` or `perf record`,
    // stay until the command ends so the shell gets it back in order.
    std::fprintf(stderr, "gpuprof: waiting for %d to exit (Ctrl-C again leaves it running)\n",
                 outcome.launched_pid);
    waitpid(outcome.launched_pid, nullptr, 0);
  }
  return status;
}

}  // namespace gpuprof::cli
