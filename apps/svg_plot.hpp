#pragma once

// Line charts as self-contained SVG for a run's report (--report): axes with
// round ticks, a grid, axis labels with units, a legend, the run's title,
// and each point's values as a tooltip (an SVG <title>, shown on hover by
// any browser, no script).

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace troupe::apps {

/// Round tick positions covering [lo, hi]: about `target` steps of 1, 2 or
/// 5 times a power of ten, the first at or below lo, the last at or above
/// hi. lo == hi is widened around the value first (one point still gets
/// an axis). Non-finite bounds give {0, 1}.
std::vector<double> nice_ticks(double lo, double hi, int target = 5);

/// A tick label: as many decimals as the step between ticks needs, large
/// values in thousands (k), millions (M) or billions (G) by `scale_of`.
std::string tick_label(double value, double step, double scale);

/// The divisor for labels of values up to |max|: 1, 1e3, 1e6 or 1e9.
double scale_of(double max_abs);

/// One line of a chart.
struct plot_line {
  std::string name;   ///< in the legend (more than one line)
  std::string colour; ///< any SVG colour
  std::vector<std::pair<double, double>> points;
};

/// One chart.
struct plot {
  std::string title;
  std::string x_label, y_label; ///< with their units, e.g. "time (s)"
  std::vector<plot_line> lines;
  /// The y axis stays within these (accuracy: 0 .. 1).
  std::optional<std::pair<double, double>> y_limits;
  double width = 420, height = 290;
};

/// Where the plot area of a chart lies, in its own coordinates.
struct plot_area {
  double left, top, width, height;
};
plot_area area_of(const plot& p);

/// The chart as an SVG group (<g>) translated by (x, y), to place several
/// in one document.
std::string svg_group(const plot& p, double x, double y);

/// Charts side by side in one SVG document headed by `title`.
std::string svg_document(const std::string& title,
                         const std::vector<plot>& plots);

/// Escapes text for XML and HTML (&, <, >, quotes).
std::string xml_escape(const std::string& text);

} // namespace troupe::apps
