#include "apps/top_command.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <thread>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "apps/cli.hpp"
#include "net/http_client.hpp"

namespace troupe::apps {

namespace {

using nlohmann::json;

std::atomic<bool> interrupted{false};

extern "C" void on_signal(int) {
  interrupted = true;
}

std::string human_bytes(double n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (n >= 1024 && i < 4) {
    n /= 1024;
    ++i;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, i ? "%.1f %s" : "%.0f %s", n, units[i]);
  return buf;
}

std::string ago(const json& ms) {
  if (!ms.is_number())
    return "never";
  char buf[32];
  auto v = ms.get<double>();
  if (v < 1000)
    std::snprintf(buf, sizeof buf, "%.0f ms", v);
  else
    std::snprintf(buf, sizeof buf, "%.1f s", v / 1000);
  return buf;
}

std::string num(const json& x, const char* fmt = "%.0f") {
  if (!x.is_number())
    return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, x.get<double>());
  return buf;
}

/// Fetches a route's JSON; throws with a message for the user.
json fetch(const net::endpoint& at, const std::string& path,
           const std::string& token) {
  auto r = net::http_get(at, path, token);
  if (r.status == 401)
    throw std::runtime_error("the endpoint refused the token; pass --token "
                             "or --token-file");
  if (r.status != 200)
    throw std::runtime_error(path + " answered HTTP "
                             + std::to_string(r.status));
  try {
    auto j = json::parse(r.body);
    if (!j.is_object())
      throw std::runtime_error("not an object");
    return j;
  } catch (const std::exception& e) {
    throw std::runtime_error(path
                             + " answered something that is not troupe "
                               "monitoring JSON: "
                             + e.what());
  }
}

} // namespace

std::string render_top(const json& cluster, const json& series, bool color) {
  std::ostringstream out;
  const auto& job = cluster.at("job");
  std::string rate = "-";
  if (series.contains("train") && !series["train"].empty())
    rate = num(series["train"].back()["samples_per_sec"]);
  out << "troupe " << job.value("algo", "?") << "  "
      << (job.value("running", false) ? "running" : "ended") << "  "
      << num(job["seconds"], "%.1f") << " s  steps " << num(job["steps"])
      << "  samples/s " << rate << "  loss " << num(job["loss"], "%.4f")
      << "  accuracy " << num(job["accuracy"], "%.4f") << "\n\n";
  for (auto& n : cluster.at("nodes"))
    out << "node " << n.value("name", "?") << "  " << n.value("state", "?")
        << "  seen " << ago(n["last_seen_ms"]) << " ago\n";
  auto actors = cluster.at("actors");
  std::sort(actors.begin(), actors.end(), [](const json& a, const json& b) {
    return std::make_pair(a.value("node", ""), a.value("name", ""))
           < std::make_pair(b.value("node", ""), b.value("name", ""));
  });
  char line[512];
  std::snprintf(line, sizeof line,
                "\n  %-18s %-12s %-14s %-6s %-11s %10s %9s %9s %10s %10s %12s "
                "%4s %10s %10s\n",
                "NAME", "ROLE", "NODE", "STATE", "ACTIVITY", "MBOX(max)",
                "MSG-IN", "MSG-OUT", "BYTES-IN", "BYTES-OUT", "HANDLER-ms",
                "ERR", "PROGRESS", "SAMPLES/s");
  out << line;
  std::vector<std::string> stuck;
  for (auto& a : actors) {
    auto state = a.value("state", "?");
    bool is_stuck = state == "stuck";
    if (is_stuck)
      stuck.push_back(a.value("name", "?") + " on " + a.value("node", "?")
                      + ": no progress for " + ago(a["last_progress_ms"]));
    auto mbox = num(a["mailbox"]) + "(" + num(a["mailbox_max"]) + ")";
    std::snprintf(
        line, sizeof line,
        "%s%s %-18s %-12s %-14s %-6s %-11s %10s %9s %9s %10s %10s %12s %4s "
        "%10s %10s%s\n",
        is_stuck && color ? "\x1b[31m" : "", is_stuck ? "!" : " ",
        a.value("name", "?").c_str(), a.value("role", "?").c_str(),
        a.value("node", "?").c_str(), state.c_str(),
        a.value("activity", "").c_str(), mbox.c_str(),
        num(a["messages_in"]).c_str(), num(a["messages_out"]).c_str(),
        human_bytes(a.value("bytes_in", 0.0)).c_str(),
        human_bytes(a.value("bytes_out", 0.0)).c_str(),
        num(a["handler_ms"], "%.1f").c_str(), num(a["errors"]).c_str(),
        ago(a["last_progress_ms"]).c_str(), num(a["samples_per_sec"]).c_str(),
        is_stuck && color ? "\x1b[0m" : "");
    out << line;
  }
  out << '\n'
      << (stuck.empty() ? std::string{"no actor is stuck"}
                        : "STUCK: " +
                              [&] {
                                std::string s;
                                for (auto& x : stuck)
                                  s += (s.empty() ? "" : "; ") + x;
                                return s;
                              }())
      << '\n';
  return out.str();
}

int top_main(const std::vector<std::string>& args) {
  std::string connect, token, token_file;
  double interval = 1;
  bool once = false;
  option_parser p{"troupe top"};
  p.add(connect, "connect",
        "HOST:PORT of a job's monitoring endpoint (troupe train --monitor)")
      .add(token, "token", "bearer token (--monitor-token of the job)")
      .add(token_file, "token-file", "read the bearer token from a file")
      .add(interval, "interval", "seconds between refreshes (default 1)")
      .add(once, "once", "print one view and exit");
  return guarded_main("troupe top", [&] {
    if (!p.parse(args))
      return 0;
    if (connect.empty())
      throw usage_error("troupe top: --connect=HOST:PORT is required");
    if (!(interval > 0) || interval > 3600)
      throw usage_error("troupe top: --interval must be in (0, 3600] seconds");
    net::endpoint at;
    try {
      at = net::parse_endpoint(connect, "--connect");
    } catch (const std::invalid_argument& e) {
      throw usage_error(std::string{"troupe top: "} + e.what());
    }
    if (!token_file.empty())
      token = net::read_token_file(token_file);
    bool tty = ::isatty(STDOUT_FILENO) != 0;
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    auto failing_since = std::chrono::steady_clock::time_point{};
    bool shown = false;
    std::string last;
    while (!interrupted) {
      try {
        auto cluster = fetch(at, "/api/cluster", token);
        auto series = fetch(at, "/api/series", token);
        last = render_top(cluster, series, tty);
        failing_since = {};
        shown = true;
        std::cout << (tty && !once ? "\x1b[H\x1b[2J" : "") << last
                  << std::flush;
        if (once || !cluster.at("job").value("running", true))
          return 0;
      } catch (const std::exception& e) {
        // A first failure ends it; later ones are retried for 10 s (the job
        // may be busy, or just ended and taken its endpoint along).
        auto now = std::chrono::steady_clock::now();
        if (!shown || once)
          throw;
        if (failing_since == std::chrono::steady_clock::time_point{})
          failing_since = now;
        if (now - failing_since > std::chrono::seconds{10})
          throw;
        std::cout << (tty ? "\x1b[H\x1b[2J" : "") << last
                  << "(retrying: " << e.what() << ")\n"
                  << std::flush;
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(interval));
    }
    return 0;
  });
}

} // namespace troupe::apps
