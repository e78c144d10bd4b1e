#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <nlohmann/json.hpp>

#include "actors/clock.hpp"
#include "actors/interfaces.hpp"
#include "actors/probe.hpp"
#include "messages/metrics.hpp"

// Monitoring across the cluster. Every process runs a node monitor: it
// answers metrics_atom with snapshots of the process's probes (probe.hpp).
// On the coordinator's process a cluster monitor polls every node's monitor
// (its own and the joined nodes', through their agents) and keeps the latest
// picture in a cluster_view, which the HTTP endpoint reads (net/monitor.hpp).

namespace troupe::actors {

/// A node's monitor: snapshots of the process's probes.
using node_monitor_actor = caf::typed_actor<
    caf::replies_to<messages::metrics_atom>::with<messages::node_metrics>>;

/// This process's use of its host, read from Linux's /proc (zeros where it
/// cannot be read).
messages::process_usage read_process_usage();

/// Spawn with `sys.spawn(node_monitor, "host:pid")`.
node_monitor_actor::behavior_type node_monitor(node_monitor_actor::pointer self,
                                               std::string node_name);

/// The latest snapshot of every node, and what it means: each actor's state
/// (ok, idle, stuck, done, lost), throughput and the links between actors.
/// Thread-safe: the cluster monitor writes, HTTP handlers read. Its time is
/// the cluster monitor's clock while that runs (actors/clock.hpp), else the
/// process's steady clock.
class cluster_view {
public:
  using clock = clock_type; ///< the type of its time points

  /// An actor that expects progress and made none for `stuck_after` while
  /// the job runs is stuck.
  explicit cluster_view(std::chrono::milliseconds stuck_after
                        = std::chrono::seconds{3});

  std::chrono::milliseconds stuck_after() const noexcept {
    return stuck_after_;
  }

  /// A node answered (its first answer adds it).
  void update(const messages::node_metrics& m);
  /// A node did not answer in time.
  void unreachable(const std::string& node);
  /// The job lost the node (it died or hung).
  void lost(const std::string& node);

  /// {"nodes": [...], "actors": [...], "links": [...]}; `running` tells
  /// whether lack of progress means stuck (docs/monitoring.md).
  nlohmann::json to_json(bool running) const;

  /// Every actor's latest metrics with their node's name and computed state
  /// (for the Prometheus exposition).
  struct actor_view {
    std::string node, state;
    messages::actor_metrics metrics;
  };
  std::vector<actor_view> actors(bool running) const;

  /// The bytes every actor counted sending, summed over the latest answers
  /// (a lost node's as last seen): the job's traffic so far, as of the last
  /// poll.
  std::uint64_t bytes_sent() const;

  /// The view reads the time on `c` (its cluster monitor's clock) until
  /// unbind_clock(c), which the monitor calls as it ends.
  void bind_clock(const caf::actor_clock& c);
  void unbind_clock(const caf::actor_clock& c);

  /// Called with the node's name when a node is first seen or lost.
  std::function<void(const std::string&)> on_node_up, on_node_lost;

private:
  struct node_entry {
    std::string name, key, state = "up";
    clock::time_point seen;
    std::vector<messages::actor_metrics> actors;
    messages::process_usage usage;     ///< the latest
    std::vector<std::string> log_tail; ///< capped and escaped
    /// Rates between the last two answers: CPU (cores busy), network bytes/s.
    double cpu_cores = 0, rx_per_sec = 0, tx_per_sec = 0;
  };
  struct rate {
    double samples = 0, per_sec = 0;
    clock::time_point at;
  };
  std::vector<actor_view> actors_locked(bool running,
                                        clock::time_point now) const;
  /// The time now; called with mtx_ held (clock_ stays valid meanwhile).
  clock::time_point now_locked() const noexcept {
    return actors::now(clock_);
  }

  std::chrono::milliseconds stuck_after_;
  mutable std::mutex mtx_;
  const caf::actor_clock* clock_ = nullptr; ///< guarded by mtx_
  std::vector<node_entry> nodes_;
  std::map<std::string, rate> rates_; ///< by actor key
};

/// Polls a node monitor or node agent for metrics.
struct metrics_source {
  std::string name; ///< the node's name, for "unreachable" marks
  caf::actor handle;
};

/// Spawn with `spawn(cluster_monitor, view, sources, interval, owner,
/// owned)`; it polls every source each interval (a request that takes
/// longer than twice the interval marks the node unreachable) until `owner`
/// (the coordinator) terminates, then takes one last snapshot and ends the
/// `owned` actors (the local node monitor) with itself. (join_atom, name,
/// agent) from this process adds a node that joined the running job.
caf::behavior cluster_monitor(caf::event_based_actor* self,
                              std::shared_ptr<cluster_view> view,
                              std::vector<metrics_source> sources,
                              std::chrono::milliseconds interval,
                              caf::actor owner, std::vector<caf::actor> owned);

/// Spawns this process's node monitor (named `here`) and a cluster monitor
/// polling it and the placed nodes' agents into `view` every `interval`
/// until `self` (the coordinator, Sandblaster's driver) ends. Returns the
/// cluster monitor.
template <class Self>
caf::actor spawn_cluster_monitoring(Self* self,
                                    std::shared_ptr<cluster_view> view,
                                    const std::string& here,
                                    const std::vector<node_actor>& nodes,
                                    const std::vector<std::string>& names,
                                    std::chrono::milliseconds interval) {
  auto local = caf::actor_cast<caf::actor>(self->spawn(node_monitor, here));
  std::vector<metrics_source> sources{{here, local}};
  for (std::size_t n = 0; n < nodes.size(); ++n)
    sources.push_back({names.at(n), caf::actor_cast<caf::actor>(nodes[n])});
  return self->spawn(cluster_monitor, std::move(view), std::move(sources),
                     interval, caf::actor_cast<caf::actor>(self),
                     std::vector<caf::actor>{local});
}

} // namespace troupe::actors
