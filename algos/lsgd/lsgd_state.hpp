// LSGD's own roles in a checkpoint (issue [11]): what a group leader and the
// leader board keep between rounds, as state files (optim/state_file.hpp)
// named algo-group-<g>.state and algo-board-0.state. The workers' part
// (local optimizer, score window, pull counters) is their policy's
// (lsgd_policy.cpp).

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actors/probe.hpp"
#include "algos/lsgd/group_leader.hpp"

namespace troupe::algos {

/// The kinds of LSGD's own messages, as the probe counts them.
inline const actors::msg_type lead_kind = actors::message_kind("lead");
inline const actors::msg_type round_kind = actors::message_kind("round");
inline const actors::msg_type score_kind = actors::message_kind("score");

struct leader_board_state;

/// A group leader's state: its group, its current leader and the figures
/// the report gives for the group.
struct group_leader_saved {
  std::uint32_t group = 0;
  std::int64_t leader = -1; ///< -1: none elected yet
  lsgd_record::group figures;
};

/// The leader board's state: the global leader, a round trigger held by
/// the checkpoint's pause (0: none) and the job-wide figures.
struct leader_board_saved {
  std::uint32_t global_leader = 0;
  std::uint64_t held = 0;
  std::int64_t record_leader = 0;
  std::uint64_t changes = 0, rounds = 0, skipped = 0, busy_skipped = 0,
                messages = 0, bytes = 0;
  std::vector<std::string> log;
};

/// A group leader's file name in a checkpoint.
std::string group_leader_file(std::uint32_t group);

/// The leader board's file name in a checkpoint.
std::string leader_board_file();

/// A group leader's state as a state file.
std::string encode(const group_leader_saved& s);

/// Reads encode()'s bytes; throws optim::data_error naming `file` and the
/// tensor that is missing or wrong.
group_leader_saved decode_group_leader(const std::string& bytes,
                                       const std::string& file);

/// The leader board's state as a state file.
std::string encode(const leader_board_saved& s);

/// Reads encode()'s bytes; throws optim::data_error naming `file`.
leader_board_saved decode_leader_board(const std::string& bytes,
                                       const std::string& file);

/// A running group leader's state (its figures read under the record's
/// lock) and the restore of one at its spawn (figures written likewise).
group_leader_saved saved_of(group_leader_state& st);
void restore(group_leader_state& st, const group_leader_saved& s);

/// The same for the leader board.
leader_board_saved saved_of(leader_board_state& st);
void restore(leader_board_state& st, const leader_board_saved& s);

} // namespace troupe::algos
