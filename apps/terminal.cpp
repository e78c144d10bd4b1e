#include "apps/terminal.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/ioctl.h>
#include <unistd.h>
#include <vector>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>

#include "actors/detail/log.hpp"

namespace troupe::apps {

std::size_t terminal_columns() {
  winsize w{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0)
    return w.ws_col;
  if (const char* c = std::getenv("COLUMNS")) {
    char* end = nullptr;
    auto n = std::strtoul(c, &end, 10);
    if (end != c && *end == '\0' && n >= 20 && n <= 1000)
      return n;
  }
  return 80;
}

std::string fit_columns(const std::string& text, std::size_t columns) {
  std::size_t chars = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    // A byte that starts a character (not a UTF-8 continuation byte).
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      if (chars == columns)
        return text.substr(0, i);
      ++chars;
    }
  }
  return text;
}

std::string wrap_columns(const std::string& text, std::size_t columns) {
  std::string out, line;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto end = text.find(' ', start);
    if (end == std::string::npos)
      end = text.size();
    auto word = text.substr(start, end - start);
    if (!line.empty() && line.size() + 1 + word.size() > columns) {
      out += line + "\n";
      line = "  " + word;
    } else {
      line += (line.empty() ? "" : " ") + word;
    }
    start = end + 1;
  }
  return out + line;
}

struct terminal::screen {
  std::mutex mtx;
  std::string bar; ///< shown now (empty: none)

  void clear_bar() {
    if (!bar.empty())
      std::fputs("\r\033[K", stderr);
  }
  void show_bar() {
    if (!bar.empty())
      std::fputs(bar.c_str(), stderr);
    std::fflush(stderr);
  }
};

namespace {

/// `text` broken to the terminal's width (a column spare: some terminals
/// wrap a line that fills the last column).
std::string wrapped_line(const std::string& text) {
  auto columns = terminal_columns();
  return wrap_columns(text, columns > 1 ? columns - 1 : columns);
}

/// The logger's sink while a bar is shown: each line above the bar, broken
/// to the terminal's width.
class bar_sink : public spdlog::sinks::base_sink<std::mutex> {
public:
  explicit bar_sink(std::shared_ptr<terminal::screen> s)
      : screen_(std::move(s)) {}

protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t out;
    formatter_->format(msg, out);
    std::string text{out.data(), out.size()};
    while (!text.empty() && text.back() == '\n')
      text.pop_back();
    text = wrapped_line(text);
    std::lock_guard<std::mutex> guard{screen_->mtx};
    screen_->clear_bar();
    std::fputs(text.c_str(), stderr);
    std::fputc('\n', stderr);
    screen_->show_bar();
  }
  void flush_() override {
    std::fflush(stderr);
  }

private:
  std::shared_ptr<terminal::screen> screen_;
};

/// The screen of the terminal alive (print_line) and the lock on stderr's
/// lines without one.
std::mutex active_mtx;
std::weak_ptr<terminal::screen> active_screen;

/// The logger's sinks before a terminal took them over.
std::vector<spdlog::sink_ptr>& saved_sinks() {
  static std::vector<spdlog::sink_ptr> saved;
  return saved;
}

} // namespace

terminal::terminal() : screen_(std::make_shared<screen>()) {
  auto& log = actors::detail::log();
  saved_sinks() = log.sinks();
  auto sink = std::make_shared<bar_sink>(screen_);
  sink->set_formatter(actors::detail::make_log_formatter());
  log.sinks() = {sink, actors::detail::log_ring()};
  std::lock_guard<std::mutex> guard{active_mtx};
  active_screen = screen_;
}

terminal::~terminal() {
  {
    std::lock_guard<std::mutex> guard{active_mtx};
    active_screen.reset();
  }
  auto& log = actors::detail::log();
  log.flush();
  log.sinks() = saved_sinks();
}

void terminal::draw(const std::string& bar) {
  std::lock_guard<std::mutex> guard{screen_->mtx};
  screen_->clear_bar();
  screen_->bar = bar.empty() ? bar : "\r" + bar;
  if (bar.empty())
    std::fflush(stderr);
  else
    screen_->show_bar();
}

void terminal::line(const std::string& text) {
  std::lock_guard<std::mutex> guard{screen_->mtx};
  screen_->clear_bar();
  std::fputs(text.c_str(), stderr);
  std::fputc('\n', stderr);
  screen_->show_bar();
}

void print_line(const std::string& text) {
  std::lock_guard<std::mutex> guard{active_mtx};
  if (auto s = active_screen.lock()) {
    auto lines = wrapped_line(text);
    std::lock_guard<std::mutex> bar_guard{s->mtx};
    s->clear_bar();
    std::fputs(lines.c_str(), stderr);
    std::fputc('\n', stderr);
    s->show_bar();
    return;
  }
  std::fputs(text.c_str(), stderr);
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

void terminal::end_bar() {
  std::lock_guard<std::mutex> guard{screen_->mtx};
  if (!screen_->bar.empty())
    std::fputc('\n', stderr);
  screen_->bar.clear();
  std::fflush(stderr);
}

} // namespace troupe::apps
