#include "algos/server_settings.hpp"

#include <stdexcept>

#include "optim/optimizer.hpp"

namespace troupe::algos {

void check_server_optimizer(const std::string& name, const std::string& flag) {
  if (name.empty())
    return;
  optim::optimizer_options opt;
  opt.name = name;
  try {
    optim::check_optimizer(opt);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(flag + ": " + e.what());
  }
}

} // namespace troupe::algos
