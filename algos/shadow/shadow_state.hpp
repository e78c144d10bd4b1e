// ShadowSync's own role in a checkpoint (issue [11]): what a shadow syncer
// keeps between rounds, as a state file (optim/state_file.hpp) named
// algo-syncer-<g>.state. Its workers' part (their local optimizer) is
// their policy's (shadow_policy.cpp).

#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "actors/probe.hpp"
#include "optim/shadow.hpp"

namespace troupe::algos {

/// The kinds of ShadowSync's own messages, as the probe counts them.
inline const actors::msg_type delta_kind = actors::message_kind("delta");
inline const actors::msg_type shadow_kind = actors::message_kind("shadow");

struct shadow_syncer_config;
struct shadow_syncer_state;

/// A syncer's state between two rounds: its index and mode, the rounds it
/// ran (the next one is round + 1; S-EASGD's pushes to the center carry it
/// as their sequence number, so the shards' de-duplication still takes
/// them), BMUF's replicated state, its members' step counts at their last
/// snapshot (the sync gap) and its counters.
struct shadow_syncer_saved {
  std::uint32_t index = 0;
  std::string mode;
  std::uint64_t round = 0;
  std::optional<optim::bmuf_state> bmuf;
  std::vector<std::uint64_t> last_steps;
  std::uint64_t rounds = 0, timeouts = 0, corrections = 0, messages = 0,
                bytes = 0, steps_between = 0;
  /// S-EASGD's pushes to the center (absent from a file of before: 0).
  std::uint64_t pushes = 0;
  double seconds_in_rounds = 0;
};

/// Syncer g's file name in a checkpoint.
std::string shadow_syncer_file(std::uint32_t g);

/// A syncer's state as a state file.
std::string encode(const shadow_syncer_saved& s);

/// Reads encode()'s bytes; throws optim::data_error naming `file` and the
/// tensor that is missing or wrong.
shadow_syncer_saved decode_shadow_syncer(const std::string& bytes,
                                         const std::string& file);

/// A running syncer's state.
shadow_syncer_saved saved_of(const shadow_syncer_state& st);

/// Throws optim::data_error naming `file` unless `s` fits a syncer of
/// `config` (its index, mode, members and model size): checked before the
/// syncer is spawned.
void check_fits(const shadow_syncer_config& config,
                const shadow_syncer_saved& s, const std::string& file);

/// Restores a syncer at its spawn (its configuration in place, check_fits
/// passed).
void restore(shadow_syncer_state& st, const shadow_syncer_saved& s);

} // namespace troupe::algos
