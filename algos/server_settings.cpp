#include "algos/server_settings.hpp"

#include <algorithm>
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

/// Downpour's default server rate (plain SGD) relative to the model's rate.
/// Asynchrony acts like extra momentum (about 1 - 1/W with W workers, the
/// mean staleness W - 1), so W workers move the parameters about W times
/// as far per server step: the shards default to plain SGD at a rate that
/// keeps W times it at 8x the model's, at most 4x (on mlp with 2 workers
/// 1.8 s to 0.88 against 2.2 s with momentum 0.9, docs/benchmarks.md). A
/// fixed 4x diverged with 8 workers (mlp, both seeds tried) and on lenet
/// with 4 (seed 2), and on mlp with 4 workers over two processes of a
/// loaded machine (CI).
double async_server_lr_factor(std::uint64_t workers) {
  return std::min(
      4.0, 8.0 / static_cast<double>(std::max<std::uint64_t>(workers, 1)));
}

} // namespace troupe::algos
