#include "actors/node_agent.hpp"

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
/// take the agent along.
void host(node_actor::stateful_pointer<node_agent_state> self,
          const caf::actor& h) {
  self->link_to(h);
  self->state.hosted.push_back(h);
}

/// Whether the message being handled comes from the coordinator's node.
bool from_coordinator(node_actor::stateful_pointer<node_agent_state> self) {
  return detail::from_node(self, self->state.config.coordinator);
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
  // Ended by an exit (a linked role failed, the coordinator was lost):
  // release the hosted roles here too, or a detached worker's thread would
  // wait at shutdown for the reference its handle keeps in this state.
  self->set_exit_handler([self](caf::exit_msg& msg) {
    if (msg.reason == caf::exit_reason::normal)
      return; // a role that finished does not take the agent along
    auto& st = self->state;
    for (auto& h : st.hosted)
      if (h.address() != msg.source)
        self->send_exit(h, msg.reason);
    st.hosted.clear();
    self->quit(std::move(msg.reason));
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
          detail::log().info("job set up: {} with {} workers and {} shards",
                             st.job->algorithm ? st.job->algorithm->name()
                                               : std::string{"?"},
                             st.job->workers, st.job->shards);
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
        if (!from_coordinator(self))
          return refuse(self, "stop");
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, msg_type::stop,
                                small_message_bytes);
        if (st.config.stop_reason)
          *st.config.stop_reason = reason;
        for (auto& h : st.hosted)
          self->send_exit(h, caf::exit_reason::user_shutdown);
        st.hosted.clear();
        self->send_exit(st.monitor, caf::exit_reason::user_shutdown);
        self->quit();
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
