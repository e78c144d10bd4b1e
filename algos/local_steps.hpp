// What the algorithms whose workers take local steps share (EASGD, LSGD,
// SGP, DS-Sync, ShadowSync): the check of the workers' own optimizer, rate
// and schedule.

#pragma once

#include <string>

#include "actors/coordinator.hpp"
#include "algos/algorithm.hpp"

namespace troupe::algos {

/// Throws std::invalid_argument naming `algo` if the workers' local rate is
/// not positive (0 allowed with `zero_ok`: pure averaging), the local
/// optimizer is unknown, or the local schedule is invalid.
void check_local_steps(const actors::job_config& job, const std::string& algo,
                       bool zero_ok);

/// The workers' local optimizer (the job's --optimizer, --momentum and
/// --weight-decay), rate (--lr) and schedule (over their own steps).
void set_local_steps(job_build& b);

/// The defaults of the decentralized algorithms' workers: the authors'
/// local optimizer, Nesterov momentum 0.9 with weight decay 1e-4 (LSGD on
/// lenet with 2 groups of 2 reached 0.90, plain momentum without decay
/// stopped at 0.898; SGP's job scripts use the same).
void decentralized_defaults(job_options& o);

/// The workers' mixes and timeouts (averaging algorithms), for the report.
void report_mixes(const messages::worker_stats& stats, nlohmann::json& out);

} // namespace troupe::algos
