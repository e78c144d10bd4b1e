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
#include "messages/shm.hpp"
#include "messages/tensor.hpp"
#include "net/detail/shutdown_watchdog.hpp"
#include "net/peer_link.hpp"
#include "net/registrar.hpp"
#include "net/tls_probe.hpp"
#include "optim/quote.hpp"

namespace troupe::net {

using namespace messages;

namespace {

/// What this process's tensors moved and copied, for the log at the end of
/// a job: bytes out and in, and bytes copied per byte on each side
/// (messages/tensor.hpp's counters; "" if nothing moved).
std::string data_path_line() {
  auto k = messages::copies();
  auto s = messages::shm::stats();
  double out = static_cast<double>(k.serialized + s.bytes_written);
  double in = static_cast<double>(k.deserialized + s.bytes_read);
  if (out + in <= 0)
    return {};
  auto per = [](double copied, double moved) {
    return moved > 0 ? fmt::format("{:.2f}", copied / moved) : "-";
  };
  return fmt::format(
      "tensors out {:.2f} GB ({} copies/B), in {:.2f} GB ({} copies/B)",
      out / 1e9,
      per(static_cast<double>(k.into_tensor + k.into_segment + k.serialized),
          out),
      in / 1e9,
      per(static_cast<double>(k.deserialized + k.from_segment + k.copied_out),
          in));
}

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

namespace {

/// Opens this node's peer port and names its door to the registrar, or
/// tells it this node has none (direct links off, or the port failed).
std::unique_ptr<peer_port> open_peer_port(caf::actor_system& sys,
                                          const node_options& opts,
                                          const registrar_actor& reg) {
  std::unique_ptr<peer_port> port;
  if (opts.direct) {
    try {
      // By default the address this host reaches the coordinator from;
      // listening on every interface advertises that address too.
      auto listen = opts.peer_listen;
      auto toward = local_address_toward(opts.join.host, opts.join.port);
      if (listen.host.empty())
        listen.host = toward;
      bool any = listen.host == "0.0.0.0" || listen.host == "*"
                 || listen.host == "::";
      auto advertise = any ? toward : listen.host;
      if (listen.host.empty() || advertise.empty())
        throw std::runtime_error("no local address reaches the coordinator");
      door_config dc;
      dc.token = opts.link.token;
      dc.coordinator = reg->node();
      dc.registrar = caf::actor_cast<caf::actor>(reg);
      port = std::make_unique<peer_port>(sys, opts.link, listen, advertise, dc);
    } catch (const std::exception& e) {
      actors::detail::log().warn(
          "no direct links to other nodes ({}): this node's traffic to them "
          "goes through the coordinator",
          e.what());
    }
  }
  caf::scoped_actor self{sys};
  auto door = port ? port->door() : caf::actor{};
  auto address = port ? port->address() : std::string{};
  self->request(reg, std::chrono::seconds{10}, door_atom::value, door, address)
      .receive(
          [&](ack_atom) {
            if (port)
              actors::detail::log().info("other nodes link to this one at {}",
                                         address);
          },
          [&](caf::error& err) {
            actors::detail::log().warn(
                "the coordinator did not take this node's peer port ({}): "
                "links to it go through the coordinator",
                sys.render(err));
          });
  return port;
}

/// One membership: joins the coordinator reached as `reg`, serves its job
/// and returns when it is over (`lost`: false) or the coordinator is lost.
struct membership {
  node_outcome out;
  bool lost = false;
};

membership serve(caf::actor_system& sys, const node_options& opts,
                 const registrar_actor& reg,
                 actors::node_agent_config agent_config,
                 const std::string& where) {
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
  self->request(reg, std::chrono::seconds{180}, join_atom::value, hello,
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
    return {{1, refused.empty()
                    ? "the join request to " + where
                          + " failed: " + optim::sanitize(failure)
                    : "the coordinator at " + where
                          + " refused this node: " + optim::sanitize(refused)},
            false};
  }
  actors::detail::log().info("joined the job at {} as node {}", where,
                             hello.node);
  auto peers = open_peer_port(sys, opts, reg);
  self->monitor(agent);
  self->monitor(reg);
  membership m;
  bool agent_down = false;
  caf::error coordinator_down, agent_error;
  auto on_down = [&](caf::down_msg& down) {
    if (down.source == agent.address()) {
      agent_down = true;
      agent_error = std::move(down.reason);
    } else if (!coordinator_down) {
      // The agent then ends too (at once, or after its roles when the
      // job's stop reached it just before the coordinator's end).
      coordinator_down = down.reason ? down.reason : caf::sec::runtime_error;
      caf::anon_send_exit(agent, caf::exit_reason::user_shutdown);
    }
  };
  self->receive(on_down);
  // The agent ends after its roles (node_agent.cpp, quit_when_roles_ended),
  // waiting for them at most its stop grace: wait for it, so that neither a
  // rejoin nor the actor system's shutdown overlaps the roles' end.
  auto limit = grace + std::chrono::seconds{5};
  while (!agent_down)
    self->receive(
        on_down, caf::after(limit) >> [&] {
          actors::detail::log().error("the node agent did not end within {} ms",
                                      limit.count());
          agent_down = true;
        });
  // Roles that failed first may have lost the coordinator before this
  // thread saw it go: a moment for its down message decides.
  if (reason->empty() && agent_error && !coordinator_down)
    self->receive(
        on_down, caf::after(std::chrono::seconds{2}) >> [] {});
  // The agent is gone, so its stop reason is settled: a job that ended
  // tells it, even when the coordinator's process exited first.
  if (!reason->empty() || (!coordinator_down && !agent_error)) {
    m.out = {actors::job_failed(*reason) ? 1 : 0,
             "the job ended: " + optim::sanitize(*reason, 1000)};
  } else if (!coordinator_down) {
    m.out = {1, "this node's roles ended before the job did ("
                    + sys.render(agent_error) + ")"};
  } else {
    m.lost = true;
    m.out = {1, "lost the coordinator at " + where + " ("
                    + sys.render(coordinator_down) + ")"};
  }
  if (auto line = data_path_line(); !line.empty())
    actors::detail::log().info("{}", line);
  return m;
}

} // namespace

node_outcome run_node(const node_options& opts,
                      actors::node_agent_config agent_config) {
  validate(opts.link);
  if (opts.workers == 0 && opts.shards == 0)
    throw std::invalid_argument("a node needs --workers or --shards above 0");
  if (!(opts.coordinator_grace >= 0 && opts.coordinator_grace <= 86400))
    throw std::invalid_argument(
        "the coordinator grace must be in [0, 86400] s");
  link_config cfg{opts.link, opts.threads};
  // Destroyed after the actor system: it bounds the system's shutdown.
  detail::shutdown_watchdog watchdog{shutdown_limit};
  caf::actor_system sys{cfg};
  auto where = opts.join.host + ":" + std::to_string(opts.join.port);
  std::string lost; // the last loss, once the coordinator was lost
  for (;;) {
    auto try_opts = opts;
    if (!lost.empty())
      try_opts.join_timeout = opts.coordinator_grace;
    auto conn = connect(sys, try_opts);
    if (!conn.refused.empty())
      return {1, conn.refused};
    auto& reg = conn.reg;
    if (!reg && !lost.empty()) {
      node_outcome out{
          1, lost + "; no coordinator came back within the grace period ("
                 + std::to_string(static_cast<int>(opts.coordinator_grace))
                 + " s, --coordinator-grace)"};
      watchdog.arm("the actor system's shutdown", out.message, out.status);
      return out;
    }
    if (!reg)
      return {1, "cannot reach the coordinator at " + where + " within "
                     + std::to_string(static_cast<int>(opts.join_timeout))
                     + " s: "
                     + (!conn.tried ? conn.probe
                                    : sys.render(reg.error())
                                          + (conn.probe.empty()
                                                 ? ""
                                                 : " (" + conn.probe + ")"))};
    auto m = serve(sys, opts, *reg, agent_config, where);
    if (!m.lost || opts.coordinator_grace <= 0) {
      watchdog.arm("the actor system's shutdown", m.out.message, m.out.status);
      return m.out;
    }
    lost = m.out.message;
    actors::detail::log().warn(
        "{}; waiting up to {} s for a coordinator at {} to admit this node "
        "again (--coordinator-grace)",
        lost, opts.coordinator_grace, where);
  }
}

} // namespace troupe::net
