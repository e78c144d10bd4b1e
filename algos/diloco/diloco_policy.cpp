// DiLoCo's worker policy: H local steps with the inner optimizer a round,
// the round's pseudo-gradient pushed at its end (algos/local_rounds.hpp).

#include "algos/diloco/diloco_policy.hpp"

#include "algos/local_rounds.hpp"
#include "optim/consensus.hpp"
#include "optim/state_file.hpp"

namespace troupe::algos {

namespace {

class diloco_policy : public round_policy {
public:
  diloco_policy(std::vector<actors::shard_ref> shards,
                diloco_policy_options opts, std::size_t n)
      : round_policy(std::move(shards), opts.exchange, n, opts.inner_steps),
        opts_(std::move(opts)),
        inner_(optim::make_optimizer<float>(opts_.inner, n)) {
    if (opts_.schedule)
      schedule_.emplace(*opts_.schedule);
  }

protected:
  void local_step(actors::worker_context& ctx) override {
    auto& rep = ctx.replica();
    auto lr = schedule_ ? schedule_->lr(ctx.steps()) : opts_.lr;
    inner_->step(rep.params(), rep.grads(), rep.size(), lr);
    actors::note_lr(ctx, lr);
  }

  void round_ends(actors::worker_context& ctx) override {
    auto& rep = ctx.replica();
    optim::pseudo_gradient(start().data(), rep.params(), rep.grads(),
                           rep.size());
  }

  void save_own(optim::state_writer& w,
                const std::string& prefix) const override {
    inner_->save(w, prefix + "inner.");
  }

  void load_own(const optim::state_reader& r,
                const std::string& prefix) override {
    inner_->load(r, prefix + "inner.");
  }

private:
  diloco_policy_options opts_;
  std::unique_ptr<optim::optimizer<float>> inner_;
  std::optional<optim::schedule> schedule_;
};

} // namespace

std::unique_ptr<actors::comm_policy>
make_diloco_policy(std::vector<actors::shard_ref> shards,
                   diloco_policy_options opts, std::size_t parameters) {
  return std::make_unique<diloco_policy>(std::move(shards), std::move(opts),
                                         parameters);
}

} // namespace troupe::algos
