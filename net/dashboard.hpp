// The monitoring dashboard: one self-contained HTML page (net/dashboard.html,
// compiled into the binary; no external assets) served at GET /.

#pragma once

#include <map>
#include <set>
#include <string>

#include "net/http_server.hpp"

namespace troupe::net {

/// The page's HTML.
const std::string& dashboard_html();

/// The charts' script both the dashboard and the board load (/chart.js,
/// net/chart.js).
const std::string& chart_js();

/// Their shared style (/page.css, net/page.css).
const std::string& page_css();

/// The routes of the assets both pages load: /chart.js and /page.css.
std::map<std::string, http_handler> asset_routes();

/// The paths that carry no data: "/" (the page) and the assets.
std::set<std::string> page_paths();

/// The board's page (troupe board, net/board.html).
const std::string& board_html();

} // namespace troupe::net
