// cli/system_top.cpp: gpuprof top -a (cli/system_top.h).
#include "cli/system_top.h"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

#include "cli/top_support.h"
#include "live/live_op_table.h"
#include "analyze/op_timeline.h"
#include "collect/record_session.h"
#include "base/terminal.h"
#include "live/top_view.h"

namespace gpuprof::cli {
namespace {

// A command line as one row: its control characters (a newline in an
// argument) shown as spaces, so that every process takes one line.
std::string one_line(std::string text) {
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return text;
}

// One process, as top -a follows it.
struct Watched {
  ProcessInfo info;
  std::unique_ptr<LiveOpTable> table;  // once it is traced
  ProcessCpu cpu;
  double cpu_percent = -1;
  uint64_t calls = 0, launches = 0;            // in the current interval
  double ops_per_s = 0, launches_per_s = 0;    // over the last one
  bool launch_seen = false;
  LiveInterval shown;
};

// SystemTop is the session's live consumer: it keeps a table per process.
class SystemTop final : public LiveConsumer {
 public:
  explicit SystemTop(const TopOptions& options) : options_(options), clock_ticks_(sysconf(_SC_CLK_TCK)) {
    view_.sort = *parse_top_sort(options.sort_by);
  }

  int run() {
    std::optional<StderrCapture> capture;
    screen_ = enter_screen(options_.batch, capture);
    display_.emplace(screen_.get(), options_.iterations);
    RecordConfig config;
    config.system_wide = true;
    config.output_path = kLiveOnly;  // nothing kept on disk: the view is live
    config.stop_key = options_.batch ? "Ctrl-C" : "q";
    config.ring_buffer_bytes = options_.ring_buffer_mb << 20;
    config.sample_hz = options_.sample_hz;
    config.calibrate_through_recording = false;  // the table is gone when top stops
    config.live = this;
    return run_top_session(config, screen_.get(), capture) ? 0 : 1;
  }

  // LiveConsumer: what the session records, into each process's table.
  void begin(const ProcessInfo&, const std::vector<OpInfo>&, uint64_t start_ns) override {
    start_ns_ = last_roll_ns_ = start_ns;
  }
  void ops_found(uint32_t first_id, const std::vector<OpInfo>& ops) override {
    ops_.resize(first_id);
    ops_.insert(ops_.end(), ops.begin(), ops.end());
  }
  void process_seen(const ProcessInfo& info) override {
    Watched& w = processes_[info.pid];
    w.info = info;
    if (!info.libtorch_path.empty() && !w.table) {
      w.table = std::make_unique<LiveOpTable>(ops_);
      w.table->begin(last_roll_ns_);
    }
    if (!w.cpu.ok) w.cpu = read_process_cpu(info.pid);
  }
  void thread_seen(uint32_t tid, uint32_t pid) override { pid_of_tid_[tid] = pid; }
  void op_event(const gp_event& event, uint64_t index) override { timeline_.add(event, index); }
  // Calibrated before the first probes go in, so before any op event;
  // handed again with more op sites as libtorch files are found (the
  // timeline reads costs_ by address: assigned in place).
  void probe_costs(const ProbeCosts& costs) override {
    if (options_.raw_times) return;
    const bool first = !costs_;
    costs_ = costs;
    if (first) timeline_ = TimelineBuilder(&*costs_);
  }
  void launch(const CudaLaunch&, uint32_t pid) override {
    Watched& w = processes_[static_cast<int>(pid)];
    w.launches++;
    w.launch_seen = true;
  }

 private:
  void route_calls() {
    for (const OpCall& call : timeline_.take_calls()) {
      auto pid = pid_of_tid_.find(call.tid);
      if (pid == pid_of_tid_.end()) continue;
      auto w = processes_.find(static_cast<int>(pid->second));
      if (w == processes_.end() || !w->second.table) continue;
      w->second.table->add({call});
      w->second.calls++;
    }
  }

  std::vector<TopProcessRow> rows() const {
    std::vector<TopProcessRow> out;
    for (const auto& [pid, w] : processes_) {
      TopProcessRow r;
      r.pid = pid;
      r.comm = w.info.comm;
      r.cmdline = one_line(w.info.cmdline);
      r.cpu_percent = w.cpu_percent;
      r.ops_per_s = w.ops_per_s;
      r.launches_per_s = w.launches_per_s;
      r.traced = w.table != nullptr;
      r.launches = w.launch_seen;
      out.push_back(std::move(r));
    }
    return sort_top_processes(std::move(out));
  }

  // Keys; false to quit.
  bool handle_keys() {
    const std::string keys = screen_->read_keys();
    for (size_t i = 0; i < keys.size(); i++) {
      const char key = keys[i];
      // An arrow key: ESC [ A (or ESC O A in the keypad's application mode).
      if (key == 27 && i + 2 < keys.size() && (keys[i + 1] == '[' || keys[i + 1] == 'O')) {
        move_selection(keys[i + 2] == 'A' ? -1 : keys[i + 2] == 'B' ? 1 : 0);
        i += 2;
      } else if (key == 'q' || key == 'Q') {
        return false;
      } else if (key == 'k') {
        move_selection(-1);
      } else if (key == 'j') {
        move_selection(1);
      } else if ((key == '\n' || key == '\r') && !drilled_) {
        const auto sorted = rows();
        const size_t at = selected_index(sorted);
        if (at < sorted.size() && sorted[at].traced) drilled_ = sorted[at].pid;
      } else if ((key == 27 || key == 127 || key == 8 || key == 'b') && drilled_) {
        drilled_.reset();
      } else if (key == 's') {
        view_.sort = next_top_sort(view_.sort, false);
      } else if (key == 't') {
        view_.since_start = !view_.since_start;
      } else if (key == 'p') {
        view_.paused = !view_.paused;
      } else if (drilled_ && key >= '1' && key <= '9') {
        if (auto sort = top_sort_of_column(key - '0', false)) view_.sort = *sort;
      }
      display_->changed();
    }
    return true;
  }

  // The selection follows its process as the list reorders each refresh
  // (the first row when it has none, or its process is gone).
  size_t selected_index(const std::vector<TopProcessRow>& sorted) const {
    for (size_t i = 0; i < sorted.size(); i++)
      if (selected_pid_ && sorted[i].pid == *selected_pid_) return i;
    return 0;
  }

  void move_selection(int by) {
    if (drilled_) return;
    const auto sorted = rows();
    if (sorted.empty()) return;
    size_t at = selected_index(sorted);
    if (by < 0 && at > 0) at--;
    if (by > 0 && at + 1 < sorted.size()) at++;
    selected_pid_ = sorted[at].pid;
  }

  std::string render(size_t width, size_t height, bool help, uint64_t lost) const {
    const double elapsed_s = last_roll_ns_ > start_ns_ ? (last_roll_ns_ - start_ns_) / 1e9 : 0;
    TopViewOptions view = view_;
    view.width = width;
    view.height = height;
    view.help_line = help;
    if (drilled_) {
      auto w = processes_.find(*drilled_);
      if (w != processes_.end() && w->second.table) {
        TopStatus status;
        status.pid = *drilled_;
        status.comm = w->second.info.comm;
        status.threads = w->second.cpu.threads;
        status.cpu_percent = w->second.cpu_percent;
        status.elapsed_s = elapsed_s;
        status.events_lost = lost;
        status.times = times_status(costs_);
        if (!w->second.cpu.ok) status.state = "exited";
        if (help && view.height > 1) view.height--;  // room for the way back
        std::string text = render_top(view_.since_start ? w->second.table->since_start() : w->second.shown, status, view);
        // render_top's help line ends without a newline (a screen's last line).
        if (help) text += (text.empty() || text.back() == '\n' ? "" : "\n") + std::string("Esc: back to the process list");
        return text;
      }
    }
    const auto sorted = rows();
    return render_top_processes(sorted, selected_index(sorted), elapsed_s, lost, view);
  }

  bool tick(uint64_t now_ns, uint64_t lost) override {
    // The first interval starts at the first tick, once the session has
    // attached to every libtorch file found and started sampling (seconds
    // under load): counted from the start, it could hold little sampled
    // time and miss a busy process that only sampling finds.
    if (!ticked_) {
      ticked_ = true;
      last_roll_ns_ = now_ns;
    }
    if (screen_ && !handle_keys()) return false;
    route_calls();
    if (now_ns - last_roll_ns_ >= static_cast<uint64_t>(options_.interval_s * 1e9)) {
      const double seconds = (now_ns - last_roll_ns_) / 1e9;
      // A process gone since the last refresh leaves the list (as in top),
      // unless its table is the one on the screen.
      std::erase_if(processes_, [&](const auto& entry) {
        return !entry.second.cpu.ok && entry.second.cpu_percent < 0 && entry.first != drilled_.value_or(0) &&
               !read_process_cpu(entry.first).ok;
      });
      for (auto& [pid, w] : processes_) {
        const ProcessCpu cpu = read_process_cpu(pid);
        w.cpu_percent = cpu.ok && w.cpu.ok && clock_ticks_ > 0
                            ? 100.0 * (cpu.ticks - w.cpu.ticks) / clock_ticks_ / seconds
                            : (cpu.ok ? w.cpu_percent : -1);
        w.cpu = cpu;
        w.ops_per_s = w.calls / seconds;
        w.launches_per_s = w.launches / seconds;
        w.calls = w.launches = 0;
        if (w.table) {
          LiveInterval interval = w.table->roll(now_ns);
          if (!view_.paused) w.shown = std::move(interval);
        }
      }
      last_roll_ns_ = now_ns;
      if (!display_->refreshed([&](size_t width) { return render(width, 0, false, lost); })) return false;
    }
    display_->draw([&](size_t columns, size_t rows) { return render(columns, rows, true, lost); });
    return true;
  }

  const TopOptions& options_;
  const long clock_ticks_;
  std::unique_ptr<FullScreen> screen_;
  std::optional<TopDisplay> display_;  // from run on
  std::vector<OpInfo> ops_;  // every libtorch's ops, as the session numbers them
  std::map<int, Watched> processes_;
  std::unordered_map<uint32_t, uint32_t> pid_of_tid_;
  std::optional<ProbeCosts> costs_;  // op times are compensated by them (op_timeline.h)
  TimelineBuilder timeline_;
  TopViewOptions view_;
  std::optional<int> selected_pid_;
  std::optional<int> drilled_;  // the process whose op table is shown
  uint64_t start_ns_ = 0, last_roll_ns_ = 0;
  bool ticked_ = false;
};

}  // namespace

int run_system_top(const TopOptions& options) { return SystemTop(options).run(); }

}  // namespace gpuprof::cli
