// What the algorithms whose workers take local steps share (EASGD, LSGD,
// SGP, DS-Sync, ShadowSync): the check of the workers' own optimizer, rate
// and schedule.

#pragma once

#include <string>

#include "actors/coordinator.hpp"

namespace troupe::algos {

/// Throws std::invalid_argument naming `algo` if the workers' local rate is
/// not positive (0 allowed with `zero_ok`: pure averaging), the local
/// optimizer is unknown, or the local schedule is invalid.
void check_local_steps(const actors::job_config& job, const std::string& algo,
                       bool zero_ok);

/// The workers' mixes and timeouts (averaging algorithms), for the report.
void report_mixes(const messages::worker_stats& stats, nlohmann::json& out);

} // namespace troupe::algos
