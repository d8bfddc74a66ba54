#include "cli/profile_push.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>

#include "base/http_post.h"
#include "analyze/process_filter.h"
#include "output/pprof.h"
#include "record/record_file.h"

namespace gpuprof::cli {
namespace {

constexpr double kPostTimeoutS = 10;
constexpr double kRetryDelaysS[] = {1, 2};

// A label value as Pyroscope's name syntax takes it: no `{`, `}`, `,`,
// `=` or spaces (each becomes `_`).
std::string label_value(const std::string& text) {
  std::string out;
  for (char c : text) out += (c == '{' || c == '}' || c == ',' || c == '=' || c == ' ' || c < 0x20) ? '_' : c;
  return out.empty() ? "_" : out;
}

std::string url_escape(const std::string& text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace

std::string push_cycle_prefix(int pid) {
  return (std::filesystem::temp_directory_path() / ("gpuprof-push-" + std::to_string(pid) + "-")).string();
}

size_t remove_files_of_killed_pushers() {
  std::error_code ec;
  const std::filesystem::path folder = std::filesystem::temp_directory_path(ec);
  if (ec) return 0;
  static const std::regex name("gpuprof-push-([0-9]+)-[0-9]+\\.gpuprof");
  size_t removed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    std::smatch match;
    const std::string file = entry.path().filename().string();
    if (!std::regex_match(file, match, name)) continue;
    // Its pusher runs while a gpuprof has that pid (a reused pid is another
    // program's).
    std::ifstream comm("/proc/" + match[1].str() + "/comm");
    std::string running;
    if (std::getline(comm, running) && running == "gpuprof") continue;
    if (std::filesystem::remove(entry.path(), ec)) removed++;
  }
  return removed;
}

std::string ingest_url(const PushTarget& target, const Recording& recording) {
  const ProcessInfo& process = recording.process;
  std::string name = target.app.empty() ? "gpuprof." + label_value(process.comm) : target.app;
  name += "{pid=" + std::to_string(process.pid) + ",comm=" + label_value(process.comm);
  if (!process.hostname.empty()) name += ",hostname=" + label_value(process.hostname);
  if (const JobRank* rank = job_rank_of(recording.job_ranks, process.pid)) {
    name += ",rank=" + std::to_string(rank->rank);
    if (rank->local_rank) name += ",local_rank=" + std::to_string(*rank->local_rank);
    if (rank->world_size) name += ",world_size=" + std::to_string(*rank->world_size);
  }
  name += "}";
  const ClockInfo& clock = recording.clock;
  const uint64_t from_ns = clock.start_realtime_ns;
  const uint64_t span_ns =
      clock.end_monotonic_ns > clock.start_monotonic_ns ? clock.end_monotonic_ns - clock.start_monotonic_ns : 0;
  std::string url = target.url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  url += "/ingest?name=" + url_escape(name) + "&from=" + std::to_string(from_ns / 1'000'000'000) +
         "&until=" + std::to_string((from_ns + span_ns + 999'999'999) / 1'000'000'000) +
         "&format=pprof&spyName=gpuprof";
  if (recording.options.sample_hz) url += "&sampleRate=" + std::to_string(recording.options.sample_hz);
  return url;
}

namespace {

// The sender thread starts with every signal blocked: SIGINT, SIGTERM and
// SIGHUP are the session's to read (a signalfd), and a process-directed
// signal goes to any thread that does not block it.
std::thread start_with_signals_blocked(std::function<void()> body) {
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &previous);
  std::thread thread(std::move(body));
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return thread;
}

}  // namespace

ProfilePusher::ProfilePusher(PushTarget target)
    : target_(std::move(target)), thread_(start_with_signals_blocked([this] { run(); })) {}

ProfilePusher::~ProfilePusher() {
  if (thread_.joinable()) finish(0);
}

void ProfilePusher::push(const std::string& record_path) {
  {
    std::lock_guard lock(mutex_);
    if (queue_.size() < kQueuedCycles) {
      queue_.push_back(record_path);
      wake_.notify_all();
      return;
    }
    not_sent_++;
    last_error_ = "more than " + std::to_string(kQueuedCycles) + " cycles waited to be sent";
  }
  unlink(record_path.c_str());
}

std::string ProfilePusher::finish(double deadline_s) {
  std::unique_lock lock(mutex_);
  stopping_ = true;
  wake_.notify_all();
  if (!wake_.wait_for(lock, std::chrono::duration<double>(deadline_s), [this] { return queue_.empty() && !busy_; })) {
    give_up_ = true;
    wake_.notify_all();
  }
  lock.unlock();
  thread_.join();
  lock.lock();
  for (const std::string& path : queue_) {  // given up on
    unlink(path.c_str());
    not_sent_++;
    last_error_ = "the stop came before they were sent";
  }
  queue_.clear();
  std::string line = "pushed " + std::to_string(sent_) + " profile" + (sent_ == 1 ? "" : "s") + " to " + target_.url;
  if (not_sent_) line += "; " + std::to_string(not_sent_) + " not sent: " + last_error_;
  return line;
}

void ProfilePusher::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return !queue_.empty() || stopping_ || give_up_; });
    if (give_up_ || queue_.empty()) return;
    const std::string path = queue_.front();
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    send(path);
    unlink(path.c_str());
    lock.lock();
    busy_ = false;
    wake_.notify_all();
  }
}

void ProfilePusher::send(const std::string& record_path) {
  auto count = [this](const std::string& why) {
    std::lock_guard lock(mutex_);
    if (why.empty()) {
      sent_++;
    } else {
      not_sent_++;
      last_error_ = why;
    }
  };
  auto recording = read_recording(record_path, CorruptChunks::skip);
  if (!recording) return count(recording.error());
  if (!is_system_wide(*recording)) return count(post(*recording));
  // A process that did nothing in the cycle (seen before, still defined)
  // has no profile in it.
  for (const auto& [pid, activity] : process_activity(*recording)) {
    if (!activity.events && !activity.samples) continue;
    if (give_up_now()) {  // finish()'s deadline passed: each one left is counted unsent
      count("the stop came before they were sent");
      continue;
    }
    count(post(select_processes(*recording, {pid})));
  }
}

bool ProfilePusher::give_up_now() {
  std::lock_guard lock(mutex_);
  return give_up_;
}

std::string ProfilePusher::post(const Recording& recording) {
  const std::string url = ingest_url(target_, recording);
  const MultipartFile profile{"profile", "profile.pb", pprof_profile(recording).data};
  std::string why;
  for (size_t attempt = 0;; attempt++) {
    Result<HttpReply> reply = http_post_multipart(url, profile, kPostTimeoutS);
    if (reply && reply->status >= 200 && reply->status < 300) return "";
    why = reply ? "the server answered " + std::to_string(reply->status) +
                      (reply->body.empty() ? "" : " (" + reply->body.substr(0, 200) + ")")
                : reply.error();
    if (attempt == std::size(kRetryDelaysS) || !wait_before_retry(kRetryDelaysS[attempt])) return why;
  }
}

bool ProfilePusher::wait_before_retry(double seconds) {
  std::unique_lock lock(mutex_);
  return !wake_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return give_up_; });
}

}  // namespace gpuprof::cli
