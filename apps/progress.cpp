#include "apps/progress.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unistd.h>

#include "optim/quote.hpp"

namespace troupe::apps {

namespace {

std::string fmt(const char* format, double x) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, x);
  return buf;
}

std::string duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    return "--";
  auto s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof(buf), "%ldh%02ldm", s / 3600, (s / 60) % 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof(buf), "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof(buf), "%lds", s);
  return buf;
}

} // namespace

progress_style parse_progress_style(const std::string& name) {
  if (name == "auto")
    return isatty(STDERR_FILENO) ? progress_style::bar : progress_style::lines;
  if (name == "bar")
    return progress_style::bar;
  if (name == "lines")
    return progress_style::lines;
  if (name == "none")
    return progress_style::none;
  throw std::invalid_argument("unknown progress style " + optim::quote(name)
                              + " (auto, bar, lines, none)");
}

progress::progress(progress_style style, std::string label)
    : style_(style), label_(std::move(label)) {}

std::string progress::render(const progress_state& s) const {
  std::string out = label_;
  out += " epoch " + fmt("%.2f", s.epoch) + " loss " + fmt("%.4f", s.loss);
  if (s.accuracy >= 0)
    out += " test_acc " + fmt("%.4f", s.accuracy);
  out += " " + fmt("%.0f", s.samples_per_sec) + " samples/s";
  return out;
}

void progress::update(const progress_state& s, bool force) {
  if (style_ == progress_style::none)
    return;
  auto now = std::chrono::steady_clock::now();
  auto interval = style_ == progress_style::bar ? std::chrono::milliseconds(100)
                                                : std::chrono::seconds(2);
  if (!force && drawn_ && now - last_ < interval)
    return;
  if (style_ == progress_style::lines && drawn_ && s.step == last_step_)
    return; // this state is already on a line of its own
  last_ = now;
  last_step_ = s.step;
  drawn_ = true;
  if (style_ == progress_style::lines) {
    std::fprintf(stderr, "%s elapsed %s\n", render(s).c_str(),
                 duration(s.elapsed).c_str());
    return;
  }
  constexpr int width = 24;
  auto frac = std::clamp(s.fraction, 0.0, 1.0);
  auto filled = static_cast<int>(frac * width);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(width, '-');
  double eta = frac > 0 ? s.elapsed * (1 - frac) / frac : -1;
  std::fprintf(stderr, "\r\033[K[%s] %3.0f%% %s ETA %s", bar.c_str(),
               frac * 100, render(s).c_str(), duration(eta).c_str());
  std::fflush(stderr);
}

void progress::message(const std::string& text) {
  if (style_ == progress_style::bar && drawn_)
    std::fprintf(stderr, "\r\033[K");
  std::fprintf(stderr, "%s\n", text.c_str());
  drawn_ = false;
}

void progress::finish(const progress_state& s) {
  update(s, true);
  if (style_ == progress_style::bar)
    std::fprintf(stderr, "\n");
}

} // namespace troupe::apps
