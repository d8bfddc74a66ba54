// write_behind.cpp: the writing thread (see the header).
#include "base/write_behind.h"

#include <system_error>
#include <utility>

namespace gpuprof {

WriteBehind::WriteBehind(Sink sink) : sink_(std::move(sink)) {
  filling_.reserve(kBufferBytes);
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error&) {
    // No thread to be had (a pids limit): each buffer is written in turn.
  }
}

WriteBehind::~WriteBehind() { finish(); }

bool WriteBehind::write(std::string_view data) {
  {
    std::lock_guard lock(mutex_);
    if (!error_.empty()) return false;
  }
  while (!data.empty()) {
    const size_t room = kBufferBytes - std::min(filling_.size(), kBufferBytes);
    const size_t piece = std::min(room, data.size());
    filling_.append(data.substr(0, piece));
    data.remove_prefix(piece);
    if (filling_.size() >= kBufferBytes) hand_over();
  }
  return true;
}

void WriteBehind::hand_over() {
  if (!thread_.joinable()) {
    if (error_.empty()) error_ = sink_(filling_);
    filling_.clear();
    return;
  }
  std::unique_lock lock(mutex_);
  // A failed sink takes nothing more: the bytes are dropped.
  changed_.wait(lock, [this] { return queue_.size() < kInFlight || !error_.empty(); });
  if (error_.empty()) queue_.push_back(std::move(filling_));
  if (!spare_.empty()) {
    filling_ = std::move(spare_.back());
    spare_.pop_back();
  } else {
    filling_ = std::string();
    filling_.reserve(kBufferBytes);
  }
  filling_.clear();
  lock.unlock();
  changed_.notify_all();
}

std::string WriteBehind::finish() {
  if (finished_) return error_;
  if (!filling_.empty()) hand_over();
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
  finished_ = true;
  return error_;
}

void WriteBehind::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return !queue_.empty() || done_; });
    if (queue_.empty()) return;  // done, and everything written
    std::string buffer = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    std::string error = sink_(buffer);
    buffer.clear();
    lock.lock();
    if (!error.empty() && error_.empty()) {
      error_ = std::move(error);
      queue_.clear();
    }
    if (spare_.size() < kInFlight) spare_.push_back(std::move(buffer));
    changed_.notify_all();
  }
}

}  // namespace gpuprof
