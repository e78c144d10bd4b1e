#pragma once

#include <cstdint>
#include <string>

#include <caf/meta/type_name.hpp>

#include "messages/control.hpp"
#include "messages/messages.hpp"

// The messages of the decentralized flows (algorithms.md §5-7): push-sum
// shares between SGP peers, parameter copies inside a DS-Sync group and
// between GADMM's chain neighbours, Dynamic GADMM's duals, and
// ShadowSync's background corrections and syncer all-reduce.

namespace troupe::messages {

// -- gossip_msg ---------------------------------------------------------------

/// SGP: a push-sum share sent by `sender` after its step `iteration`: the
/// numerator part p * x and the weight part p * w. The receiver adds both
/// to its own x and w whenever the share arrives (overlap SGP), so nothing
/// is lost if it arrives late.
struct gossip_msg {
  worker_id sender = 0;
  std::uint64_t iteration = 0;
  double weight = 0;
  tensor values;
};

/// Serializes or prints a gossip_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, gossip_msg& x) {
  return f(caf::meta::type_name("gossip_msg"), x.sender, x.iteration,
           as_bits(x.weight), x.values);
}

// -- group_msg ----------------------------------------------------------------

/// DS-Sync: a member's parameters after its step of round `round`, sent to
/// the other members of its group of that round.
struct group_msg {
  worker_id sender = 0;
  std::uint64_t round = 0;
  tensor values;
};

/// Serializes or prints a group_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, group_msg& x) {
  return f(caf::meta::type_name("group_msg"), x.sender, x.round, x.values);
}

// -- dual_msg -----------------------------------------------------------------

/// Dynamic GADMM: when the chain changes at iteration `round`, the dual of
/// the edge between the sender (at position p of the new chain) and the
/// receiver (p + 1), passed down the chain so that every worker's net dual
/// is kept (optim::gadmm_rebuild).
struct dual_msg {
  worker_id sender = 0;
  std::uint64_t round = 0;
  tensor values;
};

/// Serializes or prints a dual_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, dual_msg& x) {
  return f(caf::meta::type_name("dual_msg"), x.sender, x.round, x.values);
}

// -- delta_msg ----------------------------------------------------------------

/// ShadowSync: a shadow syncer's correction for one worker; the worker adds
/// `values` to its parameters on arrival (delta-apply: what it learned since
/// the snapshot is kept).
struct delta_msg {
  std::uint64_t round = 0;
  tensor values;
};

/// Serializes or prints a delta_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, delta_msg& x) {
  return f(caf::meta::type_name("delta_msg"), x.round, x.values);
}

// -- shadow_msg ---------------------------------------------------------------

/// ShadowSync (model averaging, BMUF): syncer `syncer`'s sum of its workers'
/// snapshots in round `round` and how many there were; every syncer sends
/// its sum to every other one and averages all of them.
struct shadow_msg {
  std::uint32_t syncer = 0;
  std::uint64_t round = 0;
  std::uint32_t count = 0;
  tensor sum;
};

/// Serializes or prints a shadow_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shadow_msg& x) {
  return f(caf::meta::type_name("shadow_msg"), x.syncer, x.round, x.count,
           x.sum);
}

// -- mirror_msg ---------------------------------------------------------------

/// Gaia (algos/gaia): server `group`'s significant changes since its last
/// mirror message (optim/gaia.hpp's packed block: a uint32 index and a
/// float change per entry, `size` values in the model), its `seq`-th to
/// the receiver, and its clock (the updates it applied, in rounds of its
/// group's workers). The receiver adds the changes to its replica.
struct mirror_msg {
  std::uint32_t group = 0;
  std::uint64_t seq = 0;
  std::uint64_t clock = 0;
  std::uint64_t size = 0;
  std::string packed;
};

/// Serializes or prints a mirror_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, mirror_msg& x) {
  return f(caf::meta::type_name("mirror_msg"), x.group, x.seq, x.clock, x.size,
           x.packed);
}

/// One-line descriptions for logs.
std::string to_string(const gossip_msg& x);
std::string to_string(const group_msg& x);
std::string to_string(const dual_msg& x);
std::string to_string(const mirror_msg& x);
std::string to_string(const delta_msg& x);
std::string to_string(const shadow_msg& x);

/// Bytes on the wire (payload included), for the counters.
std::uint64_t wire_size(const gossip_msg& x);
std::uint64_t wire_size(const group_msg& x);
std::uint64_t wire_size(const dual_msg& x);
std::uint64_t wire_size(const mirror_msg& x);
std::uint64_t wire_size(const delta_msg& x);
std::uint64_t wire_size(const shadow_msg& x);

} // namespace troupe::messages
