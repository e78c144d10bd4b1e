// A node joins the running job (elastic scale-up): the live workers cede a
// share of their remaining steps and of the examples they have not drawn yet
// this epoch; the joining node's workers take them, fetch the current
// parameters from the shards and train like the others. The reverse of a
// lost worker's hand-over (coordinator_loss.cpp): the quotas still add up
// to the job's steps.

#include <algorithm>
#include <memory>

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include "actors/detail/coordinator_ops.hpp"
#include "actors/detail/log.hpp"
#include "actors/detail/rebalance.hpp"
#include "messages/errors.hpp"
#include "optim/quote.hpp"

namespace troupe::actors {

using namespace messages;

namespace detail {

namespace {

/// What the live workers ceded for one join.
struct join_pool {
  hello_msg hello;
  node_actor agent;
  std::uint32_t slots = 0; ///< workers the node may host
  std::size_t pending = 0; ///< cede answers still out
  std::uint64_t steps = 0;
  std::vector<std::uint64_t> examples;
  std::vector<std::uint32_t> ceded_by;
  std::uint64_t steps_at_join = 0;
  caf::typed_response_promise<std::uint32_t> reply;
};

using pool_ptr = std::shared_ptr<join_pool>;

std::uint32_t joined_workers(const coordinator_state& st) {
  std::uint32_t n = 0;
  for (const auto& j : st.joined)
    n += static_cast<std::uint32_t>(j.workers.size());
  return n;
}

/// Why a node may not join now ("" if it may).
std::string refusal(const coordinator_state& st, const hello_msg& hello) {
  const auto& c = st.config;
  if (!c.algorithm->elastic(c))
    return "the job's algorithm, " + c.algorithm->name()
           + ", does not take nodes joining a running job";
  if (!c.make_joined_replica)
    return "this job cannot give a joining worker examples";
  if (c.checkpoints.write)
    return "a checkpointing job does not take nodes joining it yet";
  if (!st.provisioned)
    return "the job is starting; join once it runs";
  if (st.finishing || st.result)
    return "the job is finishing";
  if (st.joining)
    return "another node is joining; try again";
  bool warming = false;
  for (std::size_t w = 0; w < st.workers.size(); ++w)
    warming = warming || (st.live[w] && !st.started[w]);
  if (warming)
    return "the job's warm start is under way (worker 0 trains alone); join "
           "once every worker trains";
  if (hello.worker_slots == 0)
    return "the node offers no worker slots (a node joining a running job "
           "hosts workers only)";
  if (joined_workers(st) >= c.max_joined_workers)
    return "the job has taken its " + std::to_string(c.max_joined_workers)
           + " joining workers (the cap)";
  return {};
}

/// The join is over (`st.joining` cleared): if every worker finished while
/// it was under way and none joined, the job is done.
void maybe_done(coordinator_ptr self) {
  auto& st = self->state;
  if (!st.finishing && !st.result && all_workers_done(st))
    finish(self, st.steps_unassigned > 0 ? "partially done" : "steps done");
}

/// Gives steps of a joining worker that could not start back to the live
/// workers (steps only: its examples are dropped, with a warning).
void give_back(coordinator_ptr self, std::uint32_t id, std::uint64_t steps,
               std::size_t examples) {
  auto& st = self->state;
  std::vector<std::uint32_t> to;
  for (std::size_t i = 0; i < st.workers.size(); ++i)
    if (st.live[i] && !st.gone[i])
      to.push_back(static_cast<std::uint32_t>(i));
  log().warn("joining worker {} did not start: its {} steps go back to {}; "
             "its {} examples are left out of the run",
             id, steps, optim::counted(to.size(), "live worker"), examples);
  if (to.empty()) {
    st.steps_unassigned += steps;
    return;
  }
  auto shares = split_steps(steps, to.size());
  for (std::size_t k = 0; k < to.size(); ++k) {
    st.quota[to[k]] += shares[k];
    self->send(st.workers[to[k]], adopt_atom::value, static_cast<worker_id>(id),
               0u, 0u, shares[k]);
  }
  st.steps_reassigned += steps;
}

/// Every joining worker's spawn was answered: the started ones train, the
/// others' steps go back; the registrar hears how many started.
void settle(coordinator_ptr self, const pool_ptr& pool,
            const std::vector<caf::actor>& started,
            const std::vector<cede_msg>& shares, const std::string& error) {
  auto& st = self->state;
  st.joining = false;
  st.join_steps_pending = 0;
  auto first = static_cast<std::uint32_t>(st.workers.size());
  auto n = std::count_if(started.begin(), started.end(),
                         [](const caf::actor& h) { return bool{h}; });
  // The job began to finish meanwhile: the joined workers end unstarted,
  // their steps counted not taken (their quotas, never done).
  bool late = st.finishing || st.result.has_value();
  std::int32_t node = -1;
  auto& plan = st.config.placement;
  if (n > 0 && st.result)
    self->send(pool->agent, stop_atom::value, std::string{"the job is over"});
  else if (n > 0) {
    node = static_cast<std::int32_t>(plan.nodes.size());
    plan.nodes.push_back(pool->agent);
    plan.node_names.push_back(pool->hello.node);
  }
  joined_node rec;
  rec.node = pool->hello.node;
  rec.seconds = seconds_since(self, st.t0);
  rec.steps_at_join = pool->steps_at_join;
  rec.steps = pool->steps;
  rec.examples = pool->examples.size();
  rec.ceded_by = pool->ceded_by;
  for (std::size_t k = 0; k < started.size(); ++k) {
    auto id = first + static_cast<std::uint32_t>(k);
    const auto& h = started[k];
    st.workers.push_back(caf::actor_cast<worker_actor>(h));
    st.started.push_back(!h || late);
    st.live.push_back(h && !late);
    st.gone.push_back(!h || late);
    st.quota.push_back(h ? shares[k].steps : 0);
    st.worker_steps.push_back(0);
    plan.worker_node.resize(id + 1, -1);
    plan.worker_node[id] = h ? node : -1;
    if (!h) {
      give_back(self, id, shares[k].steps, shares[k].examples.size());
      continue;
    }
    rec.workers.push_back(id);
    if (late)
      self->send_exit(h, caf::exit_reason::user_shutdown);
    else
      self->monitor(h);
  }
  if (n == 0) {
    log().warn("node {} could not start its workers: {}",
               optim::quote(pool->hello.node), error);
    pool->reply.deliver(make_error(
        errc::join_refused, "the node could not start its workers: " + error));
    maybe_done(self);
    return;
  }
  log().info("node {} joined the running job with {} at step {}: "
             "{} steps and {} examples ceded by {}",
             optim::quote(rec.node),
             optim::counted(rec.workers.size(), "worker"), rec.steps_at_join,
             rec.steps, rec.examples,
             optim::counted(rec.ceded_by.size(), "worker"));
  for (auto& o : st.config.observers)
    o->on_node_joined({rec.node, "", rec.seconds});
  if (st.cluster_monitor)
    caf::unsafe_send_as(self, st.cluster_monitor, join_atom::value, rec.node,
                        caf::actor_cast<caf::actor>(pool->agent));
  auto count = static_cast<std::uint32_t>(rec.workers.size());
  st.joined.push_back(std::move(rec));
  for (auto id : st.joined.back().workers)
    start_worker(self, id, 0);
  pool->reply.deliver(count);
  maybe_done(self); // the job began to finish meanwhile: none started
}

/// Every cede was answered: places the joining workers on the node.
void place_joiners(coordinator_ptr self, const pool_ptr& pool) {
  auto& st = self->state;
  if (st.finishing || st.result || pool->steps == 0) {
    st.joining = false;
    st.join_steps_pending = 0;
    auto why = pool->steps == 0
                   ? std::string{"the live workers have no steps left to share"}
                   : std::string{"the job is finishing"};
    // Ceded steps the job no longer takes stay in the ledger as not taken.
    st.steps_unassigned += pool->steps;
    pool->reply.deliver(make_error(errc::join_refused, why));
    maybe_done(self);
    return;
  }
  auto k = std::min<std::size_t>({pool->slots, pool->examples.size(),
                                  static_cast<std::size_t>(pool->steps)});
  auto steps = split_steps(pool->steps, k);
  auto examples = split_examples(pool->examples, k);
  auto first = static_cast<std::uint32_t>(st.workers.size());
  std::vector<caf::actor> handles;
  for (auto& s : st.shards)
    handles.push_back(caf::actor_cast<caf::actor>(s.handle));
  auto started = std::make_shared<std::vector<caf::actor>>(k);
  auto shares = std::make_shared<std::vector<cede_msg>>();
  auto left = std::make_shared<std::size_t>(k);
  auto error = std::make_shared<std::string>();
  for (std::size_t i = 0; i < k; ++i) {
    cede_msg share;
    share.worker = first + static_cast<worker_id>(i);
    share.steps = steps[i];
    share.examples = std::move(examples[i]);
    shares->push_back(share);
    auto args = caf::make_message(share.worker, handles,
                                  caf::actor_cast<caf::actor>(self), share);
    auto done = [self, pool, started, shares, left, error] {
      if (--*left == 0)
        settle(self, pool, *started, *shares, *error);
    };
    self->request(pool->agent, st.config.request_timeout, spawn_atom::value,
                  std::string{"joined_worker"}, std::move(args))
        .then(
            [started, i, done](caf::actor& h) {
              (*started)[i] = h;
              done();
            },
            [self, error, done](caf::error& err) {
              *error = self->system().render(err);
              done();
            });
  }
}

} // namespace

caf::result<std::uint32_t> join(coordinator_ptr self, hello_msg hello,
                                caf::actor agent) {
  auto& st = self->state;
  auto why = refusal(st, hello);
  std::vector<std::uint32_t> donors;
  for (std::size_t w = 0; w < st.workers.size() && why.empty(); ++w)
    if (st.live[w] && !st.gone[w] && st.started[w])
      donors.push_back(static_cast<std::uint32_t>(w));
  if (why.empty() && donors.empty())
    why = "no live worker is training to share its steps";
  if (!why.empty()) {
    // The join service logs the refusal (rate-limited).
    return make_error(errc::join_refused, why);
  }
  auto pool = std::make_shared<join_pool>();
  pool->slots = std::min(hello.worker_slots,
                         st.config.max_joined_workers - joined_workers(st));
  pool->hello = std::move(hello);
  pool->agent = caf::actor_cast<node_actor>(agent);
  pool->pending = donors.size();
  pool->steps_at_join = st.total_steps;
  pool->reply = self->make_response_promise<std::uint32_t>();
  st.joining = true;
  // Each live worker keeps den - num of den shares: with L workers and n
  // joining, the n new ones end with about n / (L + n) of what is left.
  auto num = pool->slots;
  auto den = static_cast<std::uint32_t>(donors.size()) + num;
  for (auto w : donors)
    self->request(st.workers[w], st.config.request_timeout, cede_atom::value,
                  num, den)
        .then(
            [self, pool, w](cede_msg& m) {
              auto& st = self->state;
              // Lost meanwhile: its steps (these too) went to the survivors,
              // and its examples with its part.
              if (m.steps > 0 && !st.gone[w] && m.steps <= st.quota[w]) {
                st.quota[w] -= m.steps;
                pool->steps += m.steps;
                st.join_steps_pending = pool->steps;
                pool->examples.insert(pool->examples.end(), m.examples.begin(),
                                      m.examples.end());
                pool->ceded_by.push_back(w);
              }
              if (--pool->pending == 0)
                place_joiners(self, pool);
            },
            [self, pool, w](caf::error& err) {
              log().warn("worker {} did not cede to the joining node: {}", w,
                         self->system().render(err));
              if (--pool->pending == 0)
                place_joiners(self, pool);
            });
  return pool->reply;
}

nlohmann::json joined_report(const coordinator_state& st) {
  auto out = nlohmann::json::array();
  for (const auto& j : st.joined)
    out.push_back({{"node", j.node},
                   {"workers", j.workers},
                   {"seconds", j.seconds},
                   {"steps_at_join", j.steps_at_join},
                   {"steps_ceded", j.steps},
                   {"examples_ceded", j.examples},
                   {"ceded_by", j.ceded_by}});
  return out;
}

} // namespace detail

} // namespace troupe::actors
