// Ctrl-C and SIGTERM during `troupe train`: the first stops the job cleanly
// (the job's own stop path: final evaluation, JSON, report and model are
// written), a second ends the process at once.

#pragma once

#include <atomic>
#include <csignal>
#include <memory>
#include <string>
#include <thread>

#include "actors/stop_request.hpp"

namespace troupe::apps {

/// While alive, SIGINT and SIGTERM are blocked in the thread that made it
/// (and so in every thread started later, the actor system's included) and
/// taken by a thread of its own with sigtimedwait. A thread started before
/// (a library's: OpenBLAS starts its own when loaded) may still take one:
/// a handler then only records it, and the watching thread takes it within
/// 0.1 s (without the handler such a signal ended the process at once).
/// The first signal asks `stop` to end
/// the job with the reason "interrupted (SIGINT)" (or SIGTERM); a second one
/// writes a line on stderr and exits with 128 + its number, without
/// waiting for anything.
class interrupt_watch {
public:
  /// `command` prefixes the lines on stderr ("troupe train").
  interrupt_watch(std::shared_ptr<actors::stop_request> stop,
                  std::string command, double grace = 0);

  /// A node's watch (troupe node): no stop to request, the coordinator
  /// stops the job. A launcher signals every process at once (Slurm's
  /// scancel, a Kubernetes Job deleted): after the first signal the node
  /// stays up to `grace` seconds for its coordinator to end the job (so
  /// that the coordinator's clean stop does not wait on a node that left),
  /// then exits with 128 + the signal; a second signal exits at once.
  static std::unique_ptr<interrupt_watch> for_node(std::string command,
                                                   double grace);

  /// Stops the watching thread and restores the signal mask; a signal that
  /// arrived meanwhile counts as the first.
  ~interrupt_watch();

  interrupt_watch(const interrupt_watch&) = delete;
  interrupt_watch& operator=(const interrupt_watch&) = delete;

  /// The first signal taken (0: none yet).
  int signal() const noexcept {
    return first_.load();
  }

  /// The job is over (only its dashboard lingers): the first signal's line
  /// says it closes the dashboard.
  void job_over() noexcept {
    job_over_ = true;
  }

  /// 128 + signal() if a signal was taken, else `status`.
  int exit_status(int status) const noexcept;

  /// "interrupted (SIGINT)" or "interrupted (SIGTERM)".
  static std::string reason(int sig);

private:
  void run();
  void take(int sig);

  std::shared_ptr<actors::stop_request> stop_;
  std::string command_;
  sigset_t set_;
  sigset_t old_;
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  std::atomic<int> first_{0};
  std::atomic<bool> done_{false};
  std::atomic<bool> job_over_{false};
  double grace_ = 0; ///< a node's seconds after the first signal (0: none)
  std::thread thread_;
};

} // namespace troupe::apps
