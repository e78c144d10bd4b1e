#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/formatter.h>
#include <spdlog/logger.h>

namespace troupe::actors::detail {

/// The logger of every troupe actor, named "troupe": it writes to stderr,
/// because stdout carries results only. Level info by default; change it
/// with log().set_level(...). Its lines read as the CLI's own messages do:
/// "troupe train: message", "troupe node: warning: message" (the program's
/// name from set_log_program(), "troupe" until then; "warning: ", "error: "
/// or "debug: " before what is not plain information).
spdlog::logger& log();

/// Names the program in the logger's lines ("troupe train").
void set_log_program(std::string name);

/// The program set_log_program() named.
std::string log_program();

/// The logger's last `n` lines (at most 20 are kept), oldest first, without
/// their newline: what a node monitor reports (node_metrics::log_tail).
std::vector<std::string> recent_log_lines(std::size_t n = 20);

/// The sink that keeps them: a sink that takes the logger's lines over must
/// keep it among the logger's sinks (apps/terminal.cpp).
spdlog::sink_ptr log_ring();

/// A formatter of the logger's lines in that style (for a sink that takes
/// the logger's lines over, apps/terminal.cpp).
std::unique_ptr<spdlog::formatter> make_log_formatter();

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
