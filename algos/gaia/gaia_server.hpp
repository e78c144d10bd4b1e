// Gaia's group server (algos/gaia/gaia.hpp): one per group ("data
// centre"), holding a whole replica. Its group's workers push to it and
// fetch from it as Downpour's do to a shard (it answers the shard's
// interface); after each update it sends the other groups' servers the
// significant part of its changes not yet sent (optim/gaia.hpp) and adds
// theirs to its replica. With a mirror bound, a fetch waits while the
// group's clock is more than the bound ahead of the slowest live group's.

#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/duration.hpp>
#include <caf/node_id.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/interfaces.hpp"
#include "actors/probe.hpp"
#include "messages/gossip.hpp"
#include "optim/shard_store.hpp"

namespace troupe::algos {

/// A group server: a shard of the whole vector, plus the other servers'
/// handles (from the coordinator's node), their significant changes, and
/// its figures as a JSON text.
using gaia_server_actor = actors::parameter_shard_actor::extend<
    caf::reacts_to<messages::peers_atom, std::vector<caf::actor>>,
    caf::reacts_to<messages::mirror_msg>,
    // A checkpoint's marker from group g's server (its save round): every
    // change it sent before is here.
    caf::reacts_to<messages::flush_atom, std::uint32_t, std::uint64_t>,
    caf::reacts_to<messages::tick_atom, std::uint64_t>,
    caf::replies_to<messages::stats_atom,
                    messages::members_atom>::with<std::string>>;

/// What a server sends another: its changes and its checkpoint markers.
using gaia_peer_actor = caf::typed_actor<
    caf::reacts_to<messages::mirror_msg>,
    caf::reacts_to<messages::flush_atom, std::uint32_t, std::uint64_t>>;

struct gaia_server_config {
  std::uint32_t group = 0;
  std::uint32_t groups = 1;
  /// Workers in the group: its clock is its updates over this.
  std::uint32_t members = 1;
  /// The whole flat vector's initial values.
  std::shared_ptr<const std::vector<float>> init;
  optim::shard_store_options store;
  /// Relative significance threshold (0: every change is sent).
  double significance = 0.01;
  /// Mirror clock bound (none: groups run free).
  std::optional<std::uint64_t> mirror_bound;
  /// Longest a fetch waits for the bound; then it is answered anyway.
  caf::duration bound_wait{std::chrono::seconds{2}};
  /// The node allowed to give the peers and ask for the state (the
  /// coordinator's).
  caf::node_id owner;
  /// A checkpoint's state to start from (save_gaia_server's bytes).
  std::shared_ptr<const std::string> state;
};

/// A fetch held by the mirror bound.
struct gaia_held_fetch {
  caf::typed_response_promise<messages::params_msg> promise;
  std::uint64_t tick = 0;
  caf::node_id remote; ///< the requester's node if in another process
};

struct gaia_server_state {
  static inline const char* name = "gaia_server";
  gaia_server_config config;
  std::unique_ptr<optim::shard_store<float>> store;
  /// The replica as the other groups know it: w - base is what is not sent.
  std::vector<float> base;
  /// The servers by group; null: this one.
  std::vector<gaia_peer_actor> peers;
  std::vector<std::uint64_t> peer_clocks;
  std::vector<bool> peer_live;
  /// Peers whose clock held a fetch past the bound's wait: left out of the
  /// bound until they send again (a group whose workers are all gone).
  std::vector<bool> peer_quiet;
  double lr0 = 0;
  std::uint64_t seq = 0;
  std::uint64_t last_clock_sent = 0;
  std::vector<gaia_held_fetch> held;
  std::uint64_t ticks = 0;
  // Figures.
  std::uint64_t updates = 0, checked = 0, sent_entries = 0;
  std::uint64_t mirror_messages = 0, mirror_bytes = 0;
  std::uint64_t received_entries = 0, received_messages = 0;
  std::uint64_t refused_blocks = 0, held_fetches = 0, bound_timeouts = 0;
  std::uint64_t messages = 0, bytes = 0;
  /// Checkpoints: the peers' clocks a resumed server starts from, the
  /// save rounds' markers by round, and the save waiting for them.
  std::vector<std::uint64_t> saved_clocks;
  std::uint64_t save_round = 0;
  std::map<std::uint64_t, std::set<std::uint32_t>> markers;
  std::optional<caf::typed_response_promise<std::string>> saving;
  actors::probe_ref probe;
};

/// Server g's file in a checkpoint ("algo-gaia-server-<g>.state").
std::string gaia_server_file(std::uint32_t g);
/// The server's state as a state file (optim/state_file.hpp).
std::string save_gaia_server(const gaia_server_state& st);
/// Reads save_gaia_server's bytes into `st` (its config, store and base
/// set up for the job); throws optim::data_error naming what does not fit.
void load_gaia_server(gaia_server_state& st, const std::string& bytes);

gaia_server_actor::behavior_type
gaia_server(gaia_server_actor::stateful_pointer<gaia_server_state> self,
            gaia_server_config config);

} // namespace troupe::algos
