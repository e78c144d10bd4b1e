#include "net/cluster.hpp"

#include <algorithm>
#include <mutex>
#include <stdexcept>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/publish.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/detail/log.hpp"
#include "algos/registry.hpp"
#include "messages/shm.hpp"
#include "messages/tensor.hpp"
#include "net/guard.hpp"
#include "net/peer_link.hpp"
#include "net/placement.hpp"
#include "net/registrar.hpp"
#include "optim/quote.hpp"

namespace troupe::net {

using namespace messages;

namespace {

/// The guard the registrar admits nodes at, while it exists.
struct admission {
  std::mutex mtx;
  basp_guard* guard = nullptr;

  /// Lets the connections of node `id` send any frame (guard.hpp).
  void admit(const caf::node_id& id) {
    auto key = node_key(id);
    std::lock_guard<std::mutex> lock{mtx};
    if (guard)
      guard->admit(key);
  }
};

/// Unsets the admission's guard before the guard is destroyed.
struct admission_scope {
  std::shared_ptr<admission> adm;
  ~admission_scope() {
    std::lock_guard<std::mutex> lock{adm->mtx};
    adm->guard = nullptr;
  }
};

/// Opens the job's port: CAF's on the loopback interface, in plaintext,
/// behind a guard on the public endpoint (guard.hpp) that terminates TLS when
/// it is on; without the guard (measurements only) CAF's own, with
/// caf::openssl for TLS.
std::uint16_t open_port(caf::actor_system& sys, const registrar_actor& reg,
                        const cluster_options& opts,
                        std::unique_ptr<basp_guard>& guard, admission& adm) {
  const auto& host = opts.listen.host;
  auto fail = [&](const caf::error& err) {
    return std::runtime_error("cannot listen on " + host + ":"
                              + std::to_string(opts.listen.port) + ": "
                              + sys.render(err));
  };
  if (!opts.guard) {
    // "0.0.0.0" or "*": every interface.
    const char* in = host == "0.0.0.0" || host == "*" ? nullptr : host.c_str();
    auto port = opts.link.tls.enabled()
                    ? caf::openssl::publish(reg, opts.listen.port, in, true)
                    : sys.middleman().publish(reg, opts.listen.port, in, true);
    if (!port)
      throw fail(port.error());
    return *port;
  }
  auto inner = sys.middleman().publish(reg, 0, "127.0.0.1", true);
  if (!inner)
    throw fail(inner.error());
  guard_options g;
  g.registrar_id = reg.id();
  g.tls = opts.link.tls;
  guard = std::make_unique<basp_guard>(opts.listen, *inner, g);
  std::lock_guard<std::mutex> lock{adm.mtx};
  adm.guard = guard.get();
  return guard->port();
}

/// Why a node may not join `job` once it runs (its algorithm is not
/// elastic), naming the algorithms that take late nodes.
std::string elastic_refusal(const actors::job_config& job) {
  auto name = job.algorithm->name();
  auto takers = algos::algorithms_where([](const algos::algorithm& a) {
    return a.elastic(actors::job_config{});
  });
  if (std::find(takers.begin(), takers.end(), name) != takers.end())
    return "its algorithm, " + name
           + ", does not take nodes joining a "
             "running job with these options";
  return "its algorithm, " + name
         + ", does not take nodes joining a running "
           "job ("
         + (takers.empty() ? std::string{"none does"}
                           : algos::joined_names(takers) + " do")
         + ")";
}

} // namespace

nlohmann::json run_distributed(actors::job_config job, const std::string& spec,
                               const std::string& fingerprint,
                               const cluster_options& opts,
                               actors::runtime_options rt) {
  validate(opts.link);
  if (opts.expect == 0)
    throw std::invalid_argument("--expect must be at least 1");
  // Behind the guard CAF's port is plaintext on the loopback interface and
  // the coordinator connects to no one: no caf::openssl here.
  auto link = opts.link;
  if (opts.guard)
    link.tls = {};
  link_config cfg{link, rt.threads};
  caf::actor_system sys{cfg};
  registrar_config rc;
  rc.expect = opts.expect;
  rc.token = opts.link.token;
  rc.heartbeat_ms = opts.link.heartbeat_ms();
  rc.timeout_ms = opts.link.timeout_ms();
  rc.spec = spec;
  rc.fingerprint = fingerprint;
  // The nodes link to each other before the roles start (peer_link.hpp).
  rc.link_wait = std::chrono::seconds{15};
  // Nodes may join the running job if its algorithm takes them.
  if (job.algorithm && job.algorithm->elastic(job) && job.make_joined_replica
      && !job.checkpoints.write)
    rc.late_refusal.clear();
  else if (job.algorithm)
    rc.late_refusal = "the job has started, and "
                      + (job.algorithm->elastic(job)
                             ? std::string{"a checkpointing job does not take "
                                           "nodes joining it yet"}
                             : elastic_refusal(job));
  auto adm = std::make_shared<admission>();
  rc.on_admitted = [adm](const caf::node_id& id) { adm->admit(id); };
  auto reg = sys.spawn(registrar, std::move(rc));
  job.join_service = caf::actor_cast<caf::actor>(reg);
  auto stop_registrar
      = [&] { caf::anon_send_exit(reg, caf::exit_reason::user_shutdown); };
  std::uint16_t port = 0;
  std::unique_ptr<basp_guard> guard;
  admission_scope unset_guard{adm}; // before the guard goes
  try {
    port = open_port(sys, reg, opts, guard, *adm);
  } catch (...) {
    stop_registrar();
    throw;
  }
  actors::detail::log().info("listening on {}:{}{}, waiting for {} to join",
                             opts.listen.host, port,
                             opts.link.tls.enabled() ? " (TLS)" : "",
                             optim::counted(opts.expect, "node"));
  if (opts.on_listening)
    opts.on_listening(port);
  std::vector<caf::actor> agents;
  std::vector<hello_msg> hellos;
  std::string failure;
  caf::scoped_actor self{sys};
  auto join_wait = std::chrono::milliseconds{
      static_cast<std::int64_t>(opts.join_timeout * 1000)};
  self->request(reg, join_wait, members_atom::value)
      .receive(
          [&](std::vector<caf::actor>& a, std::vector<hello_msg>& h) {
            agents = std::move(a);
            hellos = std::move(h);
          },
          [&](caf::error& err) { failure = sys.render(err); });
  if (!failure.empty()) {
    stop_registrar();
    throw std::runtime_error(
        "not all of the " + std::to_string(opts.expect)
        + " expected nodes joined within "
        + std::to_string(static_cast<int>(opts.join_timeout))
        + " s (--join-timeout); start them with troupe node --join="
        + opts.listen.host + ":" + std::to_string(port));
  }
  std::vector<node_slots> slots;
  for (std::size_t n = 0; n < agents.size(); ++n) {
    slots.push_back({hellos[n].worker_slots, hellos[n].shard_slots});
    job.placement.nodes.push_back(
        caf::actor_cast<actors::node_actor>(agents[n]));
    job.placement.node_names.push_back(hellos[n].node);
    for (auto& o : job.observers)
      o->on_node_joined({hellos[n].node, "", 0});
  }
  auto where = place(job.workers, job.shards, slots);
  job.placement.worker_node = where.worker_node;
  job.placement.shard_node = where.shard_node;
  if (job.shard_replicas > 0)
    job.placement.backup_node = place_backups(where.shard_node, slots);
  for (std::size_t n = 0; n < agents.size(); ++n) {
    std::size_t w = 0, s = 0;
    for (auto x : where.worker_node)
      w += x == static_cast<std::int32_t>(n) ? 1 : 0;
    for (auto x : where.shard_node)
      s += x == static_cast<std::int32_t>(n) ? 1 : 0;
    actors::detail::log().info("node {} hosts {} and {}", hellos[n].node,
                               optim::counted(w, "worker"),
                               optim::counted(s, "shard"));
  }
  nlohmann::json result;
  try {
    result = actors::run_job_in(sys, std::move(job), rt.timeout);
  } catch (...) {
    stop_registrar();
    throw;
  }
  // The coordinator told every node to stop; wait (briefly) until they are
  // gone, so their last messages are not cut off.
  self->request(reg, std::chrono::seconds{5}, stop_atom::value)
      .receive([](std::uint32_t) {},
               [&](caf::error&) {
                 actors::detail::log().warn("a node did not exit in time");
               });
  stop_registrar();
  if (guard) {
    const auto& c = guard->counters();
    result["guard"] = {{"accepted", c.accepted.load()},
                       {"refused", c.refused.load()},
                       {"timed_out", c.timed_out.load()},
                       {"dropped", c.dropped.load()},
                       {"admitted", c.admitted.load()},
                       {"tls_failed", c.tls_failed.load()},
                       {"unreceived_peak", c.unreceived_peak.load()},
                       {"bytes_in", c.bytes_in.load()}};
  }
  // This process's tensors through shared memory (messages/shm.hpp).
  auto m = messages::shm::stats();
  result["shm"] = {{"enabled", messages::shm::enabled()},
                   {"sent", m.written},
                   {"sent_inline", m.inline_},
                   {"received", m.read},
                   {"refused", m.refused},
                   {"bytes_sent", m.bytes_written},
                   {"bytes_received", m.bytes_read}};
  // Bytes its tensors copied, by kind (messages/tensor.hpp).
  auto k = messages::copies();
  result["tensor_copies"]
      = {{"into_tensor", k.into_tensor},   {"into_segment", k.into_segment},
         {"serialized", k.serialized},     {"deserialized", k.deserialized},
         {"from_segment", k.from_segment}, {"copied_out", k.copied_out}};
  return result;
}

} // namespace troupe::net
