#include "apps/simulate_compare.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "algos/registry.hpp"
#include "apps/cli.hpp"
#include "apps/svg_plot.hpp"
#include "optim/quote.hpp"

namespace troupe::apps {

namespace {

namespace fs = std::filesystem;

const char* const colours[] = {"#2471a3", "#c0392b", "#1e8449", "#7d3c98",
                               "#b9770e", "#17a589", "#34495e", "#d35400"};

bool has_flag(const std::string& arg, const std::string& name) {
  auto prefix = "--" + name;
  return arg == prefix || arg.rfind(prefix + "=", 0) == 0;
}

std::string value_of(const std::string& arg) {
  auto eq = arg.find('=');
  return eq == std::string::npos ? std::string{} : arg.substr(eq + 1);
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in{text};
  std::string item;
  while (std::getline(in, item, ','))
    out.push_back(item);
  return out;
}

plot over_simulated_time(std::string title, std::string y_label,
                         const std::vector<nlohmann::json>& results,
                         const char* key) {
  plot p;
  p.title = std::move(title);
  p.x_label = "simulated time (s)";
  p.y_label = std::move(y_label);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    plot_line line;
    line.name = r.value("algo", "?");
    line.colour = colours[i % (sizeof(colours) / sizeof(colours[0]))];
    if (r.contains("evaluations"))
      for (const auto& e : r["evaluations"])
        if (e.contains(key) && e[key].is_number() && e.contains("seconds"))
          line.points.emplace_back(e["seconds"].get<double>(),
                                   e[key].get<double>());
    p.lines.push_back(std::move(line));
  }
  p.width = 520;
  p.height = 330;
  return p;
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out{path};
  out << text;
  if (!out)
    throw std::runtime_error("cannot write " + path.string());
}

std::string row_of(const nlohmann::json& r) {
  const auto& acc = r.value("test_accuracy", nlohmann::json{});
  std::string line = r.value("algo", "?");
  line.resize(10, ' ');
  line += " accuracy "
          + (acc.is_number() ? fixed(acc.get<double>(), 4) : "none  ");
  line += "  " + fixed(r.value("seconds", 0.0), 2) + " simulated s";
  const auto& to_target = r.value("seconds_to_target", nlohmann::json{});
  if (to_target.is_number())
    line += ", target at " + fixed(to_target.get<double>(), 2) + " s";
  return line;
}

} // namespace

std::string compare_svg(const std::vector<nlohmann::json>& results) {
  auto accuracy = over_simulated_time("Test accuracy", "accuracy", results,
                                      "test_accuracy");
  accuracy.y_limits = std::make_pair(0.0, 1.0);
  auto loss = over_simulated_time("Test loss", "loss", results, "test_loss");
  return svg_document("troupe simulate: algorithms compared", {accuracy, loss});
}

int simulate_compare(const std::vector<std::string>& args) {
  std::vector<std::string> algos, rest;
  std::string report;
  bool json = false;
  for (const auto& a : args) {
    if (has_flag(a, "compare"))
      algos = split(value_of(a));
    else if (has_flag(a, "report"))
      report = value_of(a);
    else if (has_flag(a, "json"))
      json = value_of(a) != "false";
    else if (has_flag(a, "algo")) {
      std::cerr << "troupe simulate: --compare names the algorithms; drop "
                   "--algo\n";
      return 2;
    } else
      rest.push_back(a);
  }
  std::set<std::string> seen;
  for (const auto& name : algos) {
    if (!algos::has_algorithm(name)) {
      auto all = algos::algorithms_where([](const algos::algorithm& a) {
        return a.run_by() == algos::runner::coordinator;
      });
      std::cerr << "troupe simulate: --compare: unknown algorithm "
                << optim::quote(name) << " (this build simulates "
                << algos::joined_names(all) << ")\n";
      return 2;
    }
    if (!seen.insert(name).second) {
      std::cerr << "troupe simulate: --compare names " << name << " twice\n";
      return 2;
    }
  }
  if (algos.size() < 2 || algos.size() > 8) {
    std::cerr << "troupe simulate: --compare takes 2 to 8 algorithms, "
                 "comma-separated (e.g. --compare=sgp,allreduce)\n";
    return 2;
  }
  std::vector<nlohmann::json> results;
  for (const auto& name : algos) {
    auto one = rest;
    one.push_back("--algo=" + name);
    if (!report.empty())
      one.push_back("--report=" + (fs::path{report} / name).string());
    auto captured = std::make_shared<nlohmann::json>();
    auto status = simulate_with(one, captured);
    if (status != 0)
      return status;
    (*captured)["algo"] = name;
    results.push_back(std::move(*captured));
  }
  std::cerr << "troupe simulate: compared on one simulated cluster:\n";
  for (const auto& r : results)
    std::cerr << "  " << row_of(r) << '\n';
  return guarded_main("troupe simulate", [&] {
    if (!report.empty()) {
      auto svg = compare_svg(results);
      write_file(fs::path{report} / "compare.svg", svg);
      std::ostringstream html;
      html << "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
           << "<title>troupe simulate: algorithms compared</title></head>"
           << "<body style='font-family:sans-serif'><h1>Algorithms compared "
              "on one simulated cluster</h1>"
           << svg
           << "<table border='1' cellpadding='4' style='border-collapse:"
              "collapse'><tr><th>algorithm</th><th>test accuracy</th>"
              "<th>training (simulated s)</th><th>simulated s</th>"
              "<th>network bytes</th><th>report</th></tr>";
      for (const auto& r : results) {
        auto name = r.value("algo", "?");
        const auto& sim = r["simulation"];
        html << "<tr><td>" << xml_escape(name) << "</td><td>"
             << xml_escape(r.value("test_accuracy", nlohmann::json{}).dump())
             << "</td><td>" << fixed(r.value("seconds", 0.0), 3) << "</td><td>"
             << fixed(sim.value("simulated_seconds", 0.0), 3) << "</td><td>"
             << sim.value("network_bytes", std::uint64_t{0})
             << "</td><td><a href='" << xml_escape(name) << "/index.html'>"
             << xml_escape(name) << "</a></td></tr>";
      }
      html << "</table></body></html>\n";
      write_file(fs::path{report} / "index.html", html.str());
      std::cerr << "troupe simulate: comparison in "
                << (fs::path{report} / "index.html").string() << '\n';
    }
    if (json)
      std::cout << nlohmann::json{{"compare", results}}.dump() << std::endl;
    return 0;
  });
}

} // namespace troupe::apps
