#include "apps/run_report.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "apps/cli.hpp"
#include "apps/svg_plot.hpp"
#include "net/board.hpp"

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
  // Counts as the integers they are (a double's default 6 digits printed
  // 1234567 samples as 1.23457e+06), other numbers to 9 digits.
  auto cell = [](const nlohmann::json& v) -> std::string {
    if (v.is_number_integer())
      return v.dump();
    if (v.is_number()) {
      char buf[40];
      std::snprintf(buf, sizeof(buf), "%.9g", v.get<double>());
      return buf;
    }
    return "0";
  };
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      auto it = row.find(columns[c]);
      out << (c ? "," : "") << (it == row.end() ? "0" : cell(*it));
    }
    out << '\n';
  }
  if (!out)
    throw std::runtime_error("cannot write " + path.string());
}

/// The (x, y) points of `rows`' columns.
std::vector<std::pair<double, double>> points(const nlohmann::json& rows,
                                              const char* x, const char* y) {
  std::vector<std::pair<double, double>> out;
  for (const auto& r : rows)
    out.emplace_back(r.value(x, 0.0), r.value(y, 0.0));
  return out;
}

/// "downpour, mlp, 4 workers, 2 shards, seed 1" from the run's result.
std::string run_title(const nlohmann::json& result) {
  std::ostringstream t;
  t << "troupe: " << result.value("algo", std::string{"run"});
  if (result.contains("model") && result["model"].is_string())
    t << ", " << result["model"].get<std::string>();
  auto workers = result.value("workers", std::uint64_t{0});
  if (workers > 0)
    t << ", " << workers << (workers == 1 ? " worker" : " workers");
  auto shards = result.value("shards", std::uint64_t{0});
  if (shards > 0)
    t << ", " << shards << (shards == 1 ? " shard" : " shards");
  if (result.contains("seed"))
    t << ", seed " << result["seed"].dump();
  return t.str();
}

/// A chart of one line over time.
plot over_time(std::string title, std::string y_label, plot_line line) {
  plot p;
  p.title = std::move(title);
  p.x_label = "time (s)";
  p.y_label = std::move(y_label);
  p.lines.push_back(std::move(line));
  return p;
}

/// The report's charts: loss and accuracy (curves.svg), throughput.
std::vector<plot> charts(const nlohmann::json& series) {
  const auto& train = series.at("train");
  const auto& evals = series.at("evaluations");
  auto accuracy = over_time(
      "Test accuracy", "accuracy",
      {"test accuracy", "#2471a3", points(evals, "seconds", "accuracy")});
  accuracy.y_limits = std::make_pair(0.0, 1.0);
  return {
      over_time("Training loss (smoothed)", "loss",
                {"training loss", "#c0392b", points(train, "seconds", "loss")}),
      accuracy,
      over_time("Throughput", "samples/s",
                {"samples/s", "#1e8449",
                 points(train, "seconds", "samples_per_sec")})};
}

/// The figures of the result that a reader looks for first.
std::string figures_table(const nlohmann::json& result) {
  std::ostringstream html;
  html << "<table>";
  for (const auto& k : net::result_figures())
    if (result.contains(k) && !result[k].is_null())
      html << "<tr><th>" << k << "</th><td>"
           << xml_escape(result[k].is_string() ? result[k].get<std::string>()
                                               : result[k].dump())
           << "</td></tr>";
  html << "</table>";
  return html.str();
}

void write_index(const fs::path& root, const std::string& title,
                 const std::vector<plot>& plots, const nlohmann::json& result) {
  auto out = open_for_writing(root / "index.html");
  out << "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
      << "<title>" << xml_escape(title) << "</title><style>"
      << "body{font-family:sans-serif;margin:16px;max-width:1300px}"
      << "table{border-collapse:collapse}th,td{border:1px solid #ccc;"
      << "padding:3px 8px;text-align:left}th{background:#f3f3f3}"
      << ".charts svg{max-width:100%;height:auto}</style></head><body>"
      << "<h1>" << xml_escape(title) << "</h1>";
  if (result.contains("error"))
    out << "<p><b>error:</b> "
        << xml_escape(result["error"].is_string()
                          ? result["error"].get<std::string>()
                          : result["error"].dump())
        << "</p>";
  out << "<div class='charts'>";
  for (const auto& p : plots) // inline: opens from the file, no server
    out << "<svg xmlns='http://www.w3.org/2000/svg' width='" << p.width
        << "' height='" << p.height << "' viewBox='0 0 " << p.width << ' '
        << p.height << "'>" << svg_group(p, 0, 0) << "</svg>";
  out << "</div><h2>Result</h2>" << figures_table(result)
      << "<h2>Files</h2><ul>"
      << "<li><a href='result.json'>result.json</a>: the whole result</li>"
      << "<li><a href='train.csv'>train.csv</a>: the training curve</li>"
      << "<li><a href='evaluations.csv'>evaluations.csv</a>: every "
         "evaluation</li>"
      << "<li><a href='curves.svg'>curves.svg</a>, <a href='throughput.svg'>"
         "throughput.svg</a>: the charts</li>"
      << "<li><a href='model.safetensors'>model.safetensors</a>: the final "
         "model (<code>troupe eval --model=model.safetensors</code>)</li>"
      << "</ul></body></html>\n";
  if (!out)
    throw std::runtime_error("cannot write " + (root / "index.html").string());
}

void write_text(const fs::path& path, const std::string& text) {
  auto out = open_for_writing(path);
  out << text;
  if (!out)
    throw std::runtime_error("cannot write " + path.string());
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
  write_csv(
      root / "train.csv", train,
      {"seconds", "steps", "samples", "bytes", "loss", "samples_per_sec"});
  write_csv(root / "evaluations.csv", evals,
            {"seconds", "steps", "samples", "bytes", "accuracy", "loss"});
  open_for_writing(root / "result.json") << result.dump(2) << '\n';
  auto title = run_title(result);
  auto plots = charts(series);
  write_text(root / "curves.svg", svg_document(title, {plots[0], plots[1]}));
  write_text(root / "throughput.svg", svg_document(title, {plots[2]}));
  write_index(root, title, plots, result);
}

} // namespace troupe::apps
