// cli/top.cpp: gpuprof top: the record session's probes, read live into a
// table per interval, drawn full-screen (or printed per refresh, --batch).
#include "cli/top.h"

#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "cli/option_checks.h"
#include "cli/system_top.h"
#include "cli/top_support.h"
#include "live/live_gpu_join.h"
#include "live/live_module_tree.h"
#include "live/live_op_table.h"
#include "live/live_sample_table.h"
#include "analyze/op_timeline.h"
#include "collect/record_session.h"
#include "base/terminal.h"
#include "live/top_view.h"

namespace gpuprof::cli {
namespace {

uint64_t clock_now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Top is the session's live consumer: it keeps the op and sample tables
// that each refresh shows.
class Top final : public LiveConsumer {
 public:
  explicit Top(const TopOptions& options) : options_(options), clock_ticks_(sysconf(_SC_CLK_TCK)) {
    view_.sort = *parse_top_sort(options.sort_by);
    view_.python_lines = options.python_lines;
    view_.modules = options.modules;
    view_.modules_key = options.with_modules;
    view_.module_events = options.module_events;
    if (options.with_modules) modules_ = std::make_unique<LiveModuleTree>();
  }

  int run() {
    std::optional<StderrCapture> capture;
    screen_ = enter_screen(options_.batch, capture);
    display_.emplace(screen_.get(), options_.iterations);
    RecordConfig config;
    config.pid = options_.pid;
    config.command = options_.command;
    config.output_path = kLiveOnly;  // nothing kept on disk: the view is live
    config.stop_key = options_.batch ? "Ctrl-C" : "q";
    config.ring_buffer_bytes = options_.ring_buffer_mb << 20;
    config.calibrate_through_recording = false;  // the table is gone when top stops
    config.sample_hz = options_.sample_hz;
    // The module view reads each op entry's Python stack and the modules'
    // attribute names, as record --with-modules.
    config.with_stack = config.with_modules = options_.with_modules;
    config.live = this;
    const std::optional<RecordOutcome> ended = run_top_session(config, screen_.get(), capture);
    if (!ended) return 1;
    const RecordOutcome& outcome = *ended;
    // The target exited, or the user stopped: a last look at everything.
    if (table_) {
      if (modules_) modules_->finish();
      const std::vector<OpCall> calls = timeline_.take_calls();
      table_->add(calls);
      for (const auto& [op_id, ns] : gpu_join_.calls(calls)) table_->add_gpu_time(op_id, ns);
      if (!options_.batch || display_->refreshes() == 0 || outcome.stop_reason == "target exited") {
        // The summary covers the whole run, to the stop (not to the last
        // refresh: a run shorter than one interval had none).
        timespec now{};
        clock_gettime(CLOCK_MONOTONIC, &now);
        last_tick_ns_ = std::max<uint64_t>(start_ns_, static_cast<uint64_t>(now.tv_sec) * 1'000'000'000ull + now.tv_nsec);
        table_->roll(last_tick_ns_);
        samples_.roll(last_tick_ns_);
        TopViewOptions summary = view_;
        summary.since_start = true;
        summary.height = 0;
        summary.help_line = false;
        summary.width = printed_table_width();
        TopStatus status = status_now(lost_);
        status.state = "stopped (" + outcome.stop_reason + ")";
        std::fputs(render(summary, status, table_->since_start(), samples_.since_start(), modules_since_start())
                       .c_str(),
                   stdout);
      }
    }
    return 0;
  }

  // LiveConsumer: what the session records, into the live tables.
  void begin(const ProcessInfo& process, const std::vector<OpInfo>& ops, uint64_t start_ns) override {
    ops_ = ops;
    table_.emplace(ops_);
    table_->begin(start_ns);
    samples_.begin(start_ns);
    pid_ = process.pid;
    comm_ = process.comm;
    start_ns_ = last_roll_ns_ = start_ns;
    cpu_ = read_process_cpu(pid_);
    if (modules_) modules_->begin(ops);
  }
  // Rows named at run time (record_function ranges, the engine's rows):
  // the table reads ops_ by reference.
  void ops_found(uint32_t first_id, const std::vector<OpInfo>& ops) override {
    ops_.resize(first_id);
    ops_.insert(ops_.end(), ops.begin(), ops.end());
    if (modules_) modules_->ops_found(first_id, ops);
  }
  void op_event(const gp_event& event, uint64_t index) override {
    timeline_.add(event, index);
    if (modules_) modules_->op_event(event, index);
  }
  // Calibrated before the target's probes go in, so before any op event.
  void probe_costs(const ProbeCosts& costs) override {
    if (options_.raw_times) return;
    costs_ = costs;
    timeline_ = TimelineBuilder(&*costs_);
    if (modules_) modules_->probe_costs(costs);
  }
  void gpu_correlation(const GpuCorrelation& launch) override {
    gpu_ = true;
    gpu_join_.launch(launch, clock_now_ns());
  }
  void gpu_activity(const GpuActivity& activity) override {
    gpu_ = true;
    if (!table_) return;
    table_->add_gpu_activity(activity);
    if (auto credit = gpu_join_.activity(activity, clock_now_ns())) table_->add_gpu_time(credit->first, credit->second);
  }
  void sample_frame(uint32_t id, const std::string& name) override {
    samples_.frame(id, name);
    if (modules_) modules_->frame(id, name);
  }
  void sample_stack(uint32_t id, const std::vector<uint32_t>& frame_ids) override {
    if (modules_) modules_->stack(id, frame_ids);
  }
  void entry_stack(uint64_t event_index, uint32_t stack_id) override {
    if (modules_) modules_->entry_stack(event_index, stack_id);
  }
  void backward_stack(uint64_t event_index, uint32_t stack_id) override {
    if (modules_) modules_->backward_stack(event_index, stack_id);
  }
  void module_names(const std::vector<ModuleName>& names) override {
    if (modules_) modules_->module_names(names);
  }
  void sample(const CpuSample& sample, const std::vector<uint32_t>& python_stack) override {
    samples_.add(sample, python_stack);
  }

 private:
  TopStatus status_now(uint64_t lost) const {
    TopStatus status;
    status.pid = pid_;
    status.comm = comm_;
    status.threads = cpu_.threads;
    status.cpu_percent = cpu_percent_;
    status.elapsed_s = last_tick_ns_ > start_ns_ ? (last_tick_ns_ - start_ns_) / 1e9 : 0;
    status.events_lost = lost;
    status.gpu = gpu_;
    status.times = times_status(costs_);
    return status;
  }

  // The op table, or (tab) the Python lines by samples.
  std::string render(const TopViewOptions& view, const TopStatus& status, const LiveInterval& ops,
                     const LiveLines& lines, const ModuleTree& modules) const {
    if (view.modules && modules_) return render_top_modules(modules, ops, status, view);
    return view.python_lines ? render_top_lines(lines, ops.calls, status, view, options_.sample_hz)
                             : render_top(ops, status, view);
  }

  // Keys of the interactive screen. Returns false to quit.
  bool handle_keys() {
    for (char key : screen_->read_keys()) {
      if (!prompt_.empty()) {  // typing a filter after '/'
        if (key == '\n' || key == '\r') {
          view_.filter = prompt_.substr(1);
          prompt_.clear();
        } else if (key == 27) {
          prompt_.clear();
        } else if (key == 127 || key == 8) {
          if (prompt_.size() > 1) prompt_.pop_back();
        } else if (key >= 32 && key < 127) {
          prompt_ += key;
        }
        display_->changed();
        continue;
      }
      switch (key) {
        case 'q':
        case 'Q': return false;
        case 's': view_.sort = next_top_sort(view_.sort, gpu_); break;
        case 'p': view_.paused = !view_.paused; break;
        case 't': view_.since_start = !view_.since_start; break;
        case '/': prompt_ = "/"; break;
        case '\t': view_.python_lines = !view_.python_lines; break;
        case 'm':
          if (modules_) view_.modules = !view_.modules;
          break;
        case 'e':
          if (modules_) view_.module_events = !view_.module_events;
          break;
        default:
          if (auto sort = top_sort_of_column(key - '0', gpu_)) view_.sort = *sort;
          break;
      }
      display_->changed();
    }
    return true;
  }

  bool tick(uint64_t now_ns, uint64_t lost) override {
    if (screen_ && !handle_keys()) return false;
    if (!table_) {  // not attached yet (launch mode: waiting for libtorch_cpu)
      display_->draw_plain("gpuprof top - waiting for the target to load libtorch_cpu (q quits)\n");
      return true;
    }
    lost_ = lost;
    const std::vector<OpCall> calls = timeline_.take_calls();
    table_->add(calls);
    for (const auto& [op_id, ns] : gpu_join_.calls(calls)) table_->add_gpu_time(op_id, ns);
    const bool due = now_ns - last_roll_ns_ >= static_cast<uint64_t>(options_.interval_s * 1e9);
    if (due) {
      const ProcessCpu cpu = read_process_cpu(pid_);
      if (cpu.ok && cpu_.ok && clock_ticks_ > 0)
        cpu_percent_ = 100.0 * (cpu.ticks - cpu_.ticks) / clock_ticks_ / ((now_ns - last_roll_ns_) / 1e9);
      if (cpu.ok) cpu_ = cpu;
      last_tick_ns_ = now_ns;
      gpu_join_.expire(now_ns);
      LiveInterval interval = table_->roll(now_ns);
      LiveLines lines = samples_.roll(now_ns);
      if (modules_) modules_->roll();
      last_roll_ns_ = now_ns;
      if (!view_.paused) {
        shown_ = std::move(interval);
        shown_lines_ = std::move(lines);
        if (modules_) shown_modules_ = modules_->interval();
      }
      if (!display_->refreshed([&](size_t width) {
            TopViewOptions batch = view_;
            batch.height = 0;
            batch.width = width;
            return render_view(batch, lost);
          }))
        return false;
    }
    display_->draw([&](size_t columns, size_t rows) {
      TopViewOptions screen = view_;
      screen.width = columns;
      screen.height = rows;
      screen.help_line = true;
      screen.prompt = prompt_;
      return render_view(screen, lost);
    });
    return true;
  }

  // The view as it stands: this interval's, or since the start (t).
  std::string render_view(const TopViewOptions& view, uint64_t lost) const {
    return view_.since_start ? render(view, status_now(lost), table_->since_start(), samples_.since_start(),
                                      modules_since_start())
                             : render(view, status_now(lost), shown_, shown_lines_, shown_modules_);
  }

  ModuleTree modules_since_start() const { return modules_ ? modules_->since_start() : ModuleTree{}; }

  const TopOptions& options_;
  const long clock_ticks_;
  std::unique_ptr<FullScreen> screen_;
  std::optional<TopDisplay> display_;  // from run on
  std::vector<OpInfo> ops_;
  std::optional<LiveOpTable> table_;
  std::optional<ProbeCosts> costs_;  // op times are compensated by them (op_timeline.h)
  TimelineBuilder timeline_;
  TopViewOptions view_;
  LiveSampleTable samples_;
  LiveGpuJoin gpu_join_;
  std::unique_ptr<LiveModuleTree> modules_;  // top --with-modules
  ModuleTree shown_modules_;
  bool gpu_ = false;  // GPU records came: GPU figures and the Self CUDA column
  LiveInterval shown_;
  LiveLines shown_lines_;
  std::string prompt_;
  int pid_ = 0;
  std::string comm_;
  uint64_t start_ns_ = 0, last_roll_ns_ = 0, last_tick_ns_ = 0, lost_ = 0;
  ProcessCpu cpu_;
  double cpu_percent_ = -1;
};

}  // namespace

void add_top_command(CLI::App& app, TopOptions& options) {
  CLI::App* top = app.add_subcommand("top", "A live view of a running job's operators, refreshed every second");
  auto* pid = top->add_option("-p,--pid", options.pid, "watch this running process");
  auto* command = top->add_option("command", options.command, "command to launch and watch (after --)");
  pid->excludes(command);
  auto* all = top->add_flag("-a,--all-processes", options.system_wide,
                            "every PyTorch process on the machine: a process list (pid, command, CPU %, ops/s, "
                            "kernel launches/s); Enter shows one's op table (docs/system-wide.md)");
  all->excludes(pid);
  all->excludes(command);
  top->add_option("-i,--interval", options.interval_s, "seconds between refreshes")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  top->add_flag("-b,--batch", options.batch,
                "print one table per refresh instead of the full-screen view (also when stdout is not a "
                "terminal), like top -b");
  top->add_option("-n,--iterations", options.iterations, "stop after this many refreshes")
      ->check(CLI::NonNegativeNumber);
  top->add_option("--sort-by", options.sort_by,
                  "self_cpu_time_total, cpu_time_total, cpu_time, self_cuda_time_total (with the CUPTI shim) "
                  "or count (s cycles them)")
      ->capture_default_str();
  top->add_flag("--raw-times", options.raw_times,
                "op times as the probes stamped them, the probes' own time included (default: that time, "
                "calibrated at attach, is taken out; docs/overhead.md)");
  top->add_option("--ring-buffer", options.ring_buffer_mb, "probe ring buffer size in MiB (a power of two)")
      ->capture_default_str();
  top->add_option("-F,--freq", options.sample_hz,
                  "also sample the target's CPU at HZ for the Python lines view (tab): where its CPU time "
                  "goes by innermost Python frame")
      ->check(sample_rate());
  top->add_flag("--lines", options.python_lines, "start on the Python lines view (with --batch: print it)");
  auto* with_modules = top->add_flag(
      "--with-modules", options.with_modules,
      "read each op entry's Python stack and the modules' attribute names, as record --with-modules, for the "
      "module view (m): torchprof's layer table, live (docs/modules.md)");
  top->add_flag("--modules", options.modules, "start on the module view (with --batch: print it)")
      ->needs(with_modules);
  top->add_flag("--show-events", options.module_events,
                "the module view lists each module's own ops under it, as report --modules --show-events (e)")
      ->needs(with_modules);
  top->footer(
      "Keys: q quit, s next sort key, 2-6 sort by that column, / filter by name (Enter applies,\n"
      "Esc cancels), t last interval / since start, p pause the display, tab the Python lines\n"
      "view (with -F HZ), m the module view (with --with-modules), e its ops under each module.\n"
      "The target exiting ends top with a summary since the start. Same probes as record\n"
      "(same overhead); nothing is written to disk.\n\n"
      "Examples:\n"
      "  sudo gpuprof top -p 4242\n"
      "  sudo gpuprof top -p 4242 -b -n 5 --interval 2 > top.log\n"
      "  sudo gpuprof top -- /usr/bin/python3 train.py\n"
      "  sudo gpuprof top -p 4242 -F 99                  # tab: the hottest Python lines\n"
      "  sudo gpuprof top -p 4242 --with-modules         # m: the model's layers, live\n"
      "  sudo gpuprof top -a                             # every PyTorch process; Enter drills in\n"
      "  sudo gpuprof top -a -F 99 -b -n 3               # with CPU % of the sampled non-torch processes\n");
}

int run_top(const TopOptions& options) {
  if (!options.system_wide && (options.pid > 0) == !options.command.empty()) {
    std::fprintf(stderr, "gpuprof: error: give -p PID, -- COMMAND or -a (see gpuprof top --help)\n");
    return 2;
  }
  warn_if_high_sample_rate(options.sample_hz);
  if (options.system_wide && options.with_modules) {
    std::fprintf(stderr, "gpuprof: error: --with-modules shows one process's modules: use top -p PID --with-modules\n");
    return 2;
  }
  if (options.python_lines && options.modules) {
    std::fprintf(stderr, "gpuprof: error: --lines and --modules each start on one view: give one\n");
    return 2;
  }
  if (options.system_wide && options.python_lines) {
    std::fprintf(stderr, "gpuprof: error: --lines shows one process's Python lines: use top -p PID -F HZ --lines\n");
    return 2;
  }
  if (!parse_top_sort(options.sort_by)) {
    std::fprintf(stderr,
                 "gpuprof: error: unknown sort key '%s'; top sorts by self_cpu_time_total, cpu_time_total, "
                 "cpu_time, self_cuda_time_total or count\n",
                 options.sort_by.c_str());
    return 2;
  }
  const uint32_t ring_bytes = options.ring_buffer_mb << 20;
  if (ring_bytes == 0 || (ring_bytes & (ring_bytes - 1)) != 0) {
    std::fprintf(stderr, "gpuprof: error: --ring-buffer must be a power of two (MiB)\n");
    return 2;
  }
  return options.system_wide ? run_system_top(options) : Top(options).run();
}

}  // namespace gpuprof::cli
