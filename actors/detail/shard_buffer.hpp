// Buffered rounds on an asynchronous shard (issue [15]): Downpour with a
// Byzantine-robust rule. A robust rule needs a set of pushes, so the shard
// collects a round of at most one push per worker and combines it with the
// rule (the shard's own key range), then applies the result as one update:
//   - a round closes once `buffer` workers have a push in it, or a worker
//     has max_backlog pushes waiting (a fast or flooding worker cannot fill
//     a round alone: its extra pushes wait for the next rounds), or at the
//     first message after `buffer_deadline` since the round began (a lost
//     worker does not stall the others);
//   - a flush (a worker's end, a checkpoint) closes every round waiting, so
//     nothing pushed is lost;
//   - the round's staleness is that of its oldest push.
// Checks (duplicates, ranges, non-finite values) happen when a push
// arrives, as for an unbuffered push.

#pragma once

#include <cstddef>

#include "actors/parameter_shard.hpp"

namespace troupe::actors::detail {

/// Pushes a worker may have waiting before its round is closed.
inline constexpr std::size_t max_backlog = 4;

/// Takes a push in (checked; rejected ones are counted and logged as for an
/// unbuffered push), then closes the rounds that are due.
void buffer_push(parameter_shard_state& st, messages::push_msg& p);

/// Closes the round if it is older than the deadline.
void close_overdue(parameter_shard_state& st);

/// Closes every round waiting.
void close_all(parameter_shard_state& st);

/// Worker `w` finished (untrack, after its last push): closes rounds until
/// none of its pushes waits.
void close_leaving(parameter_shard_state& st, messages::worker_id w);

/// Combines st.parts with the shard's rule into st.sum and counts the
/// workers the rule left out (sync rounds and buffered rounds).
void combine_parts(parameter_shard_state& st);

/// Counts and logs (rate-limited) a rejected push (parameter_shard.cpp).
void note_rejection(parameter_shard_state& st, const messages::push_msg& p,
                    optim::push_status status);

} // namespace troupe::actors::detail
