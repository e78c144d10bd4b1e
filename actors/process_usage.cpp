// What this process uses of its host, read from Linux's /proc: a node's
// monitor sends it with its actors' metrics (the dashboard's nodes table).

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "actors/monitor.hpp"

namespace troupe::actors {

using messages::process_usage;

namespace {

/// The text of a /proc file ("" if it cannot be read).
std::string read_proc(const char* path) {
  std::ifstream in{path};
  std::ostringstream out;
  out << in.rdbuf();
  return in ? out.str() : std::string{};
}

} // namespace

process_usage read_process_usage() {
  process_usage u;
  // /proc/self/stat: the fields after the command's closing parenthesis;
  // utime and stime are the 14th and 15th fields, num_threads the 20th.
  auto stat = read_proc("/proc/self/stat");
  auto paren = stat.rfind(')');
  if (paren != std::string::npos) {
    std::istringstream fields{stat.substr(paren + 2)};
    std::vector<std::string> f{std::istream_iterator<std::string>{fields}, {}};
    if (f.size() > 17) {
      auto ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
      u.cpu_seconds.value = (std::strtod(f[11].c_str(), nullptr)
                             + std::strtod(f[12].c_str(), nullptr))
                            / (ticks > 0 ? ticks : 100);
      u.threads = std::strtoull(f[17].c_str(), nullptr, 10);
    }
  }
  // /proc/self/statm: size resident ... in pages.
  std::istringstream statm{read_proc("/proc/self/statm")};
  std::uint64_t size = 0, resident = 0;
  if (statm >> size >> resident)
    u.rss_bytes = resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  // /proc/net/dev: "iface: rx_bytes ... (8 fields) tx_bytes ...".
  std::istringstream dev{read_proc("/proc/net/dev")};
  std::string line;
  while (std::getline(dev, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos)
      continue;
    auto name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name == "lo")
      continue;
    std::istringstream nums{line.substr(colon + 1)};
    std::vector<std::uint64_t> v{std::istream_iterator<std::uint64_t>{nums},
                                 {}};
    if (v.size() >= 9) {
      u.net_rx_bytes += v[0];
      u.net_tx_bytes += v[8];
    }
  }
  return u;
}

} // namespace troupe::actors
