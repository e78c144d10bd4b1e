#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace troupe::apps {

/// `troupe top --connect=HOST:PORT`: a refreshing terminal view of a running
/// job's monitoring endpoint (GET /api/cluster and /api/series).
int top_main(const std::vector<std::string>& args);

/// One frame of the view from /api/cluster and /api/series (stuck actors
/// marked with '!', and red when `color`).
std::string render_top(const nlohmann::json& cluster,
                       const nlohmann::json& series, bool color);

} // namespace troupe::apps
