#include "apps/output_relay.hpp"

#include <fcntl.h>
#include <poll.h>
#include <stdexcept>
#include <unistd.h>
#include <vector>

#include "apps/terminal.hpp"

namespace troupe::apps {

output_relay::~output_relay() {
  stop(std::chrono::milliseconds{0});
}

int output_relay::open(std::string name) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error("troupe launch: cannot create a pipe");
  {
    std::lock_guard<std::mutex> guard{mtx_};
    sources_.push_back({fds[0], std::move(name), {}});
  }
  if (!thread_.joinable())
    thread_ = std::thread{[this] { run(); }};
  return fds[1];
}

void output_relay::stop(std::chrono::milliseconds drain) {
  deadline_ = std::chrono::steady_clock::now() + drain;
  stopping_ = true;
  if (thread_.joinable())
    thread_.join();
  for (auto& src : sources_)
    if (src.fd >= 0) {
      flush(src);
      ::close(src.fd);
      src.fd = -1;
    }
}

void output_relay::emit(const source& src, std::string line) {
  if (!line.empty() && line.back() == '\r')
    line.pop_back();
  const std::string own = "troupe node: ";
  if (line.rfind(own, 0) == 0)
    line.erase(0, own.size());
  print_line("troupe node " + src.name + ": " + line);
}

void output_relay::flush(source& src) {
  if (!src.partial.empty())
    emit(src, std::move(src.partial));
  src.partial.clear();
}

void output_relay::run() {
  // A node's line longer than this is cut into pieces: a garbled child
  // must not grow this process's memory.
  constexpr std::size_t max_line = 16384;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<source*> of;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      for (auto& src : sources_)
        if (src.fd >= 0) {
          fds.push_back({src.fd, POLLIN, 0});
          of.push_back(&src);
        }
    }
    if (stopping_
        && (fds.empty()
            || std::chrono::steady_clock::now() >= deadline_.load()))
      return;
    if (fds.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds{50});
      continue;
    }
    if (::poll(fds.data(), fds.size(), 100) <= 0)
      continue;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0)
        continue;
      auto& src = *of[i];
      char buf[4096];
      auto n = ::read(src.fd, buf, sizeof(buf));
      if (n <= 0) {
        std::lock_guard<std::mutex> guard{mtx_};
        flush(src);
        ::close(src.fd);
        src.fd = -1;
        continue;
      }
      for (ssize_t k = 0; k < n; ++k) {
        if (buf[k] == '\n') {
          flush(src);
        } else {
          src.partial += buf[k];
          if (src.partial.size() >= max_line)
            flush(src);
        }
      }
    }
  }
}

} // namespace troupe::apps
