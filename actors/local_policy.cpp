// The local policy: local steps only, with the worker's own optimizer and
// rate. Shared: LSGD's and ShadowSync's workers wrap it.

#include <functional>
#include <memory>
#include <optional>

#include "actors/comm_policy.hpp"

namespace troupe::actors {

namespace {

class local_policy : public comm_policy {
public:
  local_policy(optim::optimizer_options opt, double lr, std::size_t n,
               std::optional<optim::schedule_options> sched)
      : opt_(optim::make_optimizer<float>(opt, n)), lr_(lr) {
    if (sched)
      schedule_.emplace(*sched);
  }

  void before_compute(worker_context&, std::function<void()> ready) override {
    ready();
  }

  void after_compute(worker_context& ctx, std::uint32_t,
                     std::function<void()> done) override {
    auto& rep = ctx.replica();
    auto lr = schedule_ ? schedule_->lr(ctx.steps()) : lr_;
    opt_->step(rep.params(), rep.grads(), rep.size(), lr);
    note_lr(ctx, lr);
    done();
  }

  /// The optimizer's buffers (momentum, Adam's moments and step).
  void save(optim::state_writer& w, const std::string& prefix) const override {
    opt_->save(w, prefix + "opt.");
  }

  void load(const optim::state_reader& r, const std::string& prefix) override {
    opt_->load(r, prefix + "opt.");
  }

private:
  std::unique_ptr<optim::optimizer<float>> opt_;
  double lr_;
  std::optional<optim::schedule> schedule_;
};

} // namespace

std::unique_ptr<comm_policy>
make_local_policy(optim::optimizer_options optimizer, double lr,
                  std::size_t parameters,
                  std::optional<optim::schedule_options> schedule) {
  return std::make_unique<local_policy>(std::move(optimizer), lr, parameters,
                                        std::move(schedule));
}

} // namespace troupe::actors
