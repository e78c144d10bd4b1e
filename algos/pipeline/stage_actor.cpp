#include "algos/pipeline/stage_actor.hpp"

#include <chrono>
#include <map>
#include <memory>

#include <caf/actor_cast.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/detail/caller.hpp"
#include "actors/detail/log.hpp"
#include "actors/probe.hpp"
#include "messages/pipeline.hpp"
#include "optim/model_spec.hpp"

namespace troupe::algos {

using namespace messages;
using clock_type = std::chrono::steady_clock;

namespace {

std::uint64_t ns_since(clock_type::time_point t0) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now()
                                                           - t0)
          .count());
}

actors::msg_type stage_kind() {
  static const auto k = actors::message_kind("stage");
  return k;
}

} // namespace

struct stage_state {
  static inline const char* name = "pipeline_stage";

  struct target {
    std::vector<std::int32_t> labels;
    std::vector<float> values;
    double scale = 1;
    std::uint32_t samples = 0;
  };

  caf::event_based_actor* self = nullptr;
  stage_config cfg;
  std::unique_ptr<optim::pipeline_stage<float>> stage;
  bool regression = false;
  std::size_t in_rows = 0;
  std::size_t out_rows = 0;
  std::vector<std::uint64_t> versions; // per shard, at the last fetch
  std::uint64_t generation = 0;        // 0: not wired yet
  caf::actor head, prev, next;
  // The step under way.
  bool in_step = false;
  bool finishing = false;
  bool fetching = false;     // the step waits for a fetch
  bool async_fetch = false;  // 1F1B: a fetch in flight
  bool have_done = false;    // last_done is set
  std::uint64_t last_done = 0;
  std::uint64_t step = 0;
  std::vector<optim::pipe_op> order;
  std::size_t pos = 0;
  std::map<std::uint32_t, optim::matrix<float>> fwd, bwd;
  std::map<std::uint32_t, target> targets;
  std::uint32_t step_samples = 0;
  double loss = 0;
  clock_type::time_point began;
  std::uint64_t busy = 0;
  stage_figures fig;
  actors::probe_ref probe;
  optim::matrix<float> din;

  bool first() const {
    return cfg.stage == 0;
  }
  bool last() const {
    return cfg.stage + 1 == cfg.stages;
  }
  bool one_f_one_b() const {
    return cfg.schedule == optim::pipeline_schedule::one_f_one_b;
  }
  std::string who() const {
    return "pipeline stage " + std::to_string(cfg.stage) + " of replica "
           + std::to_string(cfg.replica);
  }
  bool sent_by(const caf::actor& a) const {
    return a
           && caf::actor_cast<caf::actor_addr>(self->current_sender())
                  == a.address();
  }
  void fail(const std::string& why) {
    actors::detail::log().error("{}: {}", who(), why);
    self->quit(caf::make_error(caf::sec::runtime_error, who() + ": " + why));
  }

  // -- the shards -------------------------------------------------------------

  void fetch(std::function<void()> done) {
    if (cfg.shards.empty()) {
      done();
      return;
    }
    auto remaining = std::make_shared<std::size_t>(cfg.shards.size());
    const auto gen = generation;
    for (std::size_t i = 0; i < cfg.shards.size(); ++i) {
      const auto range = cfg.shards[i].range;
      fetch_msg f{cfg.replica, range.offset, range.size, step};
      if (probe)
        probe->sent(actors::msg_type::fetch, actors::small_message_bytes);
      self->request(cfg.shards[i].handle, cfg.request_timeout, f)
          .then(
              [this, i, range, gen, remaining, done](params_msg& p) {
                auto scope = actors::on_message(
                    probe.get(), self, actors::msg_type::params,
                    4 * p.values.size());
                if (gen != generation)
                  return; // rewired meanwhile: a fresh fetch follows
                if (p.offset != range.offset
                    || p.values.size() != range.size) {
                  fail("shard answered a fetch with the wrong range");
                  return;
                }
                p.values.copy_to(stage->model().params()
                                 + (range.offset - cfg.plan.param_offset));
                versions[i] = p.version;
                if (--*remaining == 0) {
                  stage->bump_version();
                  done();
                }
              },
              [this, i](caf::error& err) {
                fail("fetch from shard " + std::to_string(i) + " failed: "
                     + self->system().render(err));
              });
    }
  }

  void push(std::uint64_t seq, std::uint32_t samples) {
    const auto& g = stage->grad_sum();
    for (std::size_t i = 0; i < cfg.shards.size(); ++i) {
      const auto range = cfg.shards[i].range;
      const auto* from = g.data() + (range.offset - cfg.plan.param_offset);
      push_msg p{cfg.replica,  seq,     versions[i], range.offset,
                 step + 1,     samples, tensor{std::vector<float>(
                                            from, from + range.size)}};
      if (probe)
        probe->sent(actors::msg_type::push, 4 * range.size);
      self->send(cfg.shards[i].handle, std::move(p));
    }
    stage->clear_grads();
  }

  // -- the step ---------------------------------------------------------------

  // Takes a message of step `k`: false if it belongs to no step this stage
  // runs now (dropped).
  bool enter(std::uint64_t k) {
    if (in_step)
      return k == step && !finishing;
    if (have_done && k <= last_done)
      return false;
    in_step = true;
    finishing = false;
    step = k;
    order = optim::stage_order(cfg.schedule, cfg.stage, cfg.stages,
                               cfg.micros);
    pos = 0;
    loss = 0;
    busy = 0;
    step_samples = 0;
    began = clock_type::now();
    fetching = true;
    const auto gen = generation;
    fetch([this, gen] {
      if (gen != generation)
        return;
      fetching = false;
      advance();
    });
    return true;
  }

  void advance() {
    while (in_step && !fetching && !finishing && pos < order.size()) {
      const auto op = order[pos];
      if (op.forward ? !forward(op.micro) : !backward(op.micro))
        return; // its input has not arrived
      ++pos;
    }
    if (in_step && !fetching && !finishing && pos == order.size())
      finish();
  }

  bool forward(std::uint32_t m) {
    auto in = fwd.find(m);
    if (in == fwd.end())
      return false;
    auto t = targets.find(m);
    if (last() && t == targets.end())
      return false;
    step_samples += static_cast<std::uint32_t>(in->second.cols());
    const auto t0 = clock_type::now();
    if (last()) {
      const auto& tg = t->second;
      optim::batch_targets bt{tg.labels.empty() ? nullptr : tg.labels.data(),
                              tg.values.empty() ? nullptr : tg.values.data()};
      // 1F1B pushes each micro-batch's share of the batch's gradient: the
      // batch moves the weights as far as under GPipe, in M updates.
      const auto scale = static_cast<float>(tg.scale);
      loss += tg.scale
              * static_cast<double>(stage->forward_backward(
                  m, in->second, bt, scale, first() ? nullptr : &din));
      busy += ns_since(t0);
      if (!first())
        send_back(m);
      if (one_f_one_b())
        push(step * cfg.micros + m + 1, tg.samples);
      targets.erase(t);
    } else {
      const auto& out = stage->forward(m, in->second);
      busy += ns_since(t0);
      stage_tensor_msg msg{cfg.replica, generation, step, m, false,
                           static_cast<std::uint32_t>(out.rows()),
                           tensor{std::vector<float>(out.data(),
                                                     out.data() + out.size())}};
      if (probe)
        probe->sent(stage_kind(), 4 * out.size());
      self->send(next, std::move(msg));
    }
    fwd.erase(in);
    return true;
  }

  bool backward(std::uint32_t m) {
    if (last())
      return true; // done with its forward
    auto g = bwd.find(m);
    if (g == bwd.end())
      return false;
    const auto samples = static_cast<std::uint32_t>(g->second.cols());
    const auto t0 = clock_type::now();
    stage->backward(m, g->second, first() ? nullptr : &din);
    busy += ns_since(t0);
    bwd.erase(g);
    if (!first())
      send_back(m);
    if (one_f_one_b()) {
      push(step * cfg.micros + m + 1, samples);
      refresh();
    }
    return true;
  }

  void send_back(std::uint32_t m) {
    stage_tensor_msg msg{cfg.replica, generation, step, m, true,
                         static_cast<std::uint32_t>(din.rows()),
                         tensor{std::vector<float>(din.data(),
                                                   din.data() + din.size())}};
    if (probe)
      probe->sent(stage_kind(), 4 * din.size());
    self->send(prev, std::move(msg));
  }

  // 1F1B: the weights move under the micro-batches in flight; the next
  // fetch is sent as soon as the last one answered.
  void refresh() {
    if (async_fetch || cfg.shards.empty())
      return;
    async_fetch = true;
    const auto gen = generation;
    fetch([this, gen] {
      if (gen == generation)
        async_fetch = false;
    });
  }

  void finish() {
    finishing = true;
    if (!one_f_one_b() && !cfg.shards.empty())
      push(step + 1, step_samples);
    auto remaining = std::make_shared<std::size_t>(cfg.shards.size());
    const auto gen = generation;
    auto report = [this, gen] {
      if (gen != generation)
        return;
      const auto span = ns_since(began);
      stage_done_msg d{cfg.replica, cfg.stage, generation, step,
                       real{last() ? loss : std::nan("")}, busy,
                       span > busy ? span - busy : 0};
      fig.steps += 1;
      fig.busy_ns += busy;
      fig.idle_ns += d.idle_ns;
      fig.recomputed = stage->recomputed();
      if (probe) {
        probe->gauge("steps", static_cast<double>(fig.steps));
        probe->gauge("bubble", span > 0 ? static_cast<double>(d.idle_ns)
                                              / static_cast<double>(span)
                                        : 0.0);
        probe->progress();
      }
      self->send(head, d);
      in_step = false;
      finishing = false;
      have_done = true;
      last_done = step;
    };
    if (*remaining == 0) {
      report();
      return;
    }
    // The pushes are applied where they count before the head moves on.
    for (const auto& s : cfg.shards)
      self->request(s.handle, cfg.request_timeout, flush_atom::value)
          .then(
              [remaining, report](std::uint64_t) {
                if (--*remaining == 0)
                  report();
              },
              [this](caf::error& err) {
                fail("a shard did not confirm the step's push: "
                     + self->system().render(err));
              });
  }

  // -- wiring -------------------------------------------------------------------

  void rewire(stage_wiring_msg& w) {
    generation = w.generation;
    head = w.head;
    prev = first() ? caf::actor{} : w.stages[cfg.stage - 1];
    next = last() ? caf::actor{} : w.stages[cfg.stage + 1];
    self->monitor(head);
    // What was in flight belongs to the old generation.
    stage->drop_in_flight();
    stage->clear_grads();
    fwd.clear();
    bwd.clear();
    targets.clear();
    in_step = finishing = fetching = async_fetch = false;
    have_done = false;
  }
};

namespace {

caf::behavior stage_behavior(caf::stateful_actor<stage_state>* self,
                             stage_config cfg) {
  auto& st = self->state;
  st.self = self;
  st.cfg = std::move(cfg);
  auto model = optim::build_stage<float>(st.cfg.model, st.cfg.input,
                                         st.cfg.classes, st.cfg.plan.first,
                                         st.cfg.plan.last);
  st.regression = optim::model_loss(st.cfg.model) == optim::loss_kind::mse;
  st.in_rows = model.input_shape().size();
  st.out_rows = model.output_shape().size();
  st.stage = std::make_unique<optim::pipeline_stage<float>>(
      std::move(model), st.cfg.stash && st.one_f_one_b(),
      st.cfg.seed ^ (0x5743ull * (st.cfg.replica + 1)));
  st.versions.assign(st.cfg.shards.size(), 0);
  st.probe = actors::make_probe(self, st.who(), "stage", true);
  self->set_down_handler([self](caf::down_msg& msg) {
    if (msg.source == self->state.head.address())
      self->quit(); // the replica's head is gone: so is the replica
  });
  return {
      [self](stage_wiring_msg& w) {
        auto& st = self->state;
        auto scope = actors::on_message(st.probe.get(), self,
                                        actors::msg_type::setup,
                                        actors::small_message_bytes);
        const bool boss
            = actors::detail::from_node(self, st.cfg.owner)
              || (st.cfg.owner == caf::none && actors::detail::from_here(self));
        if (!boss || w.stages.size() != st.cfg.stages || !w.head
            || w.generation <= st.generation) {
          ++st.fig.refused;
          return;
        }
        st.rewire(w);
      },
      [self](stage_batch_msg& b) {
        auto& st = self->state;
        auto scope = actors::on_message(st.probe.get(), self, stage_kind(),
                                        4 * b.x.size() + 64);
        if (!st.sent_by(st.head) || b.replica != st.cfg.replica
            || b.micro >= st.cfg.micros || b.samples == 0
            || b.samples > st.cfg.max_samples || !(b.scale.value > 0)
            || !(b.scale.value <= 1)) {
          ++st.fig.refused;
          return;
        }
        const bool wants_x = st.first();
        const bool wants_y = st.last();
        if ((wants_x && b.x.size() != std::size_t{b.samples} * st.in_rows)
            || (wants_y && !st.regression && b.labels.size() != b.samples)
            || (wants_y && st.regression && b.targets.size() != b.samples)) {
          ++st.fig.refused;
          return;
        }
        if (b.generation != st.generation || !st.enter(b.step)) {
          ++st.fig.dropped;
          return;
        }
        if (wants_x) {
          optim::matrix<float> x(static_cast<Eigen::Index>(st.in_rows),
                                 static_cast<Eigen::Index>(b.samples));
          b.x.copy_to(x.data());
          st.fwd[b.micro] = std::move(x);
        }
        if (wants_y)
          st.targets[b.micro] = stage_state::target{
              std::move(b.labels), std::move(b.targets), b.scale.value,
              b.samples};
        st.advance();
      },
      [self](stage_tensor_msg& t) {
        auto& st = self->state;
        auto scope = actors::on_message(st.probe.get(), self, stage_kind(),
                                        4 * t.values.size() + 64);
        const bool back = t.backward;
        const std::size_t rows = back ? st.out_rows : st.in_rows;
        const caf::actor& from = back ? st.next : st.prev;
        if (!st.sent_by(from) || t.replica != st.cfg.replica
            || t.micro >= st.cfg.micros || t.rows != rows
            || t.values.size() % rows != 0 || t.values.size() == 0
            || t.values.size() / rows > st.cfg.max_samples) {
          ++st.fig.refused;
          return;
        }
        if (t.generation != st.generation || !st.enter(t.step)) {
          ++st.fig.dropped;
          return;
        }
        optim::matrix<float> v(
            static_cast<Eigen::Index>(rows),
            static_cast<Eigen::Index>(t.values.size() / rows));
        t.values.copy_to(v.data());
        (back ? st.bwd : st.fwd)[t.micro] = std::move(v);
        st.advance();
      },
  };
}

} // namespace

caf::actor spawn_stage(caf::actor_system& sys, stage_config config) {
  return sys.spawn(stage_behavior, std::move(config));
}

} // namespace troupe::algos
