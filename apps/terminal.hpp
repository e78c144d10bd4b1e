#pragma once

// The terminal under a progress bar: the bar's line is redrawn in place,
// and every other line written to stderr while it is shown (the logger's
// included) first clears the bar, then the bar is drawn again below it, so
// that no log line is ever glued onto the bar.

#include <memory>
#include <mutex>
#include <string>

namespace troupe::apps {

/// Columns of the terminal on stderr (the COLUMNS variable if that is not a
/// terminal, else 80).
std::size_t terminal_columns();

/// `text` cut to at most `columns` characters (UTF-8 aware: a character is
/// never split).
std::string fit_columns(const std::string& text, std::size_t columns);

/// `text` broken at spaces into lines of at most `columns` characters (a
/// word longer than that stays whole), the lines after the first indented
/// by two spaces.
std::string wrap_columns(const std::string& text, std::size_t columns);

/// Writes `text` (no newline at its end) as a line of its own on stderr:
/// above the bar while a terminal shows one, else plainly; whole lines
/// from several threads never mix.
void print_line(const std::string& text);

class terminal {
public:
  /// Routes the logger's lines (actors/detail/log.hpp) through this
  /// terminal until it is destroyed.
  terminal();
  ~terminal();
  terminal(const terminal&) = delete;
  terminal& operator=(const terminal&) = delete;

  /// Shows `bar` in place of the bar shown (empty: none).
  void draw(const std::string& bar);

  /// Writes `line` (no newline at its end) above the bar.
  void line(const std::string& text);

  /// Leaves the bar where it is (newline) and shows none from now on.
  void end_bar();

  struct screen; ///< the bar shown and the lock on stderr's lines

private:
  std::shared_ptr<screen> screen_;
};

} // namespace troupe::apps
