// Direct links between the nodes of a job (issue [14]).
//
// Without them a worker on node A reaches a shard on node B through the
// coordinator's process: CAF routes a handle passed on by a third node
// through that node, so every parameter byte crosses the coordinator twice.
// With them each node listens on a port of its own, behind a port guard
// (guard.hpp) like the coordinator's, and the nodes connect to each other:
//
//   - A node opens its peer port once it joined (peer_port): CAF's port on
//     the loopback interface, in plaintext, behind a guard on the advertised
//     endpoint that terminates TLS when the job uses it. What CAF publishes
//     there is the node's door (peer_door); until a connection is admitted
//     the guard lets it address the door only.
//   - The node tells the registrar its door and the address (door_atom); the
//     registrar sends every member the list of the members' doors and
//     addresses in joining order (links_atom), and accepts it from nothing
//     but the coordinator's node.
//   - A node links to each member listed before it. It first knocks at that
//     member's door through the route it already has, the coordinator's
//     authenticated links, with the job's token; the door checks the token
//     and that the knocking node is a member the coordinator listed, then
//     vouches for the node to its guard: a connection whose BASP handshake
//     carries that node's id is admitted. Only then does the node connect,
//     so nothing but admitted traffic ever travels the direct connection
//     (CAF 0.17 prefers a direct route from its handshake on, and drops all
//     of a node's proxies when that connection is cut).
//   - A link that cannot be made is logged and the traffic keeps going
//     through the coordinator: slower, never wrong.
//   - The door tells the registrar once its links to a list's doors settled
//     (made or given up); the job starts when all members' did (or after
//     registrar_config::link_wait), so no role's traffic changes routes
//     while it runs (a message on the new route could overtake one on the
//     old). A node joining a running job links while its roles work.
//
// A node id in a handshake can be claimed by anyone who knows it: a guard
// admits such a claim only for a node some knock with the token vouched for
// (and with TLS only from a peer with a certificate of the job's CA).

#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/atom.hpp>
#include <caf/fwd.hpp>
#include <caf/node_id.hpp>

#include "net/system.hpp"

namespace troupe::net {

/// A node tells the registrar its door and its advertised "HOST:PORT".
using door_atom = caf::atom_constant<caf::atom("door")>;
/// The registrar's list of the members' doors and addresses.
using links_atom = caf::atom_constant<caf::atom("links")>;
/// A node asks a member's door to vouch for it (with the job's token).
using knock_atom = caf::atom_constant<caf::atom("knock")>;

/// The bytes a caf::binary_serializer writes for `id`: how a BASP client
/// handshake carries it, and what basp_guard::admit and vouch look for.
std::string node_key(const caf::node_id& id);

/// Splits a peer port's "HOST:PORT" (a host and a port above 0, at most
/// 300 characters); false if it is not one.
bool split_peer_address(const std::string& address, std::string& host,
                        std::uint16_t& port);

/// The local address this host uses to reach `host` (a connected UDP
/// socket's name: no packet is sent), or "" if it cannot be found.
std::string local_address_toward(const std::string& host, std::uint16_t port);

/// What a node's door does.
struct door_config {
  /// The job's token ("" none): a knock must carry it.
  std::string token;
  /// The coordinator's node: the only sender of member lists.
  caf::node_id coordinator;
  /// The registrar, told when the links to a list's doors settled.
  caf::actor registrar;
  /// Connects through caf::openssl (the job uses TLS).
  bool tls = false;
  /// Knocks at a member's door, at most, before giving up a link.
  std::uint32_t knock_tries = 40;
};

/// A node's peer port: its door published behind a guard. Closes it (and
/// stops the door) when destroyed.
class peer_port {
public:
  /// Listens on `listen` (port 0: any) and advertises `advertise` with the
  /// port it got. Throws std::runtime_error if the port cannot be opened.
  peer_port(caf::actor_system& sys, const link_options& link,
            const endpoint& listen, const std::string& advertise,
            door_config config);
  ~peer_port();
  peer_port(const peer_port&) = delete;
  peer_port& operator=(const peer_port&) = delete;

  /// The door (CAF's published actor on this port).
  const caf::actor& door() const noexcept;
  /// "HOST:PORT" as other nodes reach it.
  std::string address() const;
  /// Links this node made to members (connections it opened).
  std::uint64_t links_made() const noexcept;
  /// Knocks of other nodes this door vouched for, and refused.
  std::uint64_t vouched() const noexcept;
  std::uint64_t refused() const noexcept;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace troupe::net
