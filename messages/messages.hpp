#pragma once

#include <cstdint>
#include <string>

#include <caf/meta/type_name.hpp>

#include "messages/tensor.hpp"
#include "messages/wire_version.hpp"

// The message types of the parameter-server flow. Each is a plain struct with
// small metadata fields and at most one tensor payload, an inspect() right
// below it, and a to_string for logs. registry.cpp registers every one.

namespace troupe::messages {

/// Identifies a worker within a job.
using worker_id = std::uint32_t;

// -- push_msg -----------------------------------------------------------------

/// A worker's gradient for the range [offset, offset + values.size()).
struct push_msg {
  /// Sending worker.
  worker_id worker = 0;
  /// Per-worker sequence number, for de-duplication.
  std::uint64_t seq = 0;
  /// Parameter version the gradient was computed on.
  std::uint64_t version = 0;
  /// First coordinate of the range in the flat parameter vector.
  std::uint64_t offset = 0;
  /// The worker's clock (completed steps) after this gradient: synchronous
  /// shards aggregate the pushes of one clock.
  std::uint64_t clock = 0;
  /// Examples the gradient is the mean over (weights synchronous averages).
  std::uint32_t samples = 0;
  /// Gradient values, one per coordinate of the range.
  tensor values;
};

/// Serializes or prints a push_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, push_msg& x) {
  return f(caf::meta::type_name("push_msg"), x.worker, x.seq, x.version,
           x.offset, x.clock, x.samples, x.values);
}

/// Compares all fields, the payload bit for bit.
bool operator==(const push_msg& x, const push_msg& y) noexcept;

/// Returns a one-line description for logs.
std::string to_string(const push_msg& x);

// -- fetch_msg ----------------------------------------------------------------

/// A worker's request for the parameters in [offset, offset + size).
struct fetch_msg {
  /// Requesting worker.
  worker_id worker = 0;
  /// First coordinate of the range.
  std::uint64_t offset = 0;
  /// Number of coordinates.
  std::uint64_t size = 0;
  /// The worker's clock (completed steps). Under a staleness bound s the
  /// shard answers once every tracked worker's clock is >= clock - s; a
  /// synchronous shard answers once it has applied step `clock`.
  std::uint64_t clock = 0;
};

/// Serializes or prints a fetch_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, fetch_msg& x) {
  return f(caf::meta::type_name("fetch_msg"), x.worker, x.offset, x.size,
           x.clock);
}

/// Compares all fields.
bool operator==(const fetch_msg& x, const fetch_msg& y) noexcept;

/// Returns a one-line description for logs.
std::string to_string(const fetch_msg& x);

// -- params_msg ---------------------------------------------------------------

/// Parameters of [offset, offset + values.size()) at a given version.
struct params_msg {
  /// Shard version the values belong to.
  std::uint64_t version = 0;
  /// First coordinate of the range.
  std::uint64_t offset = 0;
  /// Parameter values.
  tensor values;
};

/// Serializes or prints a params_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, params_msg& x) {
  // Its receivers copy the values out (tensor::copy_to): a reference to a
  // shared-memory block may stay a view until then.
  if constexpr (Inspector::writes_state)
    x.values.allow_view();
  return f(caf::meta::type_name("params_msg"), x.version, x.offset, x.values);
}

/// Compares all fields, the payload bit for bit.
bool operator==(const params_msg& x, const params_msg& y) noexcept;

/// Returns a one-line description for logs.
std::string to_string(const params_msg& x);

// -- hello_msg ----------------------------------------------------------------

/// A node's first message to a coordinator (the join handshake). A peer
/// with another wire version, a wrong token or other heartbeat settings is
/// refused before it is given any role.
struct hello_msg {
  /// The sender's wire version.
  std::uint32_t version = wire_version;
  /// The sender's node name (host:pid).
  std::string node;
  /// The job's join token (empty: none). Never printed.
  std::string token;
  /// Worker and shard slots the node offers.
  std::uint32_t worker_slots = 0;
  std::uint32_t shard_slots = 0;
  /// The node's middleman heartbeat interval and connection timeout in
  /// milliseconds: they must equal the coordinator's, or idle links are
  /// declared dead by one side.
  std::uint64_t heartbeat_ms = 0;
  std::uint64_t timeout_ms = 0;
};

/// Serializes or prints a hello_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, hello_msg& x) {
  return f(caf::meta::type_name("hello_msg"), x.version, x.node, x.token,
           x.worker_slots, x.shard_slots, x.heartbeat_ms, x.timeout_ms);
}

/// Compares all fields.
bool operator==(const hello_msg& x, const hello_msg& y) noexcept;

/// Returns a one-line description for logs.
std::string to_string(const hello_msg& x);

} // namespace troupe::messages
