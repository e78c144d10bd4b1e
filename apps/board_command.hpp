#pragma once

#include <string>
#include <vector>

namespace troupe::apps {

/// `troupe board --logdir=DIR`: serves one page comparing the runs under
/// DIR (each `troupe train --report=DIR/NAME`, finished or live; net/board.hpp)
/// until Ctrl-C.
int board_main(const std::vector<std::string>& args);

} // namespace troupe::apps
