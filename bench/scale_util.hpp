#pragma once

// What the scale benchmarks (gossip_scale, sim_scale) share: the process's
// memory from /proc/self/status, wall seconds, and --name=value flags with
// a usage line for --help.

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

namespace troupe::bench {

using clock_type = std::chrono::steady_clock;

/// A field of /proc/self/status in kB (VmRSS, VmHWM).
inline double status_kb(const std::string& field) {
  std::ifstream in{"/proc/self/status"};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0)
      return std::stod(line.substr(field.size() + 1));
  return 0;
}

inline double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// --name=VALUE from the command line, or `fallback`; -h/--help prints
/// `usage` and exits.
inline std::string text_flag(int argc, char** argv, const std::string& name,
                             std::string fallback, const char* usage) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--" + name + "=", 0) == 0)
      return a.substr(name.size() + 3);
    if (a == "-h" || a == "--help") {
      std::cerr << usage;
      std::exit(0);
    }
  }
  return fallback;
}

inline std::uint64_t flag(int argc, char** argv, const std::string& name,
                          std::uint64_t fallback, const char* usage) {
  return std::stoull(
      text_flag(argc, argv, name, std::to_string(fallback), usage));
}

} // namespace troupe::bench
