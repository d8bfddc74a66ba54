#include "cli/record.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <regex>

#include "output/chrome_trace.h"
#include "cli/cycle_output.h"
#include "cli/option_checks.h"
#include "cli/profile_push.h"
#include "cli/report_reads.h"
#include "cli/trace_export.h"
#include "base/file_mode.h"
#include "record/record_file.h"
#include "collect/record_session.h"
#include "collect/shim_injection.h"
#include "record/schedule.h"
#include "base/session_loop.h"

namespace gpuprof::cli {
namespace {

constexpr const char* kDefaultOutput = "gpuprof.data";
// How long the stop waits for the cycles still to be pushed (a retried
// POST can take 10 s, then 1 s and 2 s between tries).
constexpr double kPushDeadlineS = 15;

// perf's convention, for the default name and -o alike: a previous
// recording at the output path is kept once, as PATH.old (a device or a
// pipe, such as /dev/null, is written to as it is).
bool keep_previous_output(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return true;
  const std::string old = path + ".old";
  if (rename(path.c_str(), old.c_str()) == 0) return true;
  std::fprintf(stderr, "gpuprof: error: cannot keep the previous %s as %s: %s\n", path.c_str(), old.c_str(),
               std::strerror(errno));
  return false;
}

}  // namespace

void add_record_command(CLI::App& app, RecordOptions& options) {
  CLI::App* record = app.add_subcommand("record", "Trace a PyTorch process and print its operator table");
  auto* pid = record->add_option("-p,--pid", options.pid, "attach to this running process");
  auto* command = record->add_option("command", options.command,
                                     "command to launch and trace (after --); probes are in place "
                                     "before its first operator");
  pid->excludes(command);
  auto* all = record->add_flag("-a,--all-processes", options.system_wide,
                               "system-wide: CPU samples of every process (with -F) and ops of every PyTorch "
                               "process, including those that start or load torch later (docs/system-wide.md)");
  all->excludes(pid);
  all->excludes(command);
  record->add_option("-o,--output", options.output_path,
                     "record file (default: gpuprof.data, the previous one kept as gpuprof.data.old)");
  record->add_option("-d,--duration", options.duration_s, "stop after this many seconds")
      ->check(positive_seconds());
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
      ->check(sample_rate());
  record->add_flag("--with-stack", options.with_stack,
                   "record the Python stack at every op call (torch.profiler's with_stack); report "
                   "them with --group-by-stack-n N, and in folded stacks");
  record->add_flag("--with-modules", options.with_modules,
                   "record which module call (layer1.0.conv1) each op runs in: --with-stack, and each module's "
                   "attribute name read from the target, and which forward op made each backward call's "
                   "autograd node; report them with report --modules (docs/modules.md)");
  record->add_flag("--follow-forks", options.follow_forks,
                   "also trace the ops of the processes the target forks (DataLoader workers, ...), and theirs; "
                   "without it children run untraced (and unharmed)");
  record->add_flag("--inject-cupti", options.inject_cupti,
                   "with -p: load gpuprof's CUPTI shim into the running job (ptrace; opt-in) for GPU times, "
                   "when it was not started with CUDA_INJECTION64_PATH (docs/injection.md)")
      ->needs(pid);
  record->add_flag("--no-ops", options.no_ops,
                   "with -F: samples only, no operator probes (the lowest overhead); any process, "
                   "PyTorch or not, and a launched CMD from its start");
  auto* schedule = record->add_option(
      "--schedule", options.schedule,
      "record only some steps, as torch.profiler.schedule does: skip_first=S,wait=W,warmup=U,active=A,repeat=R "
      "(active required, the rest default to 0); steps come from --step-op or --step-time; warmup steps are "
      "not recorded (torch discards them too)");
  schedule->type_name("SPEC");
  auto* step_op = record->add_option("--step-op", options.step_ops,
                                     "with --schedule: each call of this op starts a step (e.g. the optimizer's "
                                     "aten::_foreach_add_, or the model's first op); name or name.overload; "
                                     "repeatable")
                      ->type_name("NAME")
                      ->needs(schedule);
  auto* step_time = record->add_option("--step-time", options.step_time_s,
                                       "with --schedule: a step is this many seconds (from the attach)")
                        ->type_name("SECONDS")
                        ->check(CLI::Range(0.001, 86400.0))
                        ->needs(schedule);
  step_op->excludes(step_time);
  record->add_option("--on-cycle", options.on_cycle,
                     "with --schedule: write each cycle of recorded steps to its own file, as on_trace_ready does; "
                     "TEMPLATE holds {cycle}; its extension picks the format: .gpuprof (record file), .txt "
                     "(table), .folded, .json/.json.gz (trace). Without -o no other file is written")
      ->type_name("TEMPLATE")
      ->needs(schedule);
  auto* push = record->add_option("--push", options.push_url,
                                  "send each cycle's profile (pprof) to this Pyroscope server's /ingest "
                                  "(http://host:4040), with --schedule's cycles or --push-every's; with -a, one per process and "
                                  "cycle; see docs/fleet.md")
                   ->type_name("URL");
  record->add_option("--push-every", options.push_every_s,
                     "with --push and no --schedule: a profile every SECONDS of recording (the only cycles -a "
                     "takes)")
      ->type_name("SECONDS")
      ->check(CLI::Range(1.0, 86400.0))
      ->needs(push)
      ->excludes(schedule);
  record->add_option("--push-app", options.push_app,
                     "with --push: the application name (default gpuprof.COMM); the labels pid, comm, hostname "
                     "and the job's rank are added")
      ->type_name("NAME")
      ->needs(push);
  auto* rotate = record->add_option("--rotate", options.rotate,
                                    "start a new record file (OUTPUT.1, OUTPUT.2, ...) every SIZE bytes (100M, "
                                    "2G) or SECONDS (3600, or 30s, 10m, 1h)")
                     ->type_name("SIZE|SECONDS");
  record->add_option("--keep", options.keep, "with --rotate: keep only the last N files (bounded disk)")
      ->check(CLI::Range(1u, 1000000u))
      ->needs(rotate);
  record->add_flag("-q,--quiet", options.quiet,
                   "no progress line while recording (shown when stderr is a terminal) and no table when "
                   "recording stops");
  record->add_flag("-v,--verbose", options.verbose, "print probe and libbpf details");
  add_table_options(*record, options.table);
  add_trace_export_options(*record, options.table.trace);
  record->footer(
      "Stops on Ctrl-C, SIGTERM, -d SECONDS, or the target's exit; then writes the record file\n"
      "and prints the table (same columns as torch.profiler's key_averages().table()).\n"
      "CUDA kernel launches are traced with the ops once the target maps libcudart; GPU times\n"
      "come from gpuprof's CUPTI shim (libgpuprof_cupti.so next to gpuprof), which record -- CMD\n"
      "injects (CUDA_INJECTION64_PATH); start a job to attach to with that variable set\n"
      "(docs/cuda.md), or load the shim into it with --inject-cupti (ptrace: docs/injection.md).\n"
      "Read them with: gpuprof report FILE --launches | --kernels | --gpu.\n"
      "Needs root; -p also works with the capabilities CAP_BPF and CAP_PERFMON on the binary,\n"
      "for the invoking user's own processes (docs/privileges.md). -- CMD and -a watch library\n"
      "loads through tracefs, which gpuprof mounts at /sys/kernel/tracing if nothing has.\n\n"
      "Examples:\n"
      "  sudo gpuprof record -p 4242                      # attach; Ctrl-C stops\n"
      "  sudo gpuprof record -p 4242 -d 10 --sort-by self_cpu_time_total --row-limit 10\n"
      "  sudo gpuprof record -p 4242 -d 5 --record-shapes --profile-memory \\\n"
      "       --group-by-input-shape --sort-by self_cpu_memory_usage\n"
      "  sudo gpuprof record -o run.gpuprof -- /usr/bin/python3 train.py\n"
      "  sudo gpuprof record -p 4242 -d 5 --with-stack --group-by-stack-n 5\n"
      "  sudo gpuprof record -p 4242 -d 10 -F 99 -o run.gpuprof\n"
      "  sudo gpuprof record -p 4242 -d 10 --inject-cupti   # GPU times for a job started without the shim\n"
      "  gpuprof report run.gpuprof --folded --metric samples > run.folded\n"
      "  sudo gpuprof record -F 99 --no-ops -o py.gpuprof -- python3 script.py   # any Python\n"
      "  sudo gpuprof record -p 4242 -d 5 -F 99 --chrome-trace run.json.gz        # Perfetto/Chrome\n"
      "  sudo gpuprof record -p 4242 --schedule wait=5,warmup=1,active=3,repeat=2 \\  # on_trace_ready\n"
      "       --step-op aten::_foreach_add_ --on-cycle cycle_{cycle}.json.gz\n"
      "  sudo gpuprof record -p 4242 --schedule wait=9,active=1 --step-time 1 \\\n"
      "       --on-cycle top_{cycle}.txt\n"
      "  sudo gpuprof record -p 4242 -o long.gpuprof --rotate 1G --keep 4         # hours, bounded disk\n"
      "  sudo gpuprof record -a -F 99 -d 10 -o all.gpuprof       # every process; a table per PyTorch process\n"
      "  gpuprof report all.gpuprof --comm python3 --folded --metric samples\n");
}

int run_record(RecordOptions options) {
  if (!options.system_wide && (options.pid > 0) == !options.command.empty()) {
    std::fprintf(stderr, "gpuprof: error: give -p PID, -- COMMAND or -a (see gpuprof record --help)\n");
    return 2;
  }
  warn_if_high_sample_rate(options.sample_hz);
  if (options.with_modules && options.system_wide) {
    std::fprintf(stderr, "gpuprof: error: -a (system-wide) does not take --with-modules: module names are read "
                         "from one process's memory and torch's module labels repeat across processes; record "
                         "one process with -p for it (-a --with-stack records every process's Python stacks)\n");
    return 2;
  }
  if (options.with_modules && options.no_ops) {
    std::fprintf(stderr, "gpuprof: error: --with-modules finds each op's module: it needs op tracing (no --no-ops)\n");
    return 2;
  }
  if (options.inject_cupti && options.no_ops) {
    std::fprintf(stderr, "gpuprof: error: --inject-cupti is for GPU times, which are joined to the launches of "
                         "traced ops: it needs op tracing (no --no-ops)\n");
    return 2;
  }
  // The modules come from the op entries' Python stacks.
  options.with_stack = options.with_stack || options.with_modules;
  if (options.system_wide) {
    // What needs one target's layout or schedule is refused, not ignored.
    std::string refused;
    for (auto [set, name] : {std::pair{options.record_shapes, "--record-shapes"},
                             std::pair{options.profile_memory, "--profile-memory"},
                             std::pair{options.follow_forks, "--follow-forks (-a follows every process anyway)"},
                             std::pair{!options.schedule.empty(), "--schedule"},
                             std::pair{!options.on_cycle.empty(), "--on-cycle"},
                             std::pair{!options.rotate.empty(), "--rotate"}})
      if (set) refused += (refused.empty() ? "" : ", ") + std::string(name);
    if (!refused.empty()) {
      std::fprintf(stderr, "gpuprof: error: -a (system-wide) does not take %s: record one process with -p "
                           "for those\n", refused.c_str());
      return 2;
    }
  }
  const auto sort_key = parse_sort_key(options.table.sort_by);
  if (!sort_key) {
    std::fprintf(stderr, "gpuprof: error: %s\n", sort_key.error().c_str());
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
  const auto file_mode = parse_file_mode(options.table.trace.mode);
  if (!file_mode) {
    std::fprintf(stderr, "gpuprof: error: %s\n", file_mode.error().c_str());
    return 2;
  }
  // Refuse a bad --time-range or --ops now, not after the recording.
  if (!options.table.trace.time_range.empty()) {
    if (const auto range = parse_trace_time_range(options.table.trace.time_range); !range) {
      std::fprintf(stderr, "gpuprof: error: %s\n", range.error().c_str());
      return 2;
    }
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
  RecordConfig config;
  std::optional<CycleFormat> cycle_format;
  if (!options.push_url.empty()) {
    if (!options.push_url.starts_with("http://") && !options.push_url.starts_with("https://")) {
      std::fprintf(stderr, "gpuprof: error: --push %s: give the server's http:// or https:// URL\n",
                   options.push_url.c_str());
      return 2;
    }
    if (options.system_wide && options.push_every_s <= 0) {
      std::fprintf(stderr, "gpuprof: error: -a --push sends a profile per process and cycle: give --push-every "
                           "SECONDS (its cycles)\n");
      return 2;
    }
    if (options.schedule.empty() && options.push_every_s <= 0) {
      std::fprintf(stderr, "gpuprof: error: --push sends a profile per cycle: give --schedule (its cycles) or "
                           "--push-every SECONDS\n");
      return 2;
    }
    if (!options.on_cycle.empty()) {
      std::fprintf(stderr, "gpuprof: error: --push and --on-cycle each take the cycles: give one\n");
      return 2;
    }
    if (options.push_every_s > 0) {  // every step a cycle of its own, every step recorded
      options.schedule = "wait=0,warmup=0,active=1,repeat=0";
      options.step_time_s = options.push_every_s;
    }
  }
  if (!options.schedule.empty()) {
    auto schedule = parse_schedule(options.schedule);
    if (!schedule) {
      std::fprintf(stderr, "gpuprof: error: %s\n", schedule.error().c_str());
      return 2;
    }
    if (options.step_ops.empty() == (options.step_time_s <= 0)) {
      std::fprintf(stderr, "gpuprof: error: --schedule needs what a step is: --step-op NAME or --step-time SECONDS\n");
      return 2;
    }
    // -a --push-every gates nothing (its windows only cut the files): CPU
    // samples alone are pushed too.
    if (options.no_ops && !options.system_wide) {
      std::fprintf(stderr, "gpuprof: error: --schedule gates op events: it cannot go with --no-ops\n");
      return 2;
    }
    config.schedule = *schedule;
    config.schedule.mode = options.step_ops.empty() ? GP_SCHEDULE_BY_TIME : GP_SCHEDULE_BY_OP;
    config.schedule.step_ns = static_cast<uint64_t>(options.step_time_s * 1e9);
    config.step_ops = options.step_ops;
  }
  if (!options.on_cycle.empty()) {
    const auto format = parse_cycle_template(options.on_cycle);
    if (!format) {
      std::fprintf(stderr, "gpuprof: error: %s\n", format.error().c_str());
      return 2;
    }
    cycle_format = *format;
  }
  if (!options.rotate.empty()) {
    if (const auto rotation = parse_rotation(options.rotate, &config.outputs.rotate_bytes, &config.outputs.rotate_ns);
        !rotation) {
      std::fprintf(stderr, "gpuprof: error: %s\n", rotation.error().c_str());
      return 2;
    }
  }
  config.outputs.keep = options.keep;
  if (!options.rotate.empty() && !options.table.trace.output.empty()) {
    std::fprintf(stderr, "gpuprof: error: --rotate splits the recording: make traces of its files with "
                         "gpuprof report FILE.N --chrome-trace OUT\n");
    return 2;
  }
  const bool main_file = options.on_cycle.empty() || !options.output_path.empty();
  if (!main_file && (!options.table.trace.output.empty() || !options.rotate.empty())) {
    std::fprintf(stderr, "gpuprof: error: --on-cycle without -o writes no whole record: give -o FILE for "
                         "--chrome-trace or --rotate\n");
    return 2;
  }
  if (main_file && options.output_path.empty()) options.output_path = kDefaultOutput;
  // A rotating recording writes OUTPUT.1, OUTPUT.2, ... and never OUTPUT.
  if (main_file && options.rotate.empty() && !keep_previous_output(options.output_path)) return 1;
  std::shared_ptr<ProfilePusher> pusher;
  if (!options.push_url.empty()) {
    pusher = std::make_shared<ProfilePusher>(PushTarget{options.push_url, options.push_app});
    if (const size_t removed = remove_files_of_killed_pushers())
      std::fprintf(stderr, "gpuprof: removed %zu cycle file%s that a killed gpuprof left in %s\n", removed,
                   removed == 1 ? "" : "s", std::filesystem::temp_directory_path().c_str());
    // Each cycle's record file, in the temporary folder until it is sent.
    const std::string folder = push_cycle_prefix(getpid());
    config.outputs.cycle_path = [folder](int64_t cycle) { return folder + std::to_string(cycle) + ".gpuprof"; };
    config.outputs.cycle_done = [pusher](const std::string& record_path, int64_t, int64_t, int64_t) {
      pusher->push(record_path);
    };
  }
  if (cycle_format) {
    const std::string tmpl = options.on_cycle;
    const CycleFormat format = *cycle_format;
    const ReportOptions table = options.table;
    const mode_t mode = *file_mode;
    config.outputs.cycle_path = [tmpl, format](int64_t cycle) {
      return cycle_record_path(cycle_output_path(tmpl, cycle), format);
    };
    config.outputs.cycle_done = [tmpl, format, table, mode](const std::string& record_path, int64_t cycle,
                                                            int64_t first_step, int64_t last_step) {
      const std::string out = cycle_output_path(tmpl, cycle);
      const auto written = write_cycle_output(record_path, out, format, table, mode);
      if (written)
        std::fprintf(stderr, "gpuprof: cycle %lld (steps %lld-%lld): wrote %s\n", static_cast<long long>(cycle),
                     static_cast<long long>(first_step), static_cast<long long>(last_step), out.c_str());
      else
        std::fprintf(stderr, "gpuprof: error: cycle %lld: %s\n", static_cast<long long>(cycle),
                     written.error().c_str());
    };
  }

  config.pid = options.pid;
  config.system_wide = options.system_wide;
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
  config.with_modules = options.with_modules;
  config.follow_forks = options.follow_forks;
  config.verbose = options.verbose;
  config.progress = !options.quiet;  // drawn only when stderr is a terminal
  int status = 0;
  RecordOutcome outcome;
  {
    // Held from before the session until the trace and the table are out:
    // the session takes SIGINT, SIGTERM and SIGHUP as its stop signals; one
    // that comes after the recording stopped (a Ctrl-C as the target exits)
    // asked for what is done and must not cut them short, nor kill gpuprof
    // the moment the session gives the signals back: drained here.
    SignalGuard late_stops({SIGINT, SIGTERM, SIGHUP});
    if (options.inject_cupti) {
      if (auto injected = inject_cupti_shim_into(options.pid); !injected) {
        std::fprintf(stderr, "gpuprof: error: %s\n", injected.error().c_str());
        return 1;
      }
    }
    outcome = run_record_session(config);
    if (pusher) std::fprintf(stderr, "gpuprof: %s\n", pusher->finish(kPushDeadlineS).c_str());
    if (!outcome.ok) {
      std::fprintf(stderr, "gpuprof: error: %s\n", outcome.error.c_str());
      status = 1;
    }
    if (outcome.ok && !options.table.trace.output.empty()) {
      auto recording = read_recording_for_output(options.output_path, false);
      const int traced = recording ? export_chrome_trace(*recording, options.output_path, options.table.trace) : 1;
      if (traced != 0) status = traced;
    }
    // A recording that was written is reported even after a late error.
    if (!options.quiet && !options.output_path.empty() && options.rotate.empty() &&
        (outcome.ok || outcome.error.find("write") == std::string::npos)) {
      struct stat st;
      if (stat(options.output_path.c_str(), &st) == 0 && outcome.stop_reason.size()) {
        options.table.input_path = options.output_path;
        ReportOptions table = options.table;
        table.trace = {};  // written above; the table is printed either way
        table.recorder_said_its_counts = true;
        if (outcome.ok && status == 0) status = run_report(table);
      }
    }
  }
  if (outcome.target_running && outcome.stop_reason != "terminated") {
    // Launch mode, stopped by -d or Ctrl-C: like `time` or `perf record`,
    // stay until the command ends so the shell gets it back in order.
    std::fprintf(stderr, "gpuprof: waiting for %d to exit (Ctrl-C again leaves it running)\n",
                 outcome.launched_pid);
    // That Ctrl-C takes the default action even when gpuprof was started
    // with SIGINT ignored (a script's `gpuprof record -- CMD &`): the first
    // one was read all the same, through the session's signalfd. CMD,
    // started long before, keeps what it inherited.
    signal(SIGINT, SIG_DFL);
    waitpid(outcome.launched_pid, nullptr, 0);
  }
  return status;
}

}  // namespace gpuprof::cli
