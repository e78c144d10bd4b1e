// Byzantine workers in a job (issue [15]): --byzantine=F makes the last F
// workers attack as --attack says (optim/attack.hpp), for any algorithm run
// by actors; the run's JSON says who attacked and how.

#pragma once

#include <functional>
#include <memory>

#include <nlohmann/json.hpp>

#include "actors/coordinator.hpp"
#include "apps/train_command.hpp"
#include "optim/replica.hpp"

namespace troupe::apps {

/// Throws usage_error naming the flag: an unknown attack, F not below the
/// workers, an attack's setting out of range, an attack flag without
/// --byzantine, or an algorithm without actor workers.
void check_byzantine(const train_options& o);

/// Wraps job.make_replica: every worker pushes its momentum with
/// --worker-momentum (optim/worker_momentum.hpp); workers W - F .. W - 1
/// compute through a byzantine_replica; `make_scout` makes the replica over the
/// data every attacker estimates the honest mean and spread from (ALIE, IPM).
void add_byzantine(const train_options& o, actors::job_config& job,
                   std::function<std::unique_ptr<optim::replica>()> make_scout,
                   int classes);

/// {"workers": [ids], "attack", its settings, "z" for ALIE}; null without
/// --byzantine.
nlohmann::json byzantine_report(const train_options& o);

} // namespace troupe::apps
