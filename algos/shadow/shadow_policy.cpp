// ShadowSync's worker policy: local steps that never wait (the local
// policy) plus the handler of the syncer's corrections
// (shadow_member_actor); the syncer (shadow_syncer.hpp) reads the workers'
// parameters through the core's fetch.

#include "algos/shadow/shadow_policy.hpp"

#include <cmath>
#include <memory>

#include "actors/detail/log.hpp"
#include "algos/shadow/shadow_state.hpp"
#include "messages/gossip.hpp"
#include "optim/state_file.hpp"

namespace troupe::algos {

namespace {

/// Its messages' kinds in the probes (actors/probe.hpp).

} // namespace

using namespace messages;

namespace {

class shadow_policy : public actors::comm_policy {
public:
  explicit shadow_policy(std::unique_ptr<comm_policy> local)
      : local_(std::move(local)) {}

  void before_compute(actors::worker_context& ctx,
                      std::function<void()> ready) override {
    local_->before_compute(ctx, std::move(ready));
  }

  void after_compute(actors::worker_context& ctx, std::uint32_t samples,
                     std::function<void()> done) override {
    local_->after_compute(ctx, samples, std::move(done));
  }

  /// The local optimizer's buffers: the worker's whole state besides its
  /// parameters (a correction is applied as it arrives; a checkpoint's
  /// syncers have every one received before the workers pause).
  void save(optim::state_writer& w, const std::string& prefix) const override {
    local_->save(w, prefix);
  }

  void load(const optim::state_reader& r, const std::string& prefix) override {
    local_->load(r, prefix);
  }

  caf::message_handler handlers(actors::worker_context& ctx) override {
    return {
        [&ctx](const delta_msg& m) {
          auto scope
              = on_message(ctx.probe(), ctx.self(), delta_kind, wire_size(m));
          apply(ctx, m);
        },
    };
  }

private:
  /// x <- x + delta; refused if the size is wrong or a value is not finite.
  static void apply(actors::worker_context& ctx, const delta_msg& m) {
    auto& rep = ctx.replica();
    const float* d = m.values.data();
    bool finite = m.values.size() == rep.size();
    for (std::size_t i = 0; finite && i < m.values.size(); ++i)
      finite = std::isfinite(d[i]);
    if (!finite) {
      actors::detail::log().warn(
          "worker {}: ignoring a correction of round {} with "
          "{} values (the replica has {}) or non-finite values",
          ctx.id(), m.round, m.values.size(), rep.size());
      if (auto* probe = ctx.probe())
        probe->error();
      return;
    }
    float* x = rep.params();
    for (std::size_t i = 0; i < rep.size(); ++i)
      x[i] += d[i];
    ctx.count_mix();
  }

  std::unique_ptr<comm_policy> local_;
};

} // namespace

std::unique_ptr<actors::comm_policy>
make_shadow_policy(optim::optimizer_options optimizer, double lr,
                   std::size_t parameters,
                   std::optional<optim::schedule_options> schedule) {
  return std::make_unique<shadow_policy>(actors::make_local_policy(
      std::move(optimizer), lr, parameters, std::move(schedule)));
}

} // namespace troupe::algos
