#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace troupe::apps {

/// How progress is shown on stderr.
enum class progress_style {
  bar,   ///< one self-overwriting line (a TTY)
  lines, ///< a plain line every few seconds (logs, pipes)
  none,
};

/// Picks `bar` when stderr is a terminal, `lines` otherwise; "auto", "bar",
/// "lines" and "none" select explicitly. Throws std::invalid_argument on
/// anything else.
progress_style parse_progress_style(const std::string& name);

/// A snapshot of a run for the progress display.
struct progress_state {
  double fraction = 0;  ///< of the planned work, in [0, 1]
  double epoch = 0;     ///< fractional epochs done
  std::size_t step = 0; ///< optimizer steps done
  double loss = 0;      ///< smoothed training loss
  double accuracy = -1; ///< last test accuracy, < 0 if none yet
  double samples_per_sec = 0;
  double elapsed = 0; ///< seconds since training started
};

/// Progress on stderr: a bar with loss, accuracy, samples/s and ETA on a
/// terminal, plain periodic lines otherwise. Throttled, so calling it every
/// step is cheap.
class progress {
public:
  explicit progress(progress_style style, std::string label);

  /// Shows `s` if enough time passed since the last update (or `force`).
  void update(const progress_state& s, bool force = false);

  /// Prints a message on its own line without breaking the bar.
  void message(const std::string& text);

  /// Ends the bar (newline on a terminal).
  void finish(const progress_state& s);

private:
  std::string render(const progress_state& s) const;
  progress_style style_;
  std::string label_;
  std::chrono::steady_clock::time_point last_;
  std::size_t last_step_ = 0;
  bool drawn_ = false;
};

} // namespace troupe::apps
