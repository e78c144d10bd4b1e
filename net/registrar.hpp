// Membership of a distributed job: the actor a coordinator publishes on its
// listening port. Nodes join through it; it checks each one (wire version,
// join token, heartbeat settings, slots), gives it the job's spec, checks the
// node built the same job (fingerprint) and only then counts it as a member.
// Once the job runs, a node joining late is set up the same way and handed
// to the coordinator, which places workers on it when the job's algorithm is
// elastic (docs/deployment.md, "Joining a running job").
// Anyone who reaches the port may send `join`; `members` and `stop` are
// answered to this process only (not_allowed otherwise), and no answer ever
// carries a join token (docs/deployment.md, "Who may call what"). A member
// names its peer port's door (door_atom); every member then gets the list
// of the members' doors, so the nodes link to each other (peer_link.hpp).

#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/node_id.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/interfaces.hpp"
#include "messages/atoms.hpp"
#include "messages/messages.hpp"
#include "net/peer_link.hpp"

namespace troupe::net {

using registrar_actor = caf::typed_actor<
    // A node asks to join with its hello and its agent's handle (an actor of
    // the joining node). The answer is an ack when it joined, else the error
    // errc::join_refused whose context is the reason. Anyone may ask.
    caf::replies_to<messages::join_atom, messages::hello_msg,
                    caf::actor>::with<messages::ack_atom>,
    // The members (their hellos without token), answered once the expected
    // number has joined. This process only.
    caf::replies_to<messages::members_atom>::with<
        std::vector<caf::actor>, std::vector<messages::hello_msg>>,
    // Answered (with the number of members still up) once every member has
    // gone down: the nodes have exited. This process only.
    caf::replies_to<messages::stop_atom>::with<std::uint32_t>,
    // The coordinator of the running job, which takes nodes joining late
    // (elastic jobs): a join after the start is set up, then handed to it.
    // This process only.
    caf::reacts_to<messages::elastic_atom, caf::actor>,
    // A member's door and the "HOST:PORT" of its peer port (peer_link.hpp):
    // every member gets the list of the members' doors. The member's node
    // only.
    // A null door: the member has none (its links go through the
    // coordinator).
    caf::replies_to<door_atom, caf::actor,
                    std::string>::with<messages::ack_atom>,
    // A member's door made (or gave up) its links to the first N doors of
    // the list; links_atom alone: the wait for links is over (this
    // process).
    caf::reacts_to<links_atom, std::uint32_t>, caf::reacts_to<links_atom>>;

/// Settings of the registrar.
struct registrar_config {
  std::uint32_t expect = 1;
  std::string token; ///< empty: no token needed
  std::uint64_t heartbeat_ms = 0, timeout_ms = 0;
  std::string spec;        ///< the job's spec, sent to each node
  std::string fingerprint; ///< what each node must build from it
  /// How long a node may take to build the job (load its data).
  std::chrono::milliseconds setup_timeout{std::chrono::seconds{120}};
  /// Called (in the registrar's thread) with a node's id once it passed
  /// every check and became a member; the port guard lifts its restrictions
  /// for that node's connection. May be empty.
  std::function<void(const caf::node_id&)> on_admitted;
  /// Why a node may not join once the job has started; empty: it may (the
  /// algorithm is elastic), once the coordinator sent elastic_atom.
  std::string late_refusal = "the job has started";
  /// How long the start may wait for the members' direct links once the
  /// expected number joined (a node of an older build never says); 0: the
  /// start does not wait for them.
  std::chrono::milliseconds link_wait{0};
};

struct member {
  actors::node_actor agent;
  messages::hello_msg hello; ///< as the node sent it, token cleared
  bool up = true;
  bool door_said = false;   ///< it named its door, or said it has none
  caf::actor door;          ///< its peer port's door (or none)
  std::string address;      ///< where other nodes reach that port
  std::uint32_t linked = 0; ///< the first `linked` doors of the list settled
};

struct registrar_state {
  static inline const char* name = "registrar";
  registrar_config config;
  std::vector<member> members;
  std::uint32_t setting_up = 0; ///< nodes building the job now
  bool closed = false;          ///< the job has started: no more joins
  std::vector<caf::typed_response_promise<std::vector<caf::actor>,
                                          std::vector<messages::hello_msg>>>
      waiting;
  std::vector<caf::typed_response_promise<std::uint32_t>> stopping;
  /// The running job's coordinator (elastic jobs), once it said so.
  caf::actor coordinator;
  bool stopped = false;     ///< stop_atom arrived: the job is over
  bool link_timer = false;  ///< the wait for links started
  bool link_waited = false; ///< ... and is over
};

registrar_actor::behavior_type
registrar(registrar_actor::stateful_pointer<registrar_state> self,
          registrar_config config);

/// Why a hello is refused ("" if it is acceptable), before any setup.
std::string check_hello(const registrar_config& config,
                        const messages::hello_msg& hello);

} // namespace troupe::net
