#include "algos/parle/parle_policy.hpp"

#include <cstring>

#include "optim/consensus.hpp"
#include "optim/state_file.hpp"

namespace troupe::algos {

namespace {

class parle_policy : public round_policy {
public:
  parle_policy(std::vector<actors::shard_ref> shards,
               const parle_policy_options& opts, std::size_t n)
      : round_policy(std::move(shards), opts.rounds, n), opts_(opts),
        inner_(optim::make_optimizer<float>(opts.rounds.local.optimizer, n)),
        outer_(optim::make_optimizer<float>(opts.rounds.local.optimizer, n)),
        anchor_(n), z_(n) {}

protected:
  void round_begins(actors::worker_context& ctx) override {
    auto& rep = ctx.replica();
    auto bytes = anchor_.size() * sizeof(float);
    if (!anchored_) { // the first round: the shards' parameters
      std::memcpy(anchor_.data(), start().data(), bytes);
      std::memcpy(z_.data(), start().data(), bytes);
      anchored_ = true;
    }
    std::memcpy(rep.params(), anchor_.data(), bytes); // y starts at x_a
  }

  void local_step(actors::worker_context& ctx) override {
    auto& rep = ctx.replica();
    auto n = rep.size();
    auto g = coupling(opts_.gamma, opts_.gamma_max, ctx);
    optim::parle_inner_gradient(rep.grads(), rep.params(), anchor_.data(), g,
                                n);
    inner_->step(rep.params(), rep.grads(), n, local_lr(ctx));
    optim::running_average(z_.data(), rep.params(), opts_.alpha, n);
  }

  void round_ends(actors::worker_context& ctx) override {
    auto& rep = ctx.replica();
    auto n = rep.size();
    float* g = rep.grads();
    optim::parle_outer_gradient(anchor_.data(), z_.data(), start().data(),
                                coupling(opts_.rho, opts_.rho_max, ctx), g, n);
    outer_->step(anchor_.data(), g, n, local_lr(ctx));
    std::memcpy(rep.params(), anchor_.data(), n * sizeof(float));
    optim::pseudo_gradient(start().data(), anchor_.data(), g, n);
  }

  void save_own(optim::state_writer& w,
                const std::string& prefix) const override {
    w.put(prefix + "anchor", anchor_);
    w.put(prefix + "z", z_);
    w.put_u64(prefix + "anchored", anchored_ ? 1 : 0);
    inner_->save(w, prefix + "inner.");
    outer_->save(w, prefix + "outer.");
  }

  void load_own(const optim::state_reader& r,
                const std::string& prefix) override {
    auto anchor = read_floats(r, prefix + "anchor", anchor_.size());
    auto z = read_floats(r, prefix + "z", z_.size());
    auto anchored = r.u64_scalar(prefix + "anchored") != 0;
    inner_->load(r, prefix + "inner.");
    outer_->load(r, prefix + "outer.");
    anchor_ = std::move(anchor);
    z_ = std::move(z);
    anchored_ = anchored;
  }

private:
  /// gamma or rho in this round (scoped).
  double coupling(double c, double cap, actors::worker_context& ctx) const {
    auto round = static_cast<double>(ctx.clock() / round_steps());
    return optim::parle_scope(c, opts_.scoping, cap, round,
                              opts_.rounds_per_epoch);
  }

  parle_policy_options opts_;
  std::unique_ptr<optim::optimizer<float>> inner_, outer_;
  std::vector<float> anchor_, z_;
  bool anchored_ = false;
};

} // namespace

std::unique_ptr<actors::comm_policy>
make_parle_policy(std::vector<actors::shard_ref> shards,
                  const parle_policy_options& opts, std::size_t parameters) {
  return std::make_unique<parle_policy>(std::move(shards), opts, parameters);
}

} // namespace troupe::algos
