#pragma once

#include <chrono>
#include <cstdio>
#include <memory>
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

class terminal;

/// Progress on stderr: a bar with loss, accuracy, samples/s and ETA on a
/// terminal, cut to its width, with the log's lines above it (apps/
/// terminal.hpp); plain periodic lines otherwise. With a target accuracy
/// the bar's percentage and ETA count toward it (from the first
/// evaluation's accuracy), else toward the planned work. Throttled, so
/// calling it every step is cheap.
class progress {
public:
  /// `target`: the run's target accuracy, 0: none.
  explicit progress(progress_style style, std::string label, double target = 0);
  ~progress();
  progress(const progress&) = delete;
  progress& operator=(const progress&) = delete;

  /// Shows `s` if enough time passed since the last update (or `force`).
  void update(const progress_state& s, bool force = false);

  /// Prints a message on its own line without breaking the bar.
  void message(const std::string& text);

  /// Ends the bar (newline on a terminal).
  void finish(const progress_state& s);

  /// The bar's line for `s` in at most `columns` characters.
  std::string bar_line(const progress_state& s, std::size_t columns) const;

  /// The fraction shown: toward the target once an evaluation ran (with
  /// one), else of the planned work.
  double shown_fraction(const progress_state& s);

private:
  std::string render(const progress_state& s) const;
  progress_style style_;
  std::string label_;
  double target_ = 0;
  double first_accuracy_ = -1;     ///< the first evaluation's, with a target
  double first_seconds_ = 0;       ///< when it came
  double fraction_ = 0;            ///< shown (shown_fraction)
  std::unique_ptr<terminal> term_; ///< the bar's (style bar)
  progress_state latest_;          ///< the latest given, shown or not
  bool pending_ = false;           ///< latest_ is not shown
  std::chrono::steady_clock::time_point last_;
  std::size_t last_step_ = 0;
  bool drawn_ = false;
};

} // namespace troupe::apps
