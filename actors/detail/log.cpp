#include "actors/detail/log.hpp"

#include <cstring>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace troupe::actors::detail {

namespace {

std::mutex program_mtx;
std::string program_name = "troupe";

/// "<program>: [level: ]message\n".
class line_formatter : public spdlog::formatter {
public:
  void format(const spdlog::details::log_msg& msg,
              spdlog::memory_buf_t& dest) override {
    auto program = log_program();
    dest.append(program.data(), program.data() + program.size());
    const char* level = "";
    switch (msg.level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      level = ": debug";
      break;
    case spdlog::level::warn:
      level = ": warning";
      break;
    case spdlog::level::err:
    case spdlog::level::critical:
      level = ": error";
      break;
    default:
      break;
    }
    dest.append(level, level + std::strlen(level));
    dest.push_back(':');
    dest.push_back(' ');
    dest.append(msg.payload.data(), msg.payload.data() + msg.payload.size());
    dest.push_back('\n');
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<line_formatter>();
  }
};

} // namespace

static std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> the_ring() {
  static auto ring = [] {
    auto r = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(20);
    r->set_formatter(make_log_formatter());
    return r;
  }();
  return ring;
}

spdlog::logger& log() {
  static auto logger = [] {
    auto result = spdlog::stderr_logger_mt("troupe");
    result->set_formatter(make_log_formatter());
    result->sinks().push_back(the_ring());
    result->set_level(spdlog::level::info);
    return result;
  }();
  return *logger;
}

spdlog::sink_ptr log_ring() {
  return the_ring();
}

std::vector<std::string> recent_log_lines(std::size_t n) {
  auto lines = the_ring()->last_formatted(n);
  for (auto& l : lines)
    while (!l.empty() && l.back() == '\n')
      l.pop_back();
  return lines;
}

void set_log_program(std::string name) {
  std::lock_guard<std::mutex> guard{program_mtx};
  program_name = std::move(name);
}

std::string log_program() {
  std::lock_guard<std::mutex> guard{program_mtx};
  return program_name;
}

std::unique_ptr<spdlog::formatter> make_log_formatter() {
  return std::make_unique<line_formatter>();
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
