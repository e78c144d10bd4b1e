#include "algos/local_rounds.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "optim/state_file.hpp"

namespace troupe::algos {

namespace detail {

messages::worker_id round_context::id() const noexcept {
  return w_.id();
}
caf::event_based_actor* round_context::self() noexcept {
  return w_.self();
}
optim::replica& round_context::replica() noexcept {
  return w_.replica();
}
std::uint64_t round_context::steps() const noexcept {
  return w_.steps() / h_;
}
std::uint64_t round_context::clock() const noexcept {
  return w_.clock() / h_;
}
caf::duration round_context::request_timeout() const noexcept {
  return w_.request_timeout();
}
void round_context::count_sent(actors::msg_type t,
                               std::uint64_t bytes) noexcept {
  w_.count_sent(t, bytes);
}
actors::actor_probe* round_context::probe() noexcept {
  return w_.probe();
}
void round_context::count_wait(std::uint64_t ns) noexcept {
  w_.count_wait(ns);
}
void round_context::fail(std::string reason) {
  w_.fail(std::move(reason));
}
void round_context::schedule_timeout(std::uint64_t seq) {
  w_.schedule_timeout(seq);
}
bool round_context::finished() const noexcept {
  return w_.finished();
}
std::uint64_t round_context::max_steps() const noexcept {
  auto m = w_.max_steps();
  return m == ~std::uint64_t{0} ? m : (m + h_ - 1) / h_;
}
void round_context::count_mix() noexcept {
  w_.count_mix();
}
void round_context::count_timeout() noexcept {
  w_.count_timeout();
}
bool round_context::from_coordinator() noexcept {
  return w_.from_coordinator();
}

} // namespace detail

void round_algorithm::check_flags(const job_options&,
                                  const std::set<std::string>&) const {
  if (round_steps < 1 || round_steps > 1000000)
    throw std::invalid_argument("--inner-steps must be in [1, 1000000]");
}

void round_algorithm::resolve(job_options& o, double model_lr) const {
  decentralized_defaults(o); // Nesterov 0.9, decay 1e-4, unless given
  algorithm::resolve(o, model_lr);
}

actors::shard_plan round_algorithm::plan(const actors::job_config&) const {
  return asynchronous_rounds() ? actors::shard_plan::async
                               : actors::shard_plan::sync;
}

bool round_algorithm::tracks_clocks(const actors::job_config&) const noexcept {
  return !asynchronous_rounds();
}

void round_algorithm::check(const actors::job_config&) const {
  if (round_steps == 0)
    throw std::invalid_argument(name() + ": --inner-steps must be at least 1");
  local.check(name(), false);
}

bool round_algorithm::reassigns_steps() const noexcept {
  return false;
}

bool round_algorithm::checkpointable() const noexcept {
  return true;
}

bool round_algorithm::restores_shards(const actors::job_config&) const {
  return false;
}

bool round_algorithm::replicates_shards(const actors::job_config&) const {
  return false;
}

round_options round_algorithm::rounds(const actors::job_config& job) const {
  round_options o;
  o.round_steps = round_steps;
  o.local = local;
  o.exchange = job.policy;
  o.exchange.sync = !asynchronous_rounds();
  // A shard restored into synchronous rounds takes each worker's last
  // push again (as sync's).
  if (o.exchange.sync)
    o.exchange.replay = std::max<std::size_t>(o.exchange.replay, 1);
  return o;
}

round_policy::round_policy(std::vector<actors::shard_ref> shards,
                           const round_options& o, std::size_t n)
    : h_(std::max<std::uint64_t>(o.round_steps, 1)), lr_(o.local.lr),
      start_(n, 0.0f) {
  if (o.local.schedule)
    schedule_.emplace(*o.local.schedule);
  // The exchange pushes what it finds in the gradient buffer at a round's
  // end and fetches at a round's start.
  auto exchange = o.exchange;
  exchange.n_fetch = 1;
  exchange.n_push = 1;
  exchange.prefetch = false;
  exchange.local_lr = 0;
  exchange_ = actors::make_ps_policy(std::move(shards), exchange, n);
}

void round_policy::before_compute(actors::worker_context& ctx,
                                  std::function<void()> ready) {
  if (ctx.clock() % h_ != 0) {
    ready();
    return;
  }
  exchange_->before_compute(
      rounds(ctx), [this, &ctx, ready = std::move(ready)] {
        auto& rep = ctx.replica();
        std::memcpy(start_.data(), rep.params(), start_.size() * sizeof(float));
        round_begins(ctx);
        ready();
      });
}

void round_policy::after_compute(actors::worker_context& ctx,
                                 std::uint32_t samples,
                                 std::function<void()> done) {
  local_step(ctx);
  round_samples_ += samples;
  bool last = ctx.steps() + 1 >= ctx.max_steps();
  if ((ctx.clock() + 1) % h_ != 0 && !last) {
    done();
    return;
  }
  round_ends(ctx);
  // Weighted by the round's examples.
  auto s = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(round_samples_, ~std::uint32_t{0}));
  round_samples_ = 0;
  exchange_->after_compute(rounds(ctx), s, std::move(done));
}

caf::message_handler round_policy::handlers(actors::worker_context& ctx) {
  return exchange_->handlers(rounds(ctx));
}

void round_policy::on_timeout(actors::worker_context& ctx, std::uint64_t seq) {
  exchange_->on_timeout(rounds(ctx), seq);
}

void round_policy::quiesce(actors::worker_context& ctx,
                           std::function<void()> done) {
  exchange_->quiesce(rounds(ctx), std::move(done));
}

void round_policy::add_stats(messages::worker_stats& out) const {
  exchange_->add_stats(out); // its pushes: one a round
}

void round_policy::save(optim::state_writer& w,
                        const std::string& prefix) const {
  w.put(prefix + "round_start", start_);
  w.put_u64(prefix + "round_samples", round_samples_);
  save_own(w, prefix);
  exchange_->save(w, prefix + "exchange.");
}

void round_policy::load(const optim::state_reader& r,
                        const std::string& prefix) {
  auto start = read_floats(r, prefix + "round_start", start_.size());
  auto samples = r.u64_scalar(prefix + "round_samples");
  load_own(r, prefix);
  exchange_->load(r, prefix + "exchange.");
  start_ = std::move(start);
  round_samples_ = samples;
}

double round_policy::local_lr(actors::worker_context& ctx) const {
  auto lr = schedule_ ? schedule_->lr(ctx.steps()) : lr_;
  actors::note_lr(ctx, lr);
  return lr;
}

detail::round_context& round_policy::rounds(actors::worker_context& ctx) {
  // Made once: the exchange's replies hold on to it.
  if (!rounds_ctx_ || &rounds_ctx_->worker() != &ctx)
    rounds_ctx_.emplace(ctx, h_);
  return *rounds_ctx_;
}

std::vector<float> read_floats(const optim::state_reader& r,
                               const std::string& name, std::size_t size) {
  auto v = r.f32(name);
  if (v.size() != size)
    throw r.error(name, "has " + std::to_string(v.size()) + " values, not "
                            + std::to_string(size));
  return v;
}

} // namespace troupe::algos
