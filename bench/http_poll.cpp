// http_poll PORT PERIOD_MS PATH...: GETs each PATH from 127.0.0.1:PORT every
// PERIOD_MS until the server goes away (a dashboard or a Prometheus scraper
// in one light process, for bench/monitor_overhead). Prints on stderr how
// many requests were answered.

#include <arpa/inet.h>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace {

/// One GET; false if the server could not be reached.
bool get(std::uint16_t port, const std::string& path) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return false;
  }
  auto req
      = "GET " + path + " HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n";
  ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  char buf[65536];
  while (::recv(fd, buf, sizeof(buf), 0) > 0) {
  }
  ::close(fd);
  return true;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: http_poll PORT PERIOD_MS PATH...\n";
    return 2;
  }
  auto port = static_cast<std::uint16_t>(std::atoi(argv[1]));
  std::chrono::milliseconds period{std::atoi(argv[2])};
  std::uint64_t answered = 0;
  for (;;) {
    for (int i = 3; i < argc; ++i) {
      if (!get(port, argv[i])) {
        std::cerr << "http_poll: " << answered << " requests answered\n";
        return 0;
      }
      ++answered;
    }
    std::this_thread::sleep_for(period);
  }
}
