// The aggregation flags of an algorithm whose shards combine rounds of
// pushes (sync): --aggregation, the rule of optim/aggregate.hpp, and the
// robust rules' settings (optim/robust.hpp), checked only where they apply.

#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/string_view.hpp>

#include "optim/aggregate.hpp"

namespace troupe::algos {

struct aggregation_flags {
  std::string rule = "mean";
  std::uint64_t f = 0;      ///< Byzantine pushes tolerated
  std::uint64_t m = 0;      ///< multi-Krum's average (0: n - f)
  double clip_radius = 1.0; ///< centered clipping's tau
  std::uint64_t clip_iterations = 3;

  /// What the rule combines: a shard's round of pushes (every flag), a
  /// DS-Sync group's models (one clipping step: no --agg-clip-iterations),
  /// or SGP's shares one at a time (mean or cclip; no f, m nor iterations).
  enum class combining { pushes, group, shares };

  /// Binds the flags that apply under `category` ("?sync").
  void bind(caf::config_option_set& set, caf::string_view category,
            combining what = combining::pushes);

  /// Throws std::invalid_argument naming the flag: an unknown rule, a
  /// rule's setting given for another rule, a value out of range, or
  /// --agg-f too large for `workers` (Krum: workers > 2f + 2; trimmed
  /// mean: workers > 2f; CGE, multi-Krum: workers > f). `counted` names
  /// what the rule sees a round of in the messages ("workers").
  void check(const std::set<std::string>& given, std::uint64_t workers,
             const std::string& counted = "workers") const;

  /// The rule's settings.
  optim::rule_options options() const;
};

} // namespace troupe::algos
