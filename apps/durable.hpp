// troupe train's durable-job flags: when checkpoints are written
// (--checkpoint-dir, --checkpoint-every, --keep) and how --resume takes a
// checkpoint's job back.

#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "actors/coordinator.hpp"
#include "apps/train_command.hpp"

namespace troupe::apps {

/// When to write checkpoints.
struct checkpoint_plan {
  std::string dir;               ///< empty: no checkpoints
  std::uint64_t every_steps = 0; ///< > 0: every so many of the job's steps
  double every_seconds = 0;      ///< else: every so many seconds
  std::size_t keep = 3;

  bool enabled() const noexcept {
    return !dir.empty();
  }

  /// Whether one is due at `steps` steps, the last one having been written
  /// at `last_steps` steps and `seconds` ago.
  bool due(std::uint64_t steps, std::uint64_t last_steps,
           double seconds) const noexcept;
};

/// The plan of `o`'s flags (--resume=DIR alone checkpoints into DIR);
/// throws usage_error naming a malformed or inconsistent flag.
checkpoint_plan checkpoint_flags(const train_options& o);

/// With --resume=DIR: reads DIR's latest complete checkpoint into
/// `o.resumed` and takes its job's flags for those not given. Throws
/// usage_error if DIR has no complete checkpoint (naming the damaged ones)
/// or if a given flag changes the job (naming each, with both values).
void apply_resume(train_options& o);

/// What a checkpoint records as its job: `o`'s spec (resolved flags).
std::string checkpoint_job(const train_options& o);

/// An actor job's checkpoint writer (into --checkpoint-dir) and the state
/// it resumes from (--resume), from `o`.
void attach_checkpoints(const train_options& o, actors::job_config& job);

} // namespace troupe::apps
