#include "actors/detail/log.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace troupe::actors::detail {

spdlog::logger& log() {
  static auto logger = [] {
    auto result = spdlog::stderr_logger_mt("troupe");
    result->set_pattern("[%H:%M:%S.%e] [%l] %v");
    result->set_level(spdlog::level::info);
    return result;
  }();
  return *logger;
}

} // namespace troupe::actors::detail
