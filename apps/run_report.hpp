#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace troupe::apps {

/// Checks up front that `dir` can be created and written (a run must not
/// train for an hour and then fail to save); throws usage_error naming it.
void check_report_dir(const std::string& dir);

/// Writes a finished run's report into `dir`: train.csv (the training
/// curve), evaluations.csv, result.json, curves.svg (training loss and
/// test accuracy over time) and throughput.svg (samples/s), charts with
/// axes, grid and the run's title (svg_plot.hpp), and index.html, which
/// shows them with the run's main figures and opens without a server. `series`
/// is a job_monitor's series(). Throws std::runtime_error naming the file it
/// could not write.
void write_report(const std::string& dir, const nlohmann::json& series,
                  const nlohmann::json& result);

} // namespace troupe::apps
