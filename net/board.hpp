// The runs under a directory of reports, for `troupe board --logdir=DIR`:
// each subdirectory a run of `troupe train --report=DIR/NAME`, finished
// (result.json and the curves' CSV) or still running (live.json, written at
// its start, with its dashboard's address), served over HTTP with the board
// page (net/board.html): GET /api/runs lists them, GET /api/series?run=NAME
// gives one's curves (read from its files, or from its live dashboard).

#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "net/http_server.hpp"

namespace troupe::net {

/// The rows of a report's CSV file (a header of column names, then numbers)
/// as JSON objects. Throws std::runtime_error naming the file and the line
/// of a malformed one, or a file over `max_bytes`.
nlohmann::json read_csv_rows(const std::string& path,
                             std::size_t max_bytes = std::size_t{64} << 20);

/// The keys of a run's result a reader compares first (the board's figures,
/// the report's index.html table), in that order.
const std::vector<std::string>& result_figures();

class run_board {
public:
  /// The runs under `logdir` (read again on every request).
  explicit run_board(std::string logdir);

  /// GET /api/runs: {"logdir", "runs": [{"name", "status" (finished,
  /// failed, live or lost), "figures" (the result's main numbers), "result"
  /// (its other plain values: the run's options), "failures", "error",
  /// "monitor" (a live run's dashboard)}]}, by name; at most 1000 runs.
  nlohmann::json runs() const;

  /// GET /api/series?run=NAME: {"train": [...], "evaluations": [...]} of
  /// run NAME (one of runs()), or 404 naming it.
  http_response series(const std::string& query) const;

  /// /, /chart.js, /api/runs, /api/series.
  std::map<std::string, http_handler> routes() const;

  /// The routes that carry no data (the page and its script).
  static std::set<std::string> public_paths();

private:
  std::string logdir_;
};

/// The file a running `troupe train --report=DIR` keeps in DIR until its
/// report is written: {"monitor": URL or null, "pid", "algo"}.
constexpr const char* live_file = "live.json";

} // namespace troupe::net
