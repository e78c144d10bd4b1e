// The monitoring dashboard: one self-contained HTML page (net/dashboard.html,
// compiled into the binary; no external assets) served at GET /.

#pragma once

#include <string>

namespace troupe::net {

/// The page's HTML.
const std::string& dashboard_html();

} // namespace troupe::net
