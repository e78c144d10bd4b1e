#include "actors/node_agent.hpp"

#include <algorithm>
#include <string>

#include <caf/actor_cast.hpp>

#include "actors/detail/caller.hpp"
#include "actors/detail/log.hpp"
#include "messages/errors.hpp"
#include "optim/quote.hpp"

namespace troupe::actors {

using namespace messages;

namespace {

/// Logs a failure of this agent and makes the typed error that answers it.
caf::error failure(errc code, const std::string& what) {
  detail::log().error("{}", what);
  return make_error(code, what);
}

/// Linked: whenever the agent ends (the job is over, the coordinator is
/// lost, the process shuts down), its roles end with it instead of waiting
/// for their requests to time out. A role that finishes normally does not
/// take the agent along. Monitored: a role that ends on the agent's exit
/// unlinks first, so only its down message says it has ended.
void host(node_actor::stateful_pointer<node_agent_state> self,
          const caf::actor& h) {
  self->link_to(h);
  self->monitor(h);
  self->state.hosted.push_back(h);
}

/// Forgets the hosted role at `addr` (no-op if it is not hosted).
void release(node_agent_state& st, const caf::actor_addr& addr) {
  auto i
      = std::find_if(st.hosted.begin(), st.hosted.end(),
                     [&](const caf::actor& h) { return h.address() == addr; });
  if (i != st.hosted.end())
    st.hosted.erase(i);
}

/// Quits once every hosted role has ended. The agent outlives its roles: the
/// process tears its actor system down when the agent is gone, and CAF 0.17
/// counts a role as gone before it has sent its down messages. The one to
/// the middleman's BASP broker (the coordinator monitors the role) then
/// raced the broker's stop: left in the stopped broker's mailbox, which is
/// never emptied, it held the role, and a detached role's thread waited
/// forever at shutdown for that last reference. CAF sends a role's down
/// messages newest monitor first, so the broker has its own before the agent
/// sees the role's, while the broker still runs.
void quit_when_roles_ended(
    node_actor::stateful_pointer<node_agent_state> self) {
  auto& st = self->state;
  if (st.stopping && st.hosted.empty())
    self->quit(std::move(st.stop_error));
}

/// Ends the hosted roles (`reason` sent to each but `except`), then the agent
/// with `quit_reason` once they have ended (quit_when_roles_ended), or after
/// config.stop_grace at the latest.
void stop_roles(node_actor::stateful_pointer<node_agent_state> self,
                const caf::error& reason, caf::error quit_reason,
                const caf::actor_addr& except = {}) {
  auto& st = self->state;
  if (st.stopping)
    return;
  st.stopping = true;
  st.stop_error = std::move(quit_reason);
  for (auto& h : st.hosted)
    if (h.address() != except)
      self->send_exit(h, reason);
  self->send_exit(st.monitor, caf::exit_reason::user_shutdown);
  if (st.hosted.empty()) {
    quit_when_roles_ended(self);
    return;
  }
  self->delayed_send(self, st.config.stop_grace, stop_atom::value,
                     std::string{"the hosted roles did not end"});
}

/// The names and ids of the roles still hosted ("lbfgs_worker #12, ...").
std::string hosted_names(const node_agent_state& st) {
  std::string out;
  for (auto& h : st.hosted) {
    auto* role = dynamic_cast<caf::local_actor*>(
        caf::actor_cast<caf::abstract_actor*>(h));
    out += (out.empty() ? "" : ", ") + std::string{role ? role->name() : "?"}
           + " #" + std::to_string(h.id());
  }
  return out;
}

/// Whether the message being handled comes from the coordinator's node.
bool from_coordinator(node_actor::stateful_pointer<node_agent_state> self) {
  const auto& c = self->state.config;
  return c.obey_own_process ? detail::from_here(self)
                            : detail::from_node(self, c.coordinator);
}

/// The refusal of `verb` from anyone else.
caf::error refuse(node_actor::stateful_pointer<node_agent_state> self,
                  std::string_view verb) {
  return detail::refuse(self, "node agent " + self->state.config.node_name,
                        verb, "the coordinator this node joined");
}

} // namespace

node_actor::behavior_type
node_agent(node_actor::stateful_pointer<node_agent_state> self,
           node_agent_config config) {
  auto& state = self->state;
  state.config = std::move(config);
  if (!state.config.roles)
    state.config.roles = shared_roles();
  state.monitor
      = self->spawn<caf::linked>(node_monitor, state.config.node_name);
  state.probe = make_probe(self, "node agent " + state.config.node_name,
                           "node_agent", false);
  state.probe->activity("hosting");
  // A hosted role ended: it is released (a handle kept here would hold a
  // detached role's thread at shutdown).
  self->set_down_handler([self](caf::down_msg& msg) {
    release(self->state, msg.source);
    quit_when_roles_ended(self);
  });
  // Ended by an exit (a linked role failed, the coordinator was lost): the
  // other roles end, then the agent. A role that finished normally, or that
  // was shut down (the coordinator ends the shards before it stops the
  // nodes), does not take the agent along: the job's stop ends it.
  self->set_exit_handler([self](caf::exit_msg& msg) {
    auto& st = self->state;
    release(st, msg.source);
    // (anon_send_exit, as the node's process stops its agent, names the
    // agent itself as the source.)
    bool shut_down_role = msg.reason == caf::exit_reason::user_shutdown
                          && msg.source != self->address();
    if (st.stopping)
      quit_when_roles_ended(self);
    else if (msg.reason != caf::exit_reason::normal && !shut_down_role)
      stop_roles(self, msg.reason, msg.reason, msg.source);
  });
  return {
      [self](setup_atom, const std::string& spec) -> caf::result<std::string> {
        if (!from_coordinator(self))
          return refuse(self, "setup");
        auto& st = self->state;
        auto scope
            = on_message(st.probe.get(), self, msg_type::setup, spec.size());
        if (st.job)
          return failure(errc::busy, "this node already takes part in a job");
        try {
          auto built = st.config.build(spec);
          st.job = std::move(built.job);
          // (A simulated cluster's thousand nodes say nothing.)
          if (!st.config.obey_own_process)
            detail::log().info("job set up: {} with {} and {}",
                               st.job->algorithm ? st.job->algorithm->name()
                                                 : std::string{"?"},
                               optim::counted(st.job->workers, "worker"),
                               optim::counted(st.job->shards, "shard"));
          return built.fingerprint;
        } catch (const std::exception& e) {
          return failure(errc::invalid_job,
                         std::string{"cannot build the job: "} + e.what());
        }
      },
      [self](spawn_atom, const std::string& role,
             const caf::message& args) -> caf::result<caf::actor> {
        auto& st = self->state;
        if (!from_coordinator(self))
          // The role's name as sent, quoted unless it is a registered one.
          return refuse(self, "spawn "
                                  + (st.config.roles->contains(role)
                                         ? role
                                         : optim::quote(role)));
        auto scope = on_message(st.probe.get(), self, msg_type::spawn,
                                small_message_bytes + role.size());
        if (!st.job)
          return failure(errc::spawn_failed, "spawn before setup");
        if (st.stopping)
          return failure(errc::spawn_failed, "spawn while stopping");
        role_context ctx{self, *st.job, st.config.node_name,
                         [self](const caf::actor& h) { host(self, h); }};
        auto h = st.config.roles->spawn(ctx, role, args);
        if (!h) {
          detail::log().error("{}", self->system().render(h.error()));
          return std::move(h.error());
        }
        return std::move(*h);
      },
      [self](stop_atom, const std::string& reason) -> caf::result<void> {
        auto& st = self->state;
        if (self->current_sender() == self->ctrl()) {
          // From stop_roles: the grace period is over.
          if (st.stopping && !st.hosted.empty()) {
            detail::log().error("node agent {}: {} within {} ms ({}); it quits "
                                "without them",
                                st.config.node_name, reason,
                                st.config.stop_grace.count(), hosted_names(st));
            st.hosted.clear();
            self->quit(std::move(st.stop_error));
          }
          return caf::unit;
        }
        if (!from_coordinator(self))
          return refuse(self, "stop");
        auto scope = on_message(st.probe.get(), self, msg_type::stop,
                                small_message_bytes);
        if (st.config.stop_reason && !st.stopping)
          *st.config.stop_reason = reason;
        stop_roles(self, caf::exit_reason::user_shutdown, caf::none);
        return caf::unit;
      },
      [self](metrics_atom m) -> caf::result<node_metrics> {
        if (!from_coordinator(self))
          return refuse(self, "metrics");
        auto scope = on_message(self->state.probe.get(), self,
                                msg_type::metrics, small_message_bytes);
        return self->delegate(self->state.monitor, m);
      },
  };
}

} // namespace troupe::actors
