// The output of the node processes `troupe launch` starts, relayed line by
// line to this process's terminal.

#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace troupe::apps {

/// The nodes' output, line by line through print_line (above the progress
/// bar, never glued onto it), each line naming its node: "troupe node 2:
/// joined the job ...". One thread polls every node's pipe; a line longer
/// than 16 KiB is cut into pieces (a garbled child must not grow this
/// process's memory).
class output_relay {
public:
  output_relay() = default;
  output_relay(const output_relay&) = delete;
  output_relay& operator=(const output_relay&) = delete;
  ~output_relay();

  /// A new pipe for the node `name`; returns its write end, which the
  /// caller hands to the child and then closes.
  int open(std::string name);

  /// Relays what is left for up to `drain`, then stops.
  void stop(std::chrono::milliseconds drain);

private:
  struct source {
    int fd;
    std::string name;
    std::string partial; ///< the current line so far
  };

  void emit(const source& src, std::string line);
  void flush(source& src);
  void run();

  std::mutex mtx_;
  std::deque<source> sources_; ///< stable addresses while it grows
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::chrono::steady_clock::time_point> deadline_{};
};

} // namespace troupe::apps
