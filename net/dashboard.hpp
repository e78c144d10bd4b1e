// The monitoring dashboard: one self-contained HTML page (net/dashboard.html,
// compiled into the binary; no external assets) served at GET /.

#pragma once

#include <string>

namespace troupe::net {

/// The page's HTML.
const std::string& dashboard_html();

/// The charts' script both the dashboard and the board load (/chart.js,
/// net/chart.js).
const std::string& chart_js();

/// The board's page (troupe board, net/board.html).
const std::string& board_html();

} // namespace troupe::net
