#include "apps/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace troupe::apps {

namespace {

constexpr double margin_left = 62, margin_right = 16, margin_top = 36,
                 margin_bottom = 46;
/// Points drawn as dots with a tooltip, at most (evenly picked).
constexpr std::size_t max_marked = 120;

double nice_step(double raw) {
  auto power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw * (1 - 1e-9))
      return m * power;
  return 10 * power;
}

/// A number for a tooltip: 4 significant digits.
std::string short_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

struct range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (std::isfinite(v)) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  bool empty() const {
    return lo > hi;
  }
};

} // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi))
    return {0, 1};
  if (lo > hi)
    std::swap(lo, hi);
  if (hi - lo <= std::abs(hi) * 1e-12) { // one value: an axis around it
    auto pad = lo != 0 ? std::abs(lo) * 0.1 : 1.0;
    lo -= pad;
    hi += pad;
  }
  auto step = nice_step((hi - lo) / std::max(target, 1));
  auto first = std::floor(lo / step + 1e-9) * step;
  std::vector<double> ticks;
  for (double t = first; ticks.empty() || ticks.back() < hi - step * 1e-9;
       t = first + step * static_cast<double>(ticks.size())) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
    if (ticks.size() > 100)
      break;
  }
  return ticks;
}

double scale_of(double max_abs) {
  if (max_abs >= 1e10)
    return 1e9;
  if (max_abs >= 1e7)
    return 1e6;
  if (max_abs >= 1e4)
    return 1e3;
  return 1;
}

std::string tick_label(double value, double step, double scale) {
  auto s = step / scale;
  int decimals
      = s >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(s) - 1e-9));
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", std::min(decimals, 9), value / scale);
  std::string out = buf;
  if (out[0] == '-' && out.find_first_not_of("0.", 1) == std::string::npos)
    out.erase(0, 1); // "-0.0"
  if (scale == 1e3)
    out += "k";
  else if (scale == 1e6)
    out += "M";
  else if (scale == 1e9)
    out += "G";
  return out;
}

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

plot_area area_of(const plot& p) {
  return {margin_left, margin_top, p.width - margin_left - margin_right,
          p.height - margin_top - margin_bottom};
}

std::string svg_group(const plot& p, double x, double y) {
  range xs, ys;
  for (const auto& l : p.lines)
    for (const auto& [a, b] : l.points) {
      xs.add(a);
      ys.add(b);
    }
  auto a = area_of(p);
  std::ostringstream svg;
  svg << "<g transform='translate(" << x << ',' << y
      << ")' font-family='sans-serif'>"
      << "<text x='" << a.left << "' y='20' font-size='14' font-weight='bold'>"
      << xml_escape(p.title) << "</text>"
      << "<rect x='" << a.left << "' y='" << a.top << "' width='" << a.width
      << "' height='" << a.height << "' fill='#fcfcfc' stroke='#888'/>";
  if (xs.empty()) {
    svg << "<text x='" << a.left + a.width / 2 << "' y='"
        << a.top + a.height / 2
        << "' font-size='12' fill='#777' text-anchor='middle'>no data</text>"
           "</g>";
    return svg.str();
  }
  auto xt = nice_ticks(xs.lo, xs.hi);
  auto yt = nice_ticks(ys.lo, ys.hi);
  if (p.y_limits) { // ticks outside the limits go
    auto [lo, hi] = *p.y_limits;
    std::vector<double> kept;
    for (double t : yt)
      if (t >= lo - 1e-12 && t <= hi + 1e-12)
        kept.push_back(t);
    if (kept.size() >= 2)
      yt = kept;
  }
  double x0 = xt.front(), x1 = xt.back(), y0 = yt.front(), y1 = yt.back();
  auto px = [&](double v) { return a.left + (v - x0) / (x1 - x0) * a.width; };
  auto py = [&](double v) {
    return a.top + a.height - (v - y0) / (y1 - y0) * a.height;
  };
  auto xstep = xt.size() > 1 ? xt[1] - xt[0] : 1.0;
  auto ystep = yt.size() > 1 ? yt[1] - yt[0] : 1.0;
  auto xscale = scale_of(std::max(std::abs(x0), std::abs(x1)));
  auto yscale = scale_of(std::max(std::abs(y0), std::abs(y1)));
  for (double t : xt)
    svg << "<line x1='" << px(t) << "' x2='" << px(t) << "' y1='" << a.top
        << "' y2='" << a.top + a.height << "' stroke='#e3e3e3'/>"
        << "<text x='" << px(t) << "' y='" << a.top + a.height + 16
        << "' font-size='11' text-anchor='middle' class='tick'>"
        << tick_label(t, xstep, xscale) << "</text>";
  for (double t : yt)
    svg << "<line x1='" << a.left << "' x2='" << a.left + a.width << "' y1='"
        << py(t) << "' y2='" << py(t) << "' stroke='#e3e3e3'/>"
        << "<text x='" << a.left - 6 << "' y='" << py(t) + 4
        << "' font-size='11' text-anchor='end' class='tick'>"
        << tick_label(t, ystep, yscale) << "</text>";
  svg << "<text x='" << a.left + a.width / 2 << "' y='" << p.height - 8
      << "' font-size='12' text-anchor='middle'>" << xml_escape(p.x_label)
      << "</text><text transform='translate(14," << a.top + a.height / 2
      << ") rotate(-90)' font-size='12' text-anchor='middle'>"
      << xml_escape(p.y_label) << "</text>";
  for (std::size_t k = 0; k < p.lines.size(); ++k) {
    const auto& l = p.lines[k];
    if (l.points.size() > 1) {
      svg << "<polyline fill='none' stroke='" << l.colour
          << "' stroke-width='2' points='";
      for (const auto& [u, v] : l.points)
        if (std::isfinite(u) && std::isfinite(v))
          svg << px(u) << ',' << py(v) << ' ';
      svg << "'/>";
    }
    auto n = l.points.size();
    auto every = std::max<std::size_t>(1, (n + max_marked - 1) / max_marked);
    for (std::size_t i = 0; i < n; i += every) {
      auto [u, v] = l.points[i];
      if (!std::isfinite(u) || !std::isfinite(v))
        continue;
      svg << "<circle cx='" << px(u) << "' cy='" << py(v) << "' r='"
          << (n == 1 ? 4 : 2.5) << "' fill='" << l.colour << "'><title>"
          << xml_escape(l.name) << ": " << xml_escape(p.x_label) << ' '
          << short_number(u) << ", " << xml_escape(p.y_label) << ' '
          << short_number(v) << "</title></circle>";
    }
    if (p.lines.size() > 1) {
      auto ly = a.top + 14 + 16 * static_cast<double>(k);
      svg << "<line x1='" << a.left + a.width - 110 << "' x2='"
          << a.left + a.width - 92 << "' y1='" << ly - 4 << "' y2='" << ly - 4
          << "' stroke='" << l.colour << "' stroke-width='2'/><text x='"
          << a.left + a.width - 88 << "' y='" << ly << "' font-size='11'>"
          << xml_escape(l.name) << "</text>";
    }
  }
  svg << "</g>";
  return svg.str();
}

std::string svg_document(const std::string& title,
                         const std::vector<plot>& plots) {
  double width = 0, height = 0;
  for (const auto& p : plots) {
    width += p.width;
    height = std::max(height, p.height);
  }
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width
      << "' height='" << height + 28 << "' viewBox='0 0 " << width << ' '
      << height + 28 << "'><rect width='100%' height='100%' fill='white'/>"
      << "<text x='12' y='20' font-family='sans-serif' font-size='15'>"
      << xml_escape(title) << "</text>";
  double x = 0;
  for (const auto& p : plots) {
    svg << svg_group(p, x, 28);
    x += p.width;
  }
  svg << "</svg>\n";
  return svg.str();
}

} // namespace troupe::apps
