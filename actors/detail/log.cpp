#include "actors/detail/log.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace troupe::actors::detail {

spdlog::logger& log() {
  static auto logger = [] {
    auto result = spdlog::stderr_logger_mt("troupe");
    result->set_pattern(log_pattern);
    result->set_level(spdlog::level::info);
    return result;
  }();
  return *logger;
}

void limited_log::warn(std::string_view line) {
  std::uint64_t before = 0;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    auto now = std::chrono::steady_clock::now();
    if (now - window_ >= std::chrono::seconds{1}) {
      window_ = now;
      lines_ = 0;
    }
    if (lines_ >= per_second_) {
      ++suppressed_;
      return;
    }
    ++lines_;
    before = suppressed_;
    suppressed_ = 0;
  }
  if (before > 0)
    log().warn("{} ({} similar lines suppressed before this one)", line,
               before);
  else
    log().warn("{}", line);
}

void limited_log::set_rate(std::uint32_t per_second) {
  std::lock_guard<std::mutex> guard{mtx_};
  per_second_ = per_second;
}

} // namespace troupe::actors::detail
