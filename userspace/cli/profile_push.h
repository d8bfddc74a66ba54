// cli/profile_push.h: record --push URL: each cycle's profile to a
// Pyroscope server (docs/fleet.md, "Pushing to Pyroscope").
//
// The session hands over each finished cycle's record file and goes on: a
// thread of the pusher's own reads it, makes its pprof profile
// (output/pprof.h) and POSTs it to URL/ingest as Pyroscope's HTTP API
// documents it (format=pprof, the profile as the multipart field
// `profile`; name = APP{labels}; from/until the cycle's wall-clock span in
// UNIX seconds). Recording never waits on it: at most kQueuedCycles wait
// their turn (a newer one finding the queue full is dropped); a failed POST
// is retried twice, 1 s and then 2 s later; what could not be sent is
// counted and said at the stop, and a dead server costs the job nothing.
// A system-wide cycle (record -a --push-every) holds many processes: each
// one that ran an op or was sampled in it is a profile of its own, with
// its own labels (output/pprof.h of that process alone), as a -p cycle is.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "record/recording.h"

namespace gpuprof::cli {

struct PushTarget {
  std::string url;  // the server: http://host:4040 (its /ingest is posted to)
  std::string app;  // the application name ("" : gpuprof.COMM)
};

// The request for one recording's profile: the ingest URL with its query
// (app name with its labels: pid, comm, hostname, and the job's rank,
// local_rank and world_size where the process had them; from, until,
// format=pprof, spyName=gpuprof, sampleRate when it was sampled).
std::string ingest_url(const PushTarget& target, const Recording& recording);

// The folder and file name start of the cycle files the pusher of gpuprof
// `pid` keeps until they are sent: TMPDIR/gpuprof-push-PID-.
std::string push_cycle_prefix(int pid);

// Removes the cycle files that pushers no longer running left (a gpuprof
// killed with SIGKILL cannot remove its own): those of a pid that is gone or
// is not gpuprof now. Returns how many.
size_t remove_files_of_killed_pushers();

class ProfilePusher {
 public:
  static constexpr size_t kQueuedCycles = 8;

  explicit ProfilePusher(PushTarget target);
  ~ProfilePusher();
  ProfilePusher(const ProfilePusher&) = delete;
  ProfilePusher& operator=(const ProfilePusher&) = delete;

  // A finished cycle's record file, to push and then delete (at once, when
  // the queue is full: counted dropped).
  void push(const std::string& record_path);
  // Waits up to deadline_s for what is queued, then stops; the line the
  // stop prints ("pushed N profiles to URL[; M not sent: why]").
  std::string finish(double deadline_s);

 private:
  void run();
  // One cycle: read, profile, POST with retries; its profiles counted sent
  // or not (with why) under the lock.
  void send(const std::string& record_path);
  // One profile, POSTed with retries: "" or why it was not sent.
  std::string post(const Recording& recording);
  bool give_up_now();
  // Sleeps up to seconds, less when finish() gives up waiting.
  bool wait_before_retry(double seconds);

  PushTarget target_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::string> queue_;
  bool stopping_ = false;   // finish(): send what is queued, then end
  bool give_up_ = false;    // finish()'s deadline passed: end now
  bool busy_ = false;       // a cycle is being sent
  uint64_t sent_ = 0, not_sent_ = 0;
  std::string last_error_;
  std::thread thread_;
};

}  // namespace gpuprof::cli
