// DiLoCo's worker policy: H local steps with the inner optimizer a round,
// the round's pseudo-gradient pushed at its end (algos/local_rounds.hpp).

#include "algos/diloco/diloco_policy.hpp"

#include "optim/consensus.hpp"
#include "optim/state_file.hpp"

namespace troupe::algos {

namespace {

class diloco_policy : public round_policy {
public:
  diloco_policy(std::vector<actors::shard_ref> shards,
                const round_options& opts, std::size_t n)
      : round_policy(std::move(shards), opts, n),
        inner_(optim::make_optimizer<float>(opts.local.optimizer, n)) {}

protected:
  void local_step(actors::worker_context& ctx) override {
    auto& rep = ctx.replica();
    inner_->step(rep.params(), rep.grads(), rep.size(), local_lr(ctx));
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
  std::unique_ptr<optim::optimizer<float>> inner_;
};

} // namespace

std::unique_ptr<actors::comm_policy>
make_diloco_policy(std::vector<actors::shard_ref> shards,
                   const round_options& opts, std::size_t parameters) {
  return std::make_unique<diloco_policy>(std::move(shards), opts, parameters);
}

} // namespace troupe::algos
