#include "apps/run_report.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "apps/cli.hpp"

namespace troupe::apps {

namespace fs = std::filesystem;

namespace {

std::ofstream open_for_writing(const fs::path& path) {
  std::ofstream out{path};
  if (!out)
    throw std::runtime_error("cannot write " + path.string());
  return out;
}

void write_csv(const fs::path& path, const nlohmann::json& rows,
               const std::vector<std::string>& columns) {
  auto out = open_for_writing(path);
  for (std::size_t c = 0; c < columns.size(); ++c)
    out << (c ? "," : "") << columns[c];
  out << '\n';
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < columns.size(); ++c)
      out << (c ? "," : "") << row.value(columns[c], 0.0);
    out << '\n';
  }
  if (!out)
    throw std::runtime_error("cannot write " + path.string());
}

/// One panel: a polyline of (x, y) points scaled into a box.
std::string panel(const nlohmann::json& rows, const char* x, const char* y,
                  const std::string& title, double left, const char* colour) {
  const double w = 380, h = 220, top = 40;
  std::ostringstream svg;
  svg << "<g><rect x='" << left << "' y='" << top << "' width='" << w
      << "' height='" << h << "' fill='none' stroke='#999'/>"
      << "<text x='" << left << "' y='" << top - 10
      << "' font-family='sans-serif' font-size='14'>" << title << "</text>";
  if (!rows.empty()) {
    double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
    for (const auto& r : rows) {
      x0 = std::min(x0, r.value(x, 0.0));
      x1 = std::max(x1, r.value(x, 0.0));
      y0 = std::min(y0, r.value(y, 0.0));
      y1 = std::max(y1, r.value(y, 0.0));
    }
    auto sx = x1 > x0 ? w / (x1 - x0) : 0.0;
    auto sy = y1 > y0 ? h / (y1 - y0) : 0.0;
    svg << "<polyline fill='none' stroke='" << colour
        << "' stroke-width='2' points='";
    for (const auto& r : rows)
      svg << left + (r.value(x, 0.0) - x0) * sx << ','
          << top + h - (r.value(y, 0.0) - y0) * sy << ' ';
    svg << "'/><text x='" << left << "' y='" << top + h + 18
        << "' font-family='sans-serif' font-size='12'>" << x << " " << x0
        << " .. " << x1 << ", " << y << " " << y0 << " .. " << y1 << "</text>";
  }
  svg << "</g>";
  return svg.str();
}

} // namespace

void check_report_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  auto probe = fs::path{dir} / ".troupe-write-test";
  std::ofstream out{probe};
  if (ec || !out)
    throw usage_error("troupe train: --report=" + dir
                      + ": cannot create or write this directory");
  out.close();
  fs::remove(probe, ec);
}

void write_report(const std::string& dir, const nlohmann::json& series,
                  const nlohmann::json& result) {
  fs::path root{dir};
  fs::create_directories(root);
  const auto& train = series.at("train");
  const auto& evals = series.at("evaluations");
  write_csv(root / "train.csv", train,
            {"seconds", "steps", "samples", "loss", "samples_per_sec"});
  write_csv(root / "evaluations.csv", evals,
            {"seconds", "steps", "samples", "accuracy", "loss"});
  open_for_writing(root / "result.json") << result.dump(2) << '\n';
  auto svg = open_for_writing(root / "curves.svg");
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='820' height='300'>"
      << panel(train, "seconds", "loss", "training loss (smoothed)", 20,
               "#c0392b")
      << panel(evals, "seconds", "accuracy", "test accuracy", 420, "#2471a3")
      << "</svg>\n";
  if (!svg)
    throw std::runtime_error("cannot write " + (root / "curves.svg").string());
}

} // namespace troupe::apps
