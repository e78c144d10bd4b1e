#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "messages/control.hpp"

// What a node's monitor reports to the coordinator's: a snapshot of every
// troupe actor's probe (actors/probe.hpp). Times are relative ("ms ago" when
// the snapshot was taken), so hosts need no clock synchronization.

namespace troupe::messages {

/// Messages of one type an actor received or sent.
struct type_count {
  std::string type;
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, type_count& x) {
  return f(caf::meta::type_name("type_count"), x.type, x.count, x.bytes);
}

/// The last message an actor received from one peer.
struct peer_seen {
  std::string key; ///< the peer's actor key (node id / actor id)
  std::int64_t ago_ms = 0;
  std::uint64_t messages = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, peer_seen& x) {
  return f(caf::meta::type_name("peer_seen"), x.key, x.ago_ms, x.messages);
}

/// A named algorithm gauge (steps, samples, leader, push-sum weight, ...).
struct named_value {
  std::string name;
  real value;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, named_value& x) {
  return f(caf::meta::type_name("named_value"), x.name, x.value);
}

/// A cumulative histogram: counts[i] observations <= bounds[i], the last
/// count (one more than bounds) everything larger.
struct histogram_data {
  std::string name;
  std::vector<std::uint64_t> bounds;
  std::vector<std::uint64_t> counts;
  real sum;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, histogram_data& x) {
  return f(caf::meta::type_name("histogram_data"), x.name, x.bounds, x.counts,
           x.sum);
}

/// One actor's probe.
struct actor_metrics {
  std::string key;  ///< node id / actor id, unique in the cluster
  std::string name; ///< "worker 3", "shard 0", "coordinator", ...
  std::string role; ///< worker, shard, coordinator, evaluator, node_agent
  std::string activity;
  bool expects_progress = false; ///< no progress for long means stuck
  bool done = false;             ///< the actor has terminated
  std::uint64_t messages_in = 0, messages_out = 0;
  std::uint64_t bytes_in = 0, bytes_out = 0;
  std::uint64_t handler_ns = 0, handler_max_ns = 0;
  std::uint64_t errors = 0, mailbox = 0, mailbox_max = 0;
  std::int64_t age_ms = 0;           ///< since the probe was created
  std::int64_t progress_ago_ms = -1; ///< -1: no progress yet
  std::int64_t done_ago_ms = -1;     ///< -1: still running
  std::vector<type_count> received, sent;
  std::vector<named_value> gauges;
  std::vector<histogram_data> histograms;
  std::vector<peer_seen> peers;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, actor_metrics& x) {
  return f(caf::meta::type_name("actor_metrics"), x.key, x.name, x.role,
           x.activity, x.expects_progress, x.done, x.messages_in,
           x.messages_out, x.bytes_in, x.bytes_out, x.handler_ns,
           x.handler_max_ns, x.errors, x.mailbox, x.mailbox_max, x.age_ms,
           x.progress_ago_ms, x.done_ago_ms, x.received, x.sent, x.gauges,
           x.histograms, x.peers);
}

/// What a node's process uses of its host (Linux /proc): cumulative
/// counters; the coordinator's view derives the rates.
struct process_usage {
  real cpu_seconds;            ///< user + system time of the process
  std::uint64_t rss_bytes = 0; ///< resident memory
  std::uint64_t threads = 0;
  std::uint64_t net_rx_bytes = 0; ///< the host's interfaces but loopback
  std::uint64_t net_tx_bytes = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, process_usage& x) {
  return f(caf::meta::type_name("process_usage"), x.cpu_seconds, x.rss_bytes,
           x.threads, x.net_rx_bytes, x.net_tx_bytes);
}

/// A node's actors, as its monitor saw them, its process's use of the host
/// and its last log lines.
struct node_metrics {
  std::string node;     ///< host:pid
  std::string node_key; ///< the CAF node id, the prefix of actor keys
  std::vector<actor_metrics> actors;
  process_usage usage;
  /// The node's last log lines, oldest first (at most max_log_tail, each
  /// at most max_log_line bytes; the receiver enforces both).
  std::vector<std::string> log_tail;
};

/// Caps on node_metrics::log_tail.
inline constexpr std::size_t max_log_tail = 20;
inline constexpr std::size_t max_log_line = 400;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_metrics& x) {
  return f(caf::meta::type_name("node_metrics"), x.node, x.node_key, x.actors,
           x.usage, x.log_tail);
}

/// Prints every field (doubles as bit patterns), for logs and tests.
std::string to_string(const node_metrics& x);

} // namespace troupe::messages
