// The checks of troupe train's flags that depend on the algorithm: every
// flag that does not fit it is refused by name, before anything starts.
// The algorithm checks its own flags (algos/<name>/); this file the common
// ones it does not take.

#include <algorithm>
#include <string>

#include "apps/cli.hpp"
#include "apps/cluster_train.hpp"

namespace troupe::apps {

void validate_algorithm(const train_options& o) {
  const auto& algo = o.algorithm_ref();
  auto fail = [&](const std::string& what) {
    throw usage_error("troupe train: --algo=" + o.algo + ": " + what);
  };
  if (algo.run_by() != algos::runner::single_loop) {
    if (o.workers < 1 || o.workers > o.max_workers)
      fail("--workers must be in [1, " + std::to_string(o.max_workers) + "]");
    if (o.shards < 1 || o.shards > 1024)
      fail("--shards must be in [1, 1024]");
  }
  if (!algo.uses_shards(o) && o.shards != 1)
    fail(o.algo
         + " has no parameter shards with these options; leave "
           "--shards out");
  std::vector<std::string> ignored;
  for (const auto& name : algo.ignored_flags())
    if (o.given.count(name))
      ignored.push_back("--" + name);
  if (!ignored.empty()) {
    std::string list;
    for (const auto& f : ignored)
      list += (list.empty() ? "" : ", ") + f;
    fail(list + (ignored.size() == 1 ? " does" : " do") + " not apply to "
         + o.algo);
  }
  if (!(o.request_timeout > 0))
    fail("--request-timeout must be positive");
  try {
    algo.check_flags(o, o.given);
  } catch (const std::invalid_argument& e) {
    fail(e.what());
  }
}

} // namespace troupe::apps
