#include "apps/interrupt.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <pthread.h>
#include <unistd.h>

namespace troupe::apps {

namespace {

/// The signal a thread with SIGINT and SIGTERM unblocked took (one started
/// before the watch, by a library: OpenBLAS's pthread build starts its
/// threads when it is loaded); the watching thread takes it from here.
std::atomic<int> caught{0};

extern "C" void on_watched_signal(int sig) {
  caught.store(sig);
}

} // namespace

interrupt_watch::interrupt_watch(std::shared_ptr<actors::stop_request> stop,
                                 std::string command, double grace)
    : stop_(std::move(stop)), command_(std::move(command)), grace_(grace) {
  sigemptyset(&set_);
  sigaddset(&set_, SIGINT);
  sigaddset(&set_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set_, &old_);
  struct sigaction sa {};
  sa.sa_handler = on_watched_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  caught.store(0);
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
  thread_ = std::thread{[this] { run(); }};
}

interrupt_watch::~interrupt_watch() {
  done_ = true;
  thread_.join();
  // A signal that came after the thread's last look is still pending:
  // take it here, so that unblocking does not end the process.
  auto keep_first = [this](int sig) {
    int none = 0;
    first_.compare_exchange_strong(none, sig);
  };
  timespec zero{0, 0};
  for (int sig; (sig = sigtimedwait(&set_, nullptr, &zero)) > 0;)
    keep_first(sig);
  if (int sig = caught.exchange(0))
    keep_first(sig);
  pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

int interrupt_watch::exit_status(int status) const noexcept {
  auto sig = first_.load();
  return sig != 0 ? 128 + sig : status;
}

std::string interrupt_watch::reason(int sig) {
  return std::string{"interrupted ("} + (sig == SIGTERM ? "SIGTERM" : "SIGINT")
         + ")";
}

std::unique_ptr<interrupt_watch> interrupt_watch::for_node(std::string command,
                                                           double grace) {
  return std::make_unique<interrupt_watch>(nullptr, std::move(command), grace);
}

void interrupt_watch::run() {
  timespec tick{0, 100 * 1000 * 1000};
  // A node's grace counts from the first signal (a clock: the wait below
  // returns early when a signal comes).
  std::chrono::steady_clock::time_point since{};
  while (!done_) {
    int sig = sigtimedwait(&set_, nullptr, &tick);
    if (sig > 0)
      take(sig);
    if (int other = caught.exchange(0))
      take(other);
    int first = first_.load();
    if (grace_ > 0 && first != 0 && since == decltype(since){})
      since = std::chrono::steady_clock::now();
    if (grace_ > 0 && first != 0
        && std::chrono::duration<double>(std::chrono::steady_clock::now()
                                         - since)
                   .count()
               >= grace_) {
      auto line = command_ + ": the job did not end within "
                  + std::to_string(static_cast<int>(grace_))
                  + " s of the signal: exiting\n";
      [[maybe_unused]] auto n
          = ::write(STDERR_FILENO, line.data(), line.size());
      std::_Exit(128 + first);
    }
  }
}

void interrupt_watch::take(int sig) {
  int none = 0;
  if (first_.compare_exchange_strong(none, sig)) {
    auto line
        = command_ + ": " + reason(sig)
          + (grace_ > 0 ? ", leaving when the coordinator ends the job (at "
                          "most "
                              + std::to_string(static_cast<int>(grace_))
                              + " s; again to exit at once)\n"
             : job_over_ ? std::string{", closing the dashboard\n"}
                         : std::string{", stopping the job cleanly (again "
                                       "to exit at once)\n"});
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, line.data(), line.size());
    if (stop_)
      stop_->request(reason(sig));
    return;
  }
  auto line = command_ + ": " + reason(sig) + " again, exiting at once\n";
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, line.data(), line.size());
  std::_Exit(128 + sig);
}

} // namespace troupe::apps
