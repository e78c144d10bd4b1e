// A pipeline stage's step: its fetch, its passes in stage_order, its
// pushes, and its report to the head.

#include "algos/pipeline/stage_state.hpp"

#include <cmath>

#include "actors/detail/log.hpp"

namespace troupe::algos {

using namespace messages;
using actors::work_kind;

namespace {

/// The share of a stage's cost its forward pass takes (a backward pass
/// costs about twice a forward one), as reported to a time model; the
/// backward takes the rest, the last stage's forward_backward all of it.
constexpr double forward_cost = 1.0 / 3;

} // namespace

actors::msg_type stage_kind() {
  static const auto k = actors::message_kind("stage");
  return k;
}

void stage_state::fail(const std::string& why) {
  actors::detail::log().error("{}: {}", who(), why);
  self->quit(caf::make_error(caf::sec::runtime_error, who() + ": " + why));
}

void stage_state::fetch(std::function<void()> done) {
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
              auto scope = actors::on_message(probe.get(), self,
                                              actors::msg_type::params,
                                              4 * p.values.size());
              if (gen != generation)
                return; // rewired meanwhile: a fresh fetch follows
              if (p.offset != range.offset || p.values.size() != range.size) {
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
              fail("fetch from shard " + std::to_string(i)
                   + " failed: " + self->system().render(err));
            });
  }
}

void stage_state::push(std::uint64_t seq, std::uint32_t samples) {
  const auto& g = stage->grad_sum();
  for (std::size_t i = 0; i < cfg.shards.size(); ++i) {
    const auto range = cfg.shards[i].range;
    const auto* from = g.data() + (range.offset - cfg.plan.param_offset);
    push_msg p{cfg.replica,
               seq,
               versions[i],
               range.offset,
               step + 1,
               samples,
               tensor{std::vector<float>(from, from + range.size)}};
    if (probe)
      probe->sent(actors::msg_type::push, 4 * range.size);
    self->send(cfg.shards[i].handle, std::move(p));
  }
  stage->clear_grads();
}

bool stage_state::enter(std::uint64_t k) {
  if (in_step)
    return k == step && !finishing;
  if (last_done && k <= *last_done)
    return false;
  in_step = true;
  finishing = false;
  step = k;
  order = optim::stage_order(cfg.schedule, cfg.stage, cfg.stages, cfg.micros);
  pos = 0;
  loss = 0;
  busy = 0;
  step_samples = 0;
  // A step's span runs from the end of the one before (the pipeline's fill
  // and drain are idle time of this stage too).
  began = last_end.value_or(actors::now(self));
  fetching = true;
  if (probe)
    probe->activity("fetching");
  const auto gen = generation;
  fetch([this, gen] {
    if (gen != generation)
      return;
    fetching = false;
    advance();
  });
  return true;
}

void stage_state::advance() {
  while (in_step && !fetching && !finishing && pos < order.size()) {
    const auto op = order[pos];
    if (probe)
      probe->activity("computing");
    try {
      if (op.forward ? !forward(op.micro) : !backward(op.micro)) {
        if (probe)
          probe->activity("waiting");
        return; // its input has not arrived
      }
    } catch (const std::exception& e) {
      fail("micro-batch " + std::to_string(op.micro) + " of step "
           + std::to_string(step) + ": " + e.what());
      return;
    }
    ++pos;
  }
  if (in_step && !fetching && !finishing && pos == order.size())
    finish();
}

bool stage_state::forward(std::uint32_t m) {
  auto in = fwd.find(m);
  if (in == fwd.end())
    return false;
  auto t = targets.find(m);
  if (last() && t == targets.end())
    return false;
  const auto samples = static_cast<std::uint32_t>(in->second.cols());
  step_samples += samples;
  const auto t0 = actors::now(self);
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
    actors::did_work(self, work_kind::stage, samples, cfg.share);
    busy += actors::nanoseconds_since(self, t0);
    if (!first())
      send_back(m);
    if (one_f_one_b())
      push_micro(m, tg.samples);
    targets.erase(t);
  } else {
    const auto& out = stage->forward(m, in->second);
    actors::did_work(self, work_kind::stage, samples, cfg.share * forward_cost);
    busy += actors::nanoseconds_since(self, t0);
    stage_tensor_msg msg{
        cfg.replica,
        generation,
        step,
        m,
        false,
        static_cast<std::uint32_t>(out.rows()),
        tensor{std::vector<float>(out.data(), out.data() + out.size())}};
    if (probe)
      probe->sent(stage_kind(), 4 * out.size());
    self->send(next, std::move(msg));
  }
  fwd.erase(in);
  return true;
}

bool stage_state::backward(std::uint32_t m) {
  if (last())
    return true; // done with its forward
  auto g = bwd.find(m);
  if (g == bwd.end())
    return false;
  const auto samples = static_cast<std::uint32_t>(g->second.cols());
  const auto t0 = actors::now(self);
  stage->backward(m, g->second, first() ? nullptr : &din);
  actors::did_work(self, work_kind::stage, samples,
                   cfg.share * (1 - forward_cost));
  busy += actors::nanoseconds_since(self, t0);
  bwd.erase(g);
  if (!first())
    send_back(m);
  if (one_f_one_b()) {
    push_micro(m, samples);
  }
  return true;
}

void stage_state::send_back(std::uint32_t m) {
  stage_tensor_msg msg{
      cfg.replica,
      generation,
      step,
      m,
      true,
      static_cast<std::uint32_t>(din.rows()),
      tensor{std::vector<float>(din.data(), din.data() + din.size())}};
  if (probe)
    probe->sent(stage_kind(), 4 * din.size());
  self->send(prev, std::move(msg));
}

void stage_state::push_micro(std::uint32_t m, std::uint32_t samples) {
  push(step * cfg.micros + m + 1, samples);
  if (async_fetch || cfg.shards.empty())
    return;
  async_fetch = true;
  const auto gen = generation;
  fetch([this, gen] {
    if (gen == generation)
      async_fetch = false;
  });
}

void stage_state::finish() {
  if (probe)
    probe->activity("pushing");
  finishing = true;
  if (!one_f_one_b() && !cfg.shards.empty())
    push(step + 1, step_samples);
  auto remaining = std::make_shared<std::size_t>(cfg.shards.size());
  const auto gen = generation;
  auto report = [this, gen] {
    if (gen != generation)
      return;
    const auto span = actors::nanoseconds_since(self, began);
    stage_done_msg d{cfg.replica,
                     cfg.stage,
                     generation,
                     step,
                     real{last() ? loss : std::nan("")},
                     busy,
                     span > busy ? span - busy : 0};
    fig.steps += 1;
    if (probe) {
      probe->gauge("steps", static_cast<double>(fig.steps));
      probe->gauge("dropped", static_cast<double>(fig.dropped));
      probe->gauge("refused", static_cast<double>(fig.refused));
      probe->gauge("bubble", span > 0 ? static_cast<double>(d.idle_ns)
                                            / static_cast<double>(span)
                                      : 0.0);
      probe->progress();
    }
    self->send(head, d);
    last_end = actors::now(self);
    if (probe)
      probe->activity("waiting");
    in_step = false;
    finishing = false;
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

void stage_state::take(stage_batch_msg& b, const caf::actor_addr& from) {
  if (b.generation != generation) {
    if (early(b.generation))
      early_batches.emplace_back(from, std::move(b));
    else
      ++fig.dropped;
    return;
  }
  const bool wants_x = first();
  const bool wants_y = last();
  if (!head || from != head.address() || b.replica != cfg.replica
      || b.micro >= cfg.micros || b.samples == 0 || b.samples > cfg.max_samples
      || !(b.scale.value > 0) || !(b.scale.value <= 1)
      || (wants_x && b.x.size() != std::size_t{b.samples} * in_rows)
      || (wants_y && !regression && b.labels.size() != b.samples)
      || (wants_y && regression && b.targets.size() != b.samples)) {
    ++fig.refused;
    return;
  }
  if (!enter(b.step)) {
    ++fig.dropped;
    return;
  }
  if (wants_x) {
    optim::matrix<float> x(static_cast<Eigen::Index>(in_rows),
                           static_cast<Eigen::Index>(b.samples));
    b.x.copy_to(x.data());
    fwd[b.micro] = std::move(x);
  }
  if (wants_y)
    targets[b.micro] = target{std::move(b.labels), std::move(b.targets),
                              b.scale.value, b.samples};
  advance();
}

void stage_state::take(stage_tensor_msg& t, const caf::actor_addr& from) {
  if (t.generation != generation) {
    if (early(t.generation))
      early_tensors.emplace_back(from, std::move(t));
    else
      ++fig.dropped;
    return;
  }
  const bool back = t.backward;
  const std::size_t rows = back ? out_rows : in_rows;
  const caf::actor& neighbour = back ? next : prev;
  if (!neighbour || from != neighbour.address() || t.replica != cfg.replica
      || t.micro >= cfg.micros || t.rows != rows || t.values.size() == 0
      || t.values.size() % rows != 0
      || t.values.size() / rows > cfg.max_samples) {
    ++fig.refused;
    return;
  }
  if (!enter(t.step)) {
    ++fig.dropped;
    return;
  }
  optim::matrix<float> v(static_cast<Eigen::Index>(rows),
                         static_cast<Eigen::Index>(t.values.size() / rows));
  t.values.copy_to(v.data());
  (back ? bwd : fwd)[t.micro] = std::move(v);
  advance();
}

void stage_state::rewire(stage_wiring_msg& w) {
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
  last_done.reset();
  last_end.reset();
  // What came ahead of this wiring, in the order it came.
  auto batches = std::move(early_batches);
  auto tensors = std::move(early_tensors);
  early_batches.clear();
  early_tensors.clear();
  for (auto& [from, b] : batches)
    if (b.generation >= generation)
      take(b, from);
  for (auto& [from, t] : tensors)
    if (t.generation >= generation)
      take(t, from);
}

} // namespace troupe::algos
