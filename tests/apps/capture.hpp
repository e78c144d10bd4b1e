#pragma once

// Runs `troupe train` (or `troupe simulate`) in-process with stdout and
// stderr captured.

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "apps/simulate_command.hpp"
#include "apps/train_command.hpp"

namespace troupe::test {

/// What train_main returned and printed.
struct run_result {
  int status;
  std::string out;
  std::string err;
};

/// Runs train_main (simulate_main) with `args`, capturing stdout and stderr.
inline run_result run_train_main(std::vector<std::string> args,
                                 bool simulate = false) {
  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  int status = simulate ? apps::simulate_main(args) : apps::train_main(args);
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  return {status, out.str(), err.str()};
}

} // namespace troupe::test
