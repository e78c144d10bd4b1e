#include "net/registrar.hpp"

#include <algorithm>
#include <stdexcept>

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>
#include <caf/system_messages.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/detail/caller.hpp"
#include "actors/detail/log.hpp"
#include "messages/errors.hpp"
#include "net/system.hpp"
#include "optim/quote.hpp"

namespace troupe::net {

using namespace messages;

namespace {

using self_ptr = registrar_actor::stateful_pointer<registrar_state>;

std::uint32_t count_up(const registrar_state& st) {
  std::uint32_t n = 0;
  for (const auto& m : st.members)
    n += m.up ? 1 : 0;
  return n;
}

/// Whether every member said whether it has a door, and the ones with a
/// door settled their links to all listed doors before them (so that no
/// role's traffic moves from the coordinator's route to a direct one while
/// the job runs).
bool links_settled(const registrar_state& st) {
  std::uint32_t doors = 0;
  for (const auto& m : st.members)
    if (m.up) {
      if (!m.door_said)
        return false;
      doors += m.door ? 1 : 0;
    }
  for (const auto& m : st.members)
    if (m.up && m.door && doors > 1 && m.linked < doors)
      return false;
  return true;
}

void maybe_complete(self_ptr self) {
  auto& st = self->state;
  if (count_up(st) < st.config.expect || st.waiting.empty())
    return;
  if (st.config.link_wait.count() > 0 && !st.link_waited
      && !links_settled(st)) {
    if (!st.link_timer) {
      st.link_timer = true;
      self->delayed_send(self, st.config.link_wait, links_atom::value);
    }
    return;
  }
  std::vector<caf::actor> agents;
  std::vector<hello_msg> hellos;
  for (const auto& m : st.members)
    if (m.up) {
      agents.push_back(caf::actor_cast<caf::actor>(m.agent));
      hellos.push_back(m.hello);
    }
  st.closed = true;
  for (auto& p : st.waiting)
    p.deliver(agents, hellos);
  st.waiting.clear();
}

/// Sends every member with a door the doors and addresses of all of them,
/// in joining order (a node links to the ones before it).
void send_links(self_ptr self) {
  std::vector<caf::actor> doors;
  std::vector<std::string> addresses;
  for (const auto& m : self->state.members)
    if (m.up && m.door) {
      doors.push_back(m.door);
      addresses.push_back(m.address);
    }
  if (doors.size() < 2)
    return;
  // From this actor (a door obeys lists from the coordinator's node only);
  // send() is for statically typed receivers.
  auto me = caf::actor_cast<caf::actor>(self);
  for (const auto& d : doors)
    caf::send_as(me, d, links_atom::value, doors, addresses);
}

void maybe_stopped(self_ptr self) {
  auto& st = self->state;
  auto up = count_up(st);
  if (up > 0)
    return;
  for (auto& p : st.stopping)
    p.deliver(up);
  st.stopping.clear();
}

} // namespace

std::string check_hello(const registrar_config& c, const hello_msg& h) {
  if (h.version != wire_version)
    return "wire version " + std::to_string(h.version)
           + " differs from the coordinator's " + std::to_string(wire_version)
           + ": run the same troupe build";
  if (!c.token.empty() && !tokens_equal(c.token, h.token))
    return h.token.empty() ? "this job needs a join token (--token or "
                             "--token-file)"
                           : "wrong join token";
  if (h.heartbeat_ms != c.heartbeat_ms || h.timeout_ms != c.timeout_ms)
    return "heartbeat settings differ: the node has --heartbeat="
           + std::to_string(h.heartbeat_ms)
           + "ms --node-timeout=" + std::to_string(h.timeout_ms)
           + "ms, the coordinator " + std::to_string(c.heartbeat_ms) + "ms and "
           + std::to_string(c.timeout_ms) + "ms";
  if (h.worker_slots == 0 && h.shard_slots == 0)
    return "the node offers no worker and no shard slots";
  return {};
}

namespace {

/// Why a join from the current sender with agent `handle` is refused ("" if
/// it may go on to setup).
std::string check_join(self_ptr self, const hello_msg& hello,
                       const caf::actor& handle) {
  auto& st = self->state;
  if (auto why = check_hello(st.config, hello); !why.empty())
    return why;
  if (st.stopped)
    return "the job is finishing";
  if (st.closed && !st.config.late_refusal.empty())
    return st.config.late_refusal;
  if (st.closed && !st.coordinator)
    return "the job is starting; join once it runs";
  if (!st.closed && count_up(st) + st.setting_up >= st.config.expect)
    return "the job already has its " + std::to_string(st.config.expect)
           + " nodes";
  if (!handle)
    return "no node agent";
  // The agent obeys this coordinator's node only; a handle of another node
  // would make the coordinator drive a third party's actor.
  if (!actors::detail::from_node(self, handle.node()))
    return "the node agent is not an actor of the joining node";
  return {};
}

/// A node that joined the running job and built it: the coordinator places
/// workers on it (or says why not); a member from then on, so the end of
/// the job waits for it as for the others.
void join_running(self_ptr self, caf::typed_response_promise<ack_atom> rp,
                  const actors::node_actor& agent, const hello_msg& hello) {
  auto& st = self->state;
  if (st.stopped || !st.coordinator) {
    rp.deliver(make_error(errc::join_refused, "the job is finishing"));
    return;
  }
  // It passed every check of a node joining at the start: its connection
  // may carry the roles' traffic (the spawn's answer first).
  if (st.config.on_admitted)
    st.config.on_admitted(agent.node());
  // Setting up and placing may each take a request timeout.
  self->request(st.coordinator, st.config.setup_timeout, join_atom::value,
                hello, caf::actor_cast<caf::actor>(agent))
      .then(
          [self, rp, agent, hello](std::uint32_t workers) mutable {
            auto& st = self->state;
            self->monitor(agent);
            st.members.push_back({agent, hello, true, false, {}, {}});
            actors::detail::log().info("node {} joined the running job with {}",
                                       optim::quote(hello.node),
                                       optim::counted(workers, "worker"));
            rp.deliver(ack_atom::value);
          },
          [self, rp, hello](caf::error& err) mutable {
            auto why = err == errc::join_refused ? context_of(err)
                                                 : self->system().render(err);
            // Rate-limited: a peer can ask again and again.
            actors::detail::log_refusal(
                "refused node " + optim::quote(hello.node) + ": " + why);
            rp.deliver(make_error(errc::join_refused, why));
          });
}

/// Logs a refused join (rate-limited), naming the peer.
void log_refused(self_ptr self, const hello_msg& hello,
                 const std::string& why) {
  const auto& sender = self->current_sender();
  actors::detail::log_refusal("refused node "
                              + (sender ? to_string(sender->node()) : "?")
                              + " (" + optim::quote(hello.node) + "): " + why);
}

} // namespace

registrar_actor::behavior_type registrar(self_ptr self,
                                         registrar_config config) {
  self->state.config = std::move(config);
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    for (auto& m : st.members)
      if (m.up && m.agent.address() == msg.source) {
        m.up = false;
        if (!st.closed)
          actors::detail::log().warn("node {} left before the job started",
                                     optim::quote(m.hello.node));
      }
    maybe_stopped(self);
  });
  return {
      [self](join_atom, hello_msg& hello,
             caf::actor& handle) -> caf::result<ack_atom> {
        auto& st = self->state;
        auto why = check_join(self, hello, handle);
        // Checked: the token is not kept, so no answer can carry it.
        hello.token.clear();
        if (!why.empty()) {
          log_refused(self, hello, why);
          return make_error(errc::join_refused, why);
        }
        auto agent = caf::actor_cast<actors::node_actor>(handle);
        auto rp = self->make_response_promise<ack_atom>();
        ++st.setting_up;
        self->request(agent, st.config.setup_timeout, setup_atom::value,
                      st.config.spec)
            .then(
                [self, rp, agent, hello](std::string& fp) mutable {
                  auto& st = self->state;
                  --st.setting_up;
                  if (fp != st.config.fingerprint) {
                    rp.deliver(make_error(
                        errc::join_refused,
                        "the node built another job (fingerprint " + fp
                            + ", the coordinator's " + st.config.fingerprint
                            + "): the data or the build differ"));
                    return;
                  }
                  if (st.closed) {
                    join_running(self, rp, agent, hello);
                    return;
                  }
                  self->monitor(agent);
                  st.members.push_back({agent, hello, true, false, {}, {}});
                  if (st.config.on_admitted)
                    st.config.on_admitted(agent.node());
                  rp.deliver(ack_atom::value);
                  maybe_complete(self);
                },
                [self, rp](caf::error& err) mutable {
                  --self->state.setting_up;
                  rp.deliver(make_error(errc::join_refused,
                                        "the node could not set the job up: "
                                            + self->system().render(err)));
                });
        return rp;
      },
      [self](members_atom)
          -> caf::result<std::vector<caf::actor>, std::vector<hello_msg>> {
        if (!actors::detail::from_here(self))
          return actors::detail::refuse(self, "the join service", "members",
                                        "the coordinator's process");
        auto rp = self->make_response_promise<std::vector<caf::actor>,
                                              std::vector<hello_msg>>();
        self->state.waiting.push_back(rp);
        maybe_complete(self);
        return rp;
      },
      [self](stop_atom) -> caf::result<std::uint32_t> {
        if (!actors::detail::from_here(self))
          return actors::detail::refuse(self, "the join service", "stop",
                                        "the coordinator's process");
        auto& st = self->state;
        st.closed = true;
        st.stopped = true;
        auto rp = self->make_response_promise<std::uint32_t>();
        st.stopping.push_back(rp);
        maybe_stopped(self);
        return rp;
      },
      [self](door_atom, caf::actor& door,
             std::string& address) -> caf::result<ack_atom> {
        auto& st = self->state;
        const auto& sender = self->current_sender();
        auto m = std::find_if(st.members.begin(), st.members.end(),
                              [&](const member& x) {
                                return x.up && sender != nullptr
                                       && x.agent.node() == sender->node();
                              });
        if (m == st.members.end() || (door && door.node() != sender->node()))
          return actors::detail::refuse(self, "the join service", "door",
                                        "a member, for a door of its own");
        std::string host;
        std::uint16_t port = 0;
        if (door && !split_peer_address(address, host, port))
          return make_error(errc::bad_request, "not HOST:PORT");
        m->door_said = true;
        m->door = std::move(door);
        m->address = std::move(address);
        if (m->door)
          send_links(self);
        maybe_complete(self);
        return ack_atom::value;
      },
      [self](links_atom, std::uint32_t linked) {
        auto& st = self->state;
        const auto& sender = self->current_sender();
        for (auto& m : st.members)
          if (m.up && m.door && sender != nullptr
              && m.door.address() == sender->address())
            m.linked = std::max(m.linked, linked);
        maybe_complete(self);
      },
      [self](links_atom) {
        auto& st = self->state;
        if (!actors::detail::from_here(self) || st.link_waited)
          return;
        st.link_waited = true;
        if (!links_settled(st) && count_up(st) >= st.config.expect)
          actors::detail::log().warn(
              "the nodes' direct links did not settle within {} ms: the job "
              "starts, and their traffic goes through the coordinator until "
              "they do",
              st.config.link_wait.count());
        maybe_complete(self);
      },
      [self](elastic_atom, caf::actor& coordinator) {
        if (!actors::detail::from_here(self)) {
          actors::detail::refuse(self, "the join service", "elastic",
                                 "the coordinator's process");
          return;
        }
        self->state.coordinator = std::move(coordinator);
      },
  };
}

} // namespace troupe::net
