#include "apps/progress.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unistd.h>

#include "apps/terminal.hpp"
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

/// A rate in at most 6 characters: 950, 12.3k, 1.05M.
std::string rate(double r) {
  if (!std::isfinite(r) || r < 0)
    return "--";
  if (r >= 1e6)
    return fmt("%.2fM", r / 1e6);
  if (r >= 1e4)
    return fmt("%.0fk", r / 1e3);
  if (r >= 1e3)
    return fmt("%.1fk", r / 1e3);
  return fmt("%.0f", r);
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

progress::progress(progress_style style, std::string label, double target)
    : style_(style), label_(std::move(label)), target_(target) {
  if (style_ == progress_style::bar)
    term_ = std::make_unique<terminal>();
}

progress::~progress() {
  // The last state given (a throttled update) is the run's end: shown.
  if (pending_)
    update(latest_, true);
  if (term_)
    term_->end_bar();
}

std::string progress::render(const progress_state& s) const {
  std::string out = label_;
  out += " epoch " + fmt("%.2f", s.epoch) + " loss " + fmt("%.4f", s.loss);
  if (s.accuracy >= 0)
    out += " test_acc " + fmt("%.4f", s.accuracy);
  if (target_ > 0)
    out += " target " + fmt("%.4g", target_);
  out += " " + fmt("%.0f", s.samples_per_sec) + " samples/s";
  return out;
}

double progress::shown_fraction(const progress_state& s) {
  if (target_ > 0 && s.accuracy >= 0) {
    if (first_accuracy_ < 0) {
      first_accuracy_ = s.accuracy;
      first_seconds_ = s.elapsed;
    }
    auto gap = target_ - first_accuracy_;
    fraction_ = gap > 0 ? (s.accuracy - first_accuracy_) / gap : 1.0;
  } else if (target_ <= 0) {
    fraction_ = s.fraction;
  } // (a target, no evaluation yet: 0)
  fraction_ = std::clamp(fraction_, 0.0, 1.0);
  return fraction_;
}

std::string progress::bar_line(const progress_state& s,
                               std::size_t columns) const {
  auto frac = std::clamp(fraction_, 0.0, 1.0);
  // ETA: the work's rate so far (toward a target: since the first
  // evaluation, the accuracy's rate).
  double eta = -1;
  if (target_ > 0 && first_accuracy_ >= 0) {
    auto t = s.elapsed - first_seconds_;
    eta = frac > 0 && frac < 1 && t > 0 ? t * (1 - frac) / frac : -1;
  } else if (target_ <= 0 && frac > 0) {
    eta = s.elapsed * (1 - frac) / frac;
  }
  std::string pct = fmt("%3.0f%%", frac * 100);
  if (target_ > 0)
    pct += " of " + fmt("%.4g", target_);
  std::string acc = s.accuracy >= 0 ? "acc " + fmt("%.4f", s.accuracy) : "";
  std::string ep = "ep " + fmt("%.2f", s.epoch);
  std::string loss = "loss " + fmt("%.4f", s.loss);
  std::string speed = rate(s.samples_per_sec) + "/s";
  std::string left = "ETA " + duration(eta);
  // Richest first; each next one drops a part, the last is cut.
  for (int level = 0; level < 6; ++level) {
    std::size_t width = level < 3 ? 20 : 10;
    std::string out;
    auto add = [&out](const std::string& part) {
      if (part.empty())
        return;
      if (!out.empty())
        out += ' ';
      out += part;
    };
    if (level < 5) {
      auto filled = static_cast<std::size_t>(frac * static_cast<double>(width));
      std::string bar(filled, '#');
      bar.resize(width, '-');
      add("[" + bar + "]");
    }
    add(pct);
    if (level < 1)
      add(label_);
    if (level < 4)
      add(ep);
    add(loss);
    add(acc);
    if (level < 2)
      add(speed);
    add(left);
    if (out.size() <= columns || level == 5)
      return fit_columns(out, columns);
  }
  return {};
}

void progress::update(const progress_state& s, bool force) {
  if (style_ == progress_style::none)
    return;
  auto now = std::chrono::steady_clock::now();
  auto interval = style_ == progress_style::bar ? std::chrono::milliseconds(100)
                                                : std::chrono::seconds(2);
  shown_fraction(s);
  latest_ = s;
  pending_ = true;
  if (!force && drawn_ && now - last_ < interval)
    return;
  pending_ = false;
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
  // One column short of the width: a line as wide as the terminal would
  // wrap on some terminals.
  auto columns = terminal_columns();
  term_->draw(bar_line(s, columns > 1 ? columns - 1 : columns));
}

void progress::message(const std::string& text) {
  if (term_) {
    auto columns = terminal_columns();
    term_->line(wrap_columns(text, columns > 1 ? columns - 1 : columns));
    return;
  }
  std::fprintf(stderr, "%s\n", text.c_str());
}

void progress::finish(const progress_state& s) {
  update(s, true);
  if (term_)
    term_->end_bar();
}

} // namespace troupe::apps
