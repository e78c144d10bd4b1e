#pragma once

// Runs `troupe train` in-process with stdout and stderr captured.

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "apps/train_command.hpp"

namespace troupe::test {

/// What train_main returned and printed.
struct run_result {
  int status;
  std::string out;
  std::string err;
};

/// Runs train_main with `args`, capturing stdout and stderr.
inline run_result run_train_main(std::vector<std::string> args) {
  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  int status = apps::train_main(args);
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  return {status, out.str(), err.str()};
}

} // namespace troupe::test
