#include "apps/interrupt.hpp"

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <pthread.h>
#include <unistd.h>

namespace troupe::apps {

interrupt_watch::interrupt_watch(std::shared_ptr<actors::stop_request> stop,
                                 std::string command)
    : stop_(std::move(stop)), command_(std::move(command)) {
  sigemptyset(&set_);
  sigaddset(&set_, SIGINT);
  sigaddset(&set_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set_, &old_);
  thread_ = std::thread{[this] { run(); }};
}

interrupt_watch::~interrupt_watch() {
  done_ = true;
  thread_.join();
  // A signal that came after the thread's last look is still pending:
  // take it here, so that unblocking does not end the process.
  timespec zero{0, 0};
  for (int sig; (sig = sigtimedwait(&set_, nullptr, &zero)) > 0;) {
    int none = 0;
    first_.compare_exchange_strong(none, sig);
  }
  pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

int interrupt_watch::exit_status(int status) const noexcept {
  auto sig = first_.load();
  return sig != 0 ? 128 + sig : status;
}

std::string interrupt_watch::reason(int sig) {
  return std::string{"interrupted ("} + (sig == SIGTERM ? "SIGTERM" : "SIGINT")
         + ")";
}

void interrupt_watch::run() {
  timespec tick{0, 100 * 1000 * 1000};
  while (!done_) {
    int sig = sigtimedwait(&set_, nullptr, &tick);
    if (sig > 0)
      take(sig);
  }
}

void interrupt_watch::take(int sig) {
  int none = 0;
  if (first_.compare_exchange_strong(none, sig)) {
    auto line = command_ + ": " + reason(sig)
                + (job_over_ ? std::string{", closing the dashboard\n"}
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
