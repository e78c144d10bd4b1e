#include "net/board.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <signal.h>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "net/dashboard.hpp"
#include "net/http_client.hpp"

namespace troupe::net {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t max_runs = 1000;
constexpr std::size_t max_json_bytes = std::size_t{16} << 20;

std::string read_capped(const fs::path& path, std::size_t max_bytes) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec)
    throw std::runtime_error(path.string() + ": cannot read it");
  if (size > max_bytes)
    throw std::runtime_error(path.string() + ": " + std::to_string(size)
                             + " bytes, more than the "
                             + std::to_string(max_bytes) + " read");
  std::ifstream in{path, std::ios::binary};
  std::ostringstream s;
  s << in.rdbuf();
  if (!in && !in.eof())
    throw std::runtime_error(path.string() + ": cannot read it");
  return s.str();
}

nlohmann::json read_json(const fs::path& path) {
  auto j = nlohmann::json::parse(read_capped(path, max_json_bytes), nullptr,
                                 false);
  if (j.is_discarded() || !j.is_object())
    throw std::runtime_error(path.string() + ": not a JSON object");
  return j;
}

/// "http://HOST:PORT/..." -> HOST:PORT; throws std::invalid_argument.
endpoint endpoint_of(const std::string& url) {
  const std::string scheme = "http://";
  if (url.compare(0, scheme.size(), scheme) != 0)
    throw std::invalid_argument("not an http:// address: " + url);
  auto rest = url.substr(scheme.size());
  return parse_endpoint(rest.substr(0, rest.find('/')), "monitor");
}

/// %XX and + decoded.
std::string url_decode(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size()
               && std::isxdigit(static_cast<unsigned char>(s[i + 1]))
               && std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

/// The value of `key` in a query string ("" if absent).
std::string query_value(const std::string& query, const std::string& key) {
  std::istringstream in{query};
  std::string part;
  while (std::getline(in, part, '&'))
    if (part.compare(0, key.size() + 1, key + "=") == 0)
      return url_decode(part.substr(key.size() + 1));
  return {};
}

/// The run directories under `logdir`, by name ("." for logdir itself when
/// it is a report).
std::vector<std::pair<std::string, fs::path>> run_dirs(const fs::path& root) {
  std::vector<std::pair<std::string, fs::path>> out;
  auto is_run = [](const fs::path& d) {
    std::error_code ec;
    return fs::exists(d / "result.json", ec) || fs::exists(d / live_file, ec);
  };
  if (is_run(root))
    out.emplace_back(".", root);
  std::error_code ec;
  for (fs::directory_iterator it{root, ec}, end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_directory(ec) && is_run(it->path()))
      out.emplace_back(it->path().filename().string(), it->path());
  }
  std::sort(out.begin(), out.end());
  if (out.size() > max_runs)
    out.resize(max_runs);
  return out;
}

/// A live run's file, if its process still runs.
std::optional<nlohmann::json> live_run(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir / live_file, ec))
    return std::nullopt;
  auto live = read_json(dir / live_file);
  auto pid = live.value("pid", 0L);
  if (pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM))
    return live;
  return std::nullopt;
}

nlohmann::json describe(const std::string& name, const fs::path& dir) {
  nlohmann::json run{{"name", name}};
  std::error_code ec;
  try {
    // A run going on in a directory that holds an earlier run's report is
    // the live one.
    if (auto live = live_run(dir)) {
      run["status"] = "live";
      run["figures"] = nlohmann::json::object();
      for (const char* k : {"algo", "model", "workers", "seed"})
        if (live->contains(k) && !(*live)[k].is_structured())
          run["figures"][k] = (*live)[k];
      if (live->contains("monitor") && (*live)["monitor"].is_string())
        run["monitor"] = (*live)["monitor"];
      return run;
    }
    if (fs::exists(dir / "result.json", ec)) {
      auto result = read_json(dir / "result.json");
      nlohmann::json figures = nlohmann::json::object(),
                     options = nlohmann::json::object();
      for (const auto& k : result_figures())
        if (result.contains(k))
          figures[k] = result[k];
      for (auto& [k, v] : result.items())
        if (!v.is_structured() && !figures.contains(k))
          options[k] = v;
      run["figures"] = figures;
      run["result"] = options;
      run["failures"] = result.value("failures", nlohmann::json::array());
      if (result.contains("error")) {
        run["status"] = "failed";
        run["error"] = result["error"];
      } else {
        run["status"] = "finished";
      }
      return run;
    }
    auto live = read_json(dir / live_file);
    run["status"] = "lost";
    run["figures"] = {{"algo", live.value("algo", std::string{})}};
    run["error"] = "its process (" + std::to_string(live.value("pid", 0L))
                   + ") ended without writing its report";
  } catch (const std::exception& e) {
    run["status"] = "unreadable";
    run["error"] = e.what();
  }
  return run;
}

} // namespace

nlohmann::json read_csv_rows(const std::string& path, std::size_t max_bytes) {
  std::istringstream in{read_capped(path, max_bytes)};
  std::string line;
  std::vector<std::string> columns;
  if (std::getline(in, line)) {
    std::istringstream header{line};
    std::string c;
    while (std::getline(header, c, ','))
      columns.push_back(c);
  }
  auto rows = nlohmann::json::array();
  std::size_t number = 1;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty())
      continue;
    std::istringstream cells{line};
    std::string cell;
    nlohmann::json row = nlohmann::json::object();
    std::size_t i = 0;
    for (; std::getline(cells, cell, ','); ++i) {
      char* end = nullptr;
      errno = 0;
      double v = std::strtod(cell.c_str(), &end);
      if (i >= columns.size() || end == cell.c_str() || *end != '\0'
          || errno == ERANGE)
        throw std::runtime_error(path + ": line " + std::to_string(number)
                                 + " is not " + std::to_string(columns.size())
                                 + " numbers");
      row[columns[i]] = v;
    }
    if (i != columns.size())
      throw std::runtime_error(path + ": line " + std::to_string(number)
                               + " is not " + std::to_string(columns.size())
                               + " numbers");
    rows.push_back(std::move(row));
  }
  return rows;
}

const std::vector<std::string>& result_figures() {
  static const std::vector<std::string> keys{
      "algo",           "model",           "workers",   "shards",
      "seed",           "steps",           "samples",   "seconds",
      "epochs",         "test_accuracy",   "test_loss", "stop_reason",
      "reached_target", "samples_per_sec", "messages",  "bytes_sent",
      "param_hash"};
  return keys;
}

run_board::run_board(std::string logdir) : logdir_(std::move(logdir)) {}

nlohmann::json run_board::runs() const {
  auto list = nlohmann::json::array();
  for (const auto& [name, dir] : run_dirs(logdir_))
    list.push_back(describe(name, dir));
  return {{"logdir", logdir_}, {"runs", list}};
}

http_response run_board::series(const std::string& query) const {
  auto name = query_value(query, "run");
  auto error = [](unsigned status, const std::string& why) {
    return http_response{status, "application/json",
                         nlohmann::json{{"error", why}}.dump()};
  };
  for (const auto& [n, dir] : run_dirs(logdir_)) {
    if (n != name)
      continue;
    try {
      std::error_code ec;
      auto live = live_run(dir);
      if (!live && fs::exists(dir / "result.json", ec)) {
        nlohmann::json out{
            {"train", read_csv_rows((dir / "train.csv").string())},
            {"evaluations", read_csv_rows((dir / "evaluations.csv").string())}};
        return {200, "application/json", out.dump()};
      }
      if (!live)
        return error(404, "run " + name
                              + " has no report: its process ended "
                                "before writing it");
      if (!live->contains("monitor") || !(*live)["monitor"].is_string())
        return error(404, "run " + name
                              + " is running without --monitor: "
                                "its curves come with its report");
      auto reply = http_get(endpoint_of((*live)["monitor"].get<std::string>()),
                            "/api/series", "", std::chrono::seconds{2});
      if (reply.status != 200)
        return error(
            502, "run " + name + "'s dashboard answered HTTP "
                     + std::to_string(reply.status)
                     + (reply.status == 401 ? " (it needs its token)" : ""));
      return {200, "application/json", reply.body};
    } catch (const std::exception& e) {
      return error(502, "run " + name + ": " + e.what());
    }
  }
  return error(404, "no run '" + name + "' under " + logdir_);
}

std::map<std::string, http_handler> run_board::routes() const {
  auto routes = asset_routes();
  routes.insert(
      {{"/",
        [](const std::string&) {
          return http_response{200, "text/html; charset=utf-8", board_html()};
        }},
       {"/api/runs",
        [this](const std::string&) {
          return http_response{200, "application/json", runs().dump()};
        }},
       {"/api/series",
        [this](const std::string& query) { return series(query); }}});
  return routes;
}

std::set<std::string> run_board::public_paths() {
  return page_paths();
}

} // namespace troupe::net
