#include "algos/gaia/gaia_run.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include <caf/actor_cast.hpp>

#include "actors/coordinator.hpp"
#include "actors/detail/caller.hpp"
#include "actors/detail/coordinator_ops.hpp"
#include "actors/detail/log.hpp"
#include "actors/roles.hpp"
#include "algos/gaia/gaia.hpp"
#include "messages/errors.hpp"
#include "optim/dataset.hpp"

namespace troupe::algos {

using namespace actors;
using namespace messages;

gaia_server_config gaia_server_config_of(const gaia& algo,
                                         const job_config& job, std::uint32_t g,
                                         std::uint32_t groups,
                                         std::uint32_t members) {
  gaia_server_config sc;
  sc.group = g;
  sc.groups = groups;
  sc.members = std::max<std::uint32_t>(members, 1);
  sc.init = job.init;
  sc.store = job.server;
  sc.significance = algo.significance;
  if (algo.mirror_bound >= 0)
    sc.mirror_bound = static_cast<std::uint64_t>(algo.mirror_bound);
  sc.bound_wait = caf::duration{std::chrono::milliseconds{
      static_cast<std::int64_t>(algo.bound_wait * 1000)}};
  return sc;
}

void check_gaia_state(const gaia_server_config& sc, const std::string& state) {
  gaia_server_state probe;
  probe.config = sc;
  probe.store = std::make_unique<optim::shard_store<float>>(
      optim::slice{0, sc.init->size()}, sc.init->data(), sc.store);
  probe.base.assign(sc.init->begin(), sc.init->end());
  load_gaia_server(probe, state);
}

namespace {

caf::actor host_server(role_context& ctx, std::uint32_t g, std::uint32_t groups,
                       std::uint32_t members, const std::string* state) {
  const auto& job = ctx.job();
  const auto* algo = dynamic_cast<const gaia*>(job.algorithm.get());
  if (!algo)
    throw std::invalid_argument("spawn of a Gaia server in a job of another "
                                "algorithm");
  if (groups == 0 || g >= groups || groups > job.workers || members == 0
      || members > job.workers)
    throw std::invalid_argument("a Gaia server's group " + std::to_string(g)
                                + " of " + std::to_string(groups)
                                + " does not fit the job");
  auto sc = gaia_server_config_of(*algo, job, g, groups, members);
  if (auto sender = ctx.self()->current_sender())
    sc.owner = sender->node();
  if (state) {
    check_gaia_state(sc, *state);
    sc.state = std::make_shared<const std::string>(*state);
  }
  return ctx.host(caf::actor_cast<caf::actor>(
      ctx.self()->spawn(gaia_server, std::move(sc))));
}

caf::actor spawn_server(role_context& ctx, const std::uint32_t& g,
                        const std::uint32_t& groups,
                        const std::uint32_t& members) {
  return host_server(ctx, g, groups, members, nullptr);
}

caf::actor spawn_resumed_server(role_context& ctx, const std::uint32_t& g,
                                const std::uint32_t& groups,
                                const std::uint32_t& members,
                                const std::string& state) {
  return host_server(ctx, g, groups, members, &state);
}

void ask_live(caf::event_based_actor* self,
              std::shared_ptr<std::vector<caf::actor>> live, fetch_msg f,
              caf::duration timeout,
              caf::typed_response_promise<params_msg> promise,
              std::size_t from) {
  auto i = from;
  while (i < live->size() && !(*live)[i])
    ++i;
  if (i >= live->size()) {
    promise.deliver(
        make_error(errc::bad_request, "no Gaia server is left to evaluate"));
    return;
  }
  self->request((*live)[i], timeout, f)
      .then([promise](params_msg& p) mutable { promise.deliver(std::move(p)); },
            [self, live, f, timeout, promise, i](caf::error&) mutable {
              ask_live(self, live, f, timeout, promise, i + 1);
            });
}

/// The evaluated model: the first live server's replica (group 0's while
/// its node lives), so that a lost server does not end the evaluations.
caf::behavior gaia_source(caf::event_based_actor* self,
                          std::vector<caf::actor> servers,
                          caf::duration timeout) {
  auto live = std::make_shared<std::vector<caf::actor>>(std::move(servers));
  for (auto& s : *live)
    if (s)
      self->monitor(s);
  self->set_down_handler([live](caf::down_msg& d) {
    for (auto& s : *live)
      if (s && s.address() == d.source)
        s = nullptr;
  });
  return {
      [self, live, timeout](const fetch_msg& f) -> caf::result<params_msg> {
        if (!actors::detail::from_here(self))
          return actors::detail::refuse(self, "Gaia's evaluation source",
                                        "fetch", "this process");
        auto promise = self->make_response_promise<params_msg>();
        ask_live(self, live, f, timeout, promise, 0);
        return promise;
      },
  };
}

} // namespace

void add_gaia_roles(role_registry& roles) {
  roles.register_role<std::uint32_t, std::uint32_t, std::uint32_t>(
      "gaia_server", spawn_server);
  roles.register_role<std::uint32_t, std::uint32_t, std::uint32_t, std::string>(
      "resumed_gaia_server", spawn_resumed_server);
}

void gaia::add_roles(role_registry& roles) const {
  add_gaia_roles(roles);
}

gaia_run::gaia_run(const gaia& algo) : algo_(algo) {
  // the groups wait for the placement (provision)
}

void gaia_run::provision(coordinator_ptr self, std::function<void()> ready) {
  auto& st = self->state;
  auto& c = st.config;
  group_of_ = gaia_groups(algo_, c);
  std::uint32_t count = 0;
  for (auto g : group_of_)
    count = std::max(count, g + 1);
  members_.assign(count, 0);
  for (auto g : group_of_)
    ++members_[g];
  if (!resumed_from_.empty() && states_.size() != count) {
    actors::detail::placement_failed(
        self, "cannot resume from " + resumed_from_ + ": it holds the state of "
                  + std::to_string(states_.size())
                  + " Gaia servers, this job has " + std::to_string(count));
    return;
  }
  servers_.resize(count);
  auto pending = std::make_shared<std::size_t>(0);
  for (std::uint32_t g = 0; g < count; ++g) {
    int node = -1;
    for (std::uint32_t w = 0; w < c.workers && node < 0; ++w)
      if (group_of_[w] == g)
        node = c.placement.worker_at(w);
    const std::string* state = g < states_.size() ? &states_[g] : nullptr;
    if (node < 0) {
      auto sc = gaia_server_config_of(algo_, c, g, count, members_[g]);
      sc.owner = self->node();
      if (state) {
        try {
          check_gaia_state(sc, *state);
        } catch (const std::exception& e) {
          actors::detail::placement_failed(
              self, "cannot resume from " + resumed_from_ + ": " + e.what());
          return;
        }
        sc.state = std::make_shared<const std::string>(*state);
      }
      servers_[g] = self->spawn(gaia_server, std::move(sc));
      self->monitor(servers_[g]);
      continue;
    }
    ++*pending;
    auto agent = c.placement.nodes.at(static_cast<std::size_t>(node));
    self->request(agent, c.request_timeout, spawn_atom::value,
                  std::string{state ? "resumed_gaia_server" : "gaia_server"},
                  state ? caf::make_message(g, count, members_[g], *state)
                        : caf::make_message(g, count, members_[g]))
        .then(
            [this, self, g, pending, ready](caf::actor& h) {
              servers_[g] = caf::actor_cast<gaia_server_actor>(h);
              self->monitor(h);
              if (--*pending == 0)
                wire(self, ready);
            },
            [self, g](caf::error& err) {
              actors::detail::placement_failed(
                  self, "a node could not start Gaia "
                        "server "
                            + std::to_string(g) + ": "
                            + self->system().render(err));
            });
  }
  if (*pending == 0)
    wire(self, std::move(ready));
}

void gaia_run::wire(coordinator_ptr self, std::function<void()> ready) {
  auto& st = self->state;
  std::vector<caf::actor> all;
  for (auto& s : servers_)
    all.push_back(caf::actor_cast<caf::actor>(s));
  for (auto& s : servers_)
    self->send(s, peers_atom::value, all);
  source_ = self->spawn(gaia_source, all, st.config.request_timeout);
  // Each worker's one "shard" is its group's server; every worker answers
  // before the start.
  auto pending = std::make_shared<std::size_t>(st.workers.size());
  auto answered = [pending, ready] {
    if (--*pending == 0)
      ready();
  };
  if (*pending == 0)
    return ready();
  for (std::size_t w = 0; w < st.workers.size(); ++w)
    self->request(caf::actor_cast<caf::actor>(st.workers[w]),
                  st.config.request_timeout, rebind_atom::value,
                  std::uint32_t{0}, all[group_of_[w]])
        .then([answered] { answered(); },
              [self, w](caf::error& err) {
                actors::detail::placement_failed(
                    self, "worker " + std::to_string(w)
                              + " did not take its Gaia server: "
                              + self->system().render(err));
              });
}

caf::actor gaia_run::evaluation_source() const {
  return source_;
}

std::uint32_t gaia_run::groups() const noexcept {
  return static_cast<std::uint32_t>(servers_.size());
}

bool gaia_run::on_down(coordinator_ptr self, const caf::down_msg& msg) {
  for (std::size_t g = 0; g < servers_.size(); ++g)
    if (servers_[g] && servers_[g].address() == msg.source) {
      actors::detail::log().error("Gaia server {} was lost: {}", g,
                                  self->system().render(msg.reason));
      servers_[g] = nullptr;
      return true;
    }
  return false;
}

void gaia_run::finish(coordinator_ptr self, std::function<void()> done) {
  auto remaining = std::make_shared<std::size_t>(0);
  for (auto& s : servers_)
    if (s)
      ++*remaining;
  if (*remaining == 0)
    return done();
  figures_.assign(servers_.size(), nlohmann::json{});
  auto timeout = self->state.config.request_timeout;
  for (std::size_t g = 0; g < servers_.size(); ++g) {
    if (!servers_[g])
      continue;
    self->request(servers_[g], timeout, stats_atom::value, members_atom::value)
        .then(
            [this, g, remaining, done](std::string& text) {
              figures_[g] = nlohmann::json::parse(text, nullptr, false);
              if (--*remaining == 0)
                done();
            },
            [remaining, done](caf::error&) {
              if (--*remaining == 0)
                done();
            });
  }
}

void gaia_run::save(coordinator_ptr self,
                    std::function<void(state_files, std::string)> done) {
  std::vector<saved_role> roles;
  for (std::uint32_t g = 0; g < servers_.size(); ++g) {
    if (!servers_[g])
      return done({}, "Gaia server " + std::to_string(g) + " was lost");
    roles.push_back({caf::actor_cast<caf::actor>(servers_[g]),
                     gaia_server_file(g), "Gaia server " + std::to_string(g)});
  }
  save_roles(self, std::move(roles), std::move(done));
}

void gaia_run::restore(const resume_point& from) {
  resumed_from_ = from.path;
  states_.clear();
  for (std::uint32_t g = 0; from.files.count(gaia_server_file(g)); ++g)
    states_.push_back(from.files.at(gaia_server_file(g)));
  if (states_.empty())
    throw optim::data_error(from.path + ": no " + gaia_server_file(0));
}

void gaia_run::stop(coordinator_ptr self) {
  for (auto& s : servers_)
    if (s)
      self->send_exit(s, caf::exit_reason::user_shutdown);
  if (source_)
    self->send_exit(source_, caf::exit_reason::user_shutdown);
}

void gaia_run::report(const coordinator_state&, nlohmann::json& out,
                      std::uint64_t& messages, std::uint64_t& bytes) const {
  auto servers = nlohmann::json::array();
  std::uint64_t mirror_bytes = 0, sent = 0, checked = 0;
  for (auto& f : figures_) {
    if (!f.is_object())
      continue;
    mirror_bytes += f.value("mirror_bytes", std::uint64_t{0});
    sent += f.value("entries_sent", std::uint64_t{0});
    checked += f.value("entries_checked", std::uint64_t{0});
    messages += f.value("messages", std::uint64_t{0});
    bytes += f.value("bytes", std::uint64_t{0});
    servers.push_back(f);
  }
  auto& g = out["gaia"];
  g["groups"] = servers_.size();
  g["servers"] = std::move(servers);
  g["mirror_bytes"] = mirror_bytes;
  g["significant_share"]
      = checked > 0 ? static_cast<double>(sent) / static_cast<double>(checked)
                    : 0.0;
}

} // namespace troupe::algos
