// write_behind.h: bytes handed to a sink on a thread of its own, a quarter
// megabyte at a time, so that a report formats the next buffer while the
// kernel copies the last one into the page cache (or zlib compresses it).
// A Chrome trace of a 30 s op loop is a quarter of a GB: its writes cost
// about half as much as formatting it (docs/report.md, "Memory").
//
// At most kInFlight buffers wait for the sink: a producer faster than the
// sink waits for room, so memory stays at about (kInFlight + 2) *
// kBufferBytes (one more being written, one filling). How many of them a
// run fills depends on how fast the sink is that moment, so they are
// small: with megabyte buffers a report's peak RSS swung by up to 5 MiB
// from run to run (docs/report.md, "Memory").
// The sink's first error is kept; write() says false from
// then on and finish() returns it. Where no thread can be made (a pids
// limit), each full buffer is written in turn instead.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace gpuprof {

class WriteBehind {
 public:
  // Writes one buffer whole; returns "" or why it could not.
  using Sink = std::function<std::string(std::string_view)>;
  static constexpr size_t kBufferBytes = 1u << 18;
  static constexpr size_t kInFlight = 4;

  explicit WriteBehind(Sink sink);
  ~WriteBehind();  // finish()es
  WriteBehind(const WriteBehind&) = delete;
  WriteBehind& operator=(const WriteBehind&) = delete;

  // Takes a copy of data; false once the sink failed.
  bool write(std::string_view data);
  // Hands on what is left and waits until the sink has it all; "" or the
  // sink's first error. Nothing may be written after; again, it returns
  // the same.
  std::string finish();

 private:
  void hand_over();  // filling_ to the queue, waiting for room
  void run();

  const Sink sink_;
  std::string filling_;  // the producer's
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::string> queue_;  // full buffers, oldest first
  std::vector<std::string> spare_;  // written ones, kept for reuse
  std::string error_;
  bool done_ = false, finished_ = false;
  std::thread thread_;
};

}  // namespace gpuprof
