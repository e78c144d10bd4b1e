#include "net/node.hpp"

#include <algorithm>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/remote_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/system_messages.hpp>

#include "actors/coordinator.hpp"
#include "actors/detail/log.hpp"
#include "algos/registry.hpp"
#include "messages/errors.hpp"
#include "net/detail/shutdown_watchdog.hpp"
#include "net/registrar.hpp"
#include "net/tls_probe.hpp"
#include "optim/quote.hpp"

namespace troupe::net {

using namespace messages;

namespace {

/// How long the actor system may take to shut down once the job is over.
constexpr std::chrono::seconds shutdown_limit{15};

/// The registrar, or why this node cannot reach it.
struct connection {
  caf::expected<registrar_actor> reg{caf::sec::runtime_error};
  bool tried = false;  ///< whether CAF tried to connect at all
  std::string refused; ///< a refusal that cannot succeed on retry
  std::string probe;   ///< what the last probe saw, when not a clean go
};

/// Connects to the registrar, retrying until the deadline (the coordinator
/// may not listen yet). Each try first probes the port (net/tls_probe.hpp):
/// a TLS mismatch or a refused certificate ends the tries at once, with the
/// reason CAF would not give.
connection connect(caf::actor_system& sys, const node_options& opts) {
  using clock = std::chrono::steady_clock;
  auto deadline = clock::now()
                  + std::chrono::milliseconds{
                      static_cast<std::int64_t>(opts.join_timeout * 1000)};
  connection out;
  for (;;) {
    auto left = std::chrono::duration<double>(deadline - clock::now()).count();
    auto probe = probe_coordinator(opts.join, opts.link.tls,
                                   std::clamp(left, 0.5, 5.0));
    out.probe = probe.message;
    if (probe.verdict == probe_result::refused) {
      out.refused = probe.message;
      return out;
    }
    out.tried = out.tried || probe.verdict == probe_result::go;
    if (probe.verdict == probe_result::go)
      out.reg = opts.link.tls.enabled()
                    ? caf::openssl::remote_actor<registrar_actor>(
                        sys, opts.join.host, opts.join.port)
                    : sys.middleman().remote_actor<registrar_actor>(
                        opts.join.host, opts.join.port);
    if (out.reg || clock::now() >= deadline)
      return out;
    std::this_thread::sleep_for(std::chrono::milliseconds{250});
  }
}

} // namespace

node_outcome run_node(const node_options& opts,
                      actors::node_agent_config agent_config) {
  validate(opts.link);
  if (opts.workers == 0 && opts.shards == 0)
    throw std::invalid_argument("a node needs --workers or --shards above 0");
  link_config cfg{opts.link, opts.threads};
  // Destroyed after the actor system: it bounds the system's shutdown.
  detail::shutdown_watchdog watchdog{shutdown_limit};
  caf::actor_system sys{cfg};
  auto where = opts.join.host + ":" + std::to_string(opts.join.port);
  auto conn = connect(sys, opts);
  if (!conn.refused.empty())
    return {1, conn.refused};
  auto& reg = conn.reg;
  if (!reg)
    return {1,
            "cannot reach the coordinator at " + where + " within "
                + std::to_string(static_cast<int>(opts.join_timeout)) + " s: "
                + (!conn.tried
                       ? conn.probe
                       : sys.render(reg.error())
                             + (conn.probe.empty() ? ""
                                                   : " (" + conn.probe + ")"))};
  auto reason = std::make_shared<std::string>();
  agent_config.stop_reason = reason;
  agent_config.node_name = process_name();
  // The agent obeys the coordinator it joins, and no one else.
  agent_config.coordinator = reg->node();
  // Unless given: the shared roles and every registered algorithm's own.
  if (!agent_config.roles)
    agent_config.roles = algos::node_roles();
  auto grace = agent_config.stop_grace;
  auto agent = sys.spawn(actors::node_agent, std::move(agent_config));
  hello_msg hello;
  hello.node = process_name();
  hello.token = opts.link.token;
  hello.worker_slots = opts.workers;
  hello.shard_slots = opts.shards;
  hello.heartbeat_ms = opts.link.heartbeat_ms();
  hello.timeout_ms = opts.link.timeout_ms();
  caf::scoped_actor self{sys};
  std::string refused, failure;
  // Setting up may load a data set on both sides: allow for it.
  self->request(*reg, std::chrono::seconds{180}, join_atom::value, hello,
                caf::actor_cast<caf::actor>(agent))
      .receive([&](ack_atom) {},
               [&](caf::error& err) {
                 // A refusal's context is the reason, shown as it is.
                 if (err == errc::join_refused) {
                   refused = context_of(err);
                   if (refused.empty())
                     refused = "(no reason given)";
                 } else {
                   failure = sys.render(err);
                 }
               });
  if (!failure.empty() || !refused.empty()) {
    caf::anon_send_exit(agent, caf::exit_reason::user_shutdown);
    return {1, refused.empty()
                   ? "the join request to " + where
                         + " failed: " + optim::sanitize(failure)
                   : "the coordinator at " + where
                         + " refused this node: " + optim::sanitize(refused)};
  }
  actors::detail::log().info("node {} joined the job at {}", hello.node, where);
  self->monitor(agent);
  self->monitor(*reg);
  node_outcome out;
  bool over = false, agent_down = false;
  while (!over)
    self->receive([&](caf::down_msg& down) {
      over = true;
      if (down.source == agent.address()) {
        agent_down = true;
        out = {actors::job_failed(*reason) ? 1 : 0,
               "the job ended: " + optim::sanitize(*reason, 1000)};
      } else {
        caf::anon_send_exit(agent, caf::exit_reason::user_shutdown);
        out = {1, "lost the coordinator at " + where + " ("
                      + sys.render(down.reason) + ")"};
      }
    });
  // The actor system shuts down once the agent is gone, and the agent ends
  // after its roles (node_agent.cpp, quit_when_roles_ended), waiting for
  // them at most its stop grace.
  auto limit = grace + std::chrono::seconds{5};
  while (!agent_down)
    self->receive(
        [&](caf::down_msg& down) {
          agent_down = down.source == agent.address();
        },
        caf::after(limit) >>
            [&] {
              actors::detail::log().error(
                  "the node agent did not end within {} ms", limit.count());
              agent_down = true;
            });
  watchdog.arm("the actor system's shutdown", out.message, out.status);
  return out;
}

} // namespace troupe::net
