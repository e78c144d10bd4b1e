#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string_view>

#include <spdlog/logger.h>

namespace troupe::actors::detail {

/// The pattern of the logger's lines.
inline constexpr const char* log_pattern = "[%H:%M:%S.%e] [%l] %v";

/// The logger of every troupe actor, named "troupe": it writes to stderr,
/// because stdout carries results only. Level info by default; change it
/// with log().set_level(...).
spdlog::logger& log();

/// Warnings on log() at most `per_second` lines a second, for what a peer can
/// cause at will (refusals): an attacker must not flood the log. The next
/// line logged says how many were suppressed before it.
class limited_log {
public:
  explicit limited_log(std::uint32_t per_second = 1)
      : per_second_(per_second) {}

  /// Logs `line` as a warning unless this second's lines are used up.
  void warn(std::string_view line);

  void set_rate(std::uint32_t per_second);

private:
  std::mutex mtx_;
  std::chrono::steady_clock::time_point window_{};
  std::uint32_t lines_ = 0, per_second_;
  std::uint64_t suppressed_ = 0;
};

} // namespace troupe::actors::detail
