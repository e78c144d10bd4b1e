#include "actors/node_agent.hpp"

#include <caf/actor_cast.hpp>

#include "actors/detail/caller.hpp"
#include "actors/detail/lbfgs_worker.hpp"
#include "actors/detail/log.hpp"
#include "actors/lbfgs_driver.hpp"
#include "actors/lbfgs_shard.hpp"
#include "actors/roles.hpp"
#include "messages/errors.hpp"

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
      [self](spawn_atom, shard_atom,
             std::uint32_t i) -> caf::result<caf::actor> {
        if (!from_coordinator(self))
          return refuse(self, "spawn shard");
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, msg_type::spawn,
                                small_message_bytes);
        if (!st.job)
          return failure(errc::spawn_failed, "spawn before setup");
        try {
          auto h = caf::actor_cast<caf::actor>(
              self->spawn(parameter_shard, shard_config(*st.job, i)));
          host(self, h);
          return h;
        } catch (const std::exception& e) {
          return failure(errc::spawn_failed, e.what());
        }
      },
      [self](spawn_atom, worker_atom, worker_id w,
             const std::vector<caf::actor>& shards,
             const caf::actor& coordinator) -> caf::result<caf::actor> {
        if (!from_coordinator(self))
          return refuse(self, "spawn worker");
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, msg_type::spawn,
                                small_message_bytes);
        if (!st.job)
          return failure(errc::spawn_failed, "spawn before setup");
        try {
          auto wc = worker_config_of(
              *st.job, w, shard_refs(*st.job, shards),
              caf::actor_cast<coordinator_actor>(coordinator));
          auto h = caf::actor_cast<caf::actor>(
              spawn_worker(self, *st.job, std::move(wc)));
          host(self, h);
          return h;
        } catch (const std::exception& e) {
          return failure(errc::spawn_failed, e.what());
        }
      },
      [self](spawn_atom, shadow_atom, std::uint32_t g,
             const std::vector<caf::actor>& workers,
             const std::vector<caf::actor>& shards) -> caf::result<caf::actor> {
        if (!from_coordinator(self))
          return refuse(self, "spawn shadow");
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, msg_type::spawn,
                                small_message_bytes);
        if (!st.job)
          return failure(errc::spawn_failed, "spawn before setup");
        try {
          std::vector<worker_actor> members;
          for (auto& w : workers)
            members.push_back(caf::actor_cast<worker_actor>(w));
          auto h = caf::actor_cast<caf::actor>(self->spawn(
              shadow_syncer, syncer_config_of(*st.job, g, std::move(members),
                                              shard_refs(*st.job, shards))));
          host(self, h);
          return h;
        } catch (const std::exception& e) {
          return failure(errc::spawn_failed, e.what());
        }
      },
      [self](spawn_atom, lbfgs_atom, shard_atom,
             std::uint32_t i) -> caf::result<caf::actor> {
        if (!from_coordinator(self))
          return refuse(self, "spawn lbfgs shard");
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, msg_type::spawn,
                                small_message_bytes);
        if (!st.job || !st.job->lbfgs)
          return failure(errc::spawn_failed,
                         "spawn of an L-BFGS shard without an L-BFGS job");
        const auto& job = *st.job->lbfgs;
        if (i >= job.shards)
          return failure(errc::spawn_failed,
                         "no L-BFGS shard " + std::to_string(i));
        auto h = caf::actor_cast<caf::actor>(self->spawn(
            lbfgs_shard, lbfgs_shard_config{i, job.ranges()[i], job.init,
                                            job.options.memory}));
        host(self, h);
        return h;
      },
      [self](spawn_atom, lbfgs_atom, worker_atom, worker_id w,
             const std::vector<caf::actor>& shards,
             const caf::actor& driver) -> caf::result<caf::actor> {
        if (!from_coordinator(self))
          return refuse(self, "spawn lbfgs worker");
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, msg_type::spawn,
                                small_message_bytes);
        if (!st.job || !st.job->lbfgs)
          return failure(errc::spawn_failed,
                         "spawn of an L-BFGS worker without an L-BFGS job");
        auto job = st.job->lbfgs;
        if (w >= job->workers || shards.size() != job->shards)
          return failure(errc::spawn_failed,
                         "L-BFGS worker " + std::to_string(w) + " with "
                             + std::to_string(shards.size()) + " shards");
        std::vector<lbfgs_shard_actor> typed;
        for (auto& s : shards)
          typed.push_back(caf::actor_cast<lbfgs_shard_actor>(s));
        try {
          auto h = caf::actor_cast<caf::actor>(
              self->spawn<caf::detached>(detail::lbfgs_worker, w, driver,
                                         std::move(typed), job->ranges(), job));
          host(self, h);
          return h;
        } catch (const std::exception& e) {
          return failure(errc::spawn_failed, e.what());
        }
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
