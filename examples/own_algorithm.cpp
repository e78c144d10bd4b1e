// The user's own algorithm, registered from the application without editing
// troupe: local SGD with periodic model averaging. Each worker takes
// `--period` local steps (--optimizer) on its own data, then sends its
// parameters to every other worker, waits for theirs (or for the request
// timeout) and replaces its parameters by the mean, summed in rank order so
// every worker gets the same bits. The mean of the workers' models is
// evaluated.
//
//   own_algorithm [--workers=4 --period=8 --epochs=2 ...]
//
// What it shows: an algorithm is a class with its options (bind, checks),
// its shard plan and its workers' communication policy; the policy brings
// the handlers of the algorithm's own message; one register_algorithm call
// makes it a choice of the `troupe train` command line (--algo=average, with
// its flag in --help) and of the job spec nodes receive.

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <troupe/actors/comm_policy.hpp>
#include <troupe/actors/coordinator.hpp>
#include <troupe/algos/registry.hpp>
#include <troupe/apps/train_command.hpp>
#include <troupe/messages/tensor.hpp>
#include <troupe/optim/optimizer.hpp>
#include <vector>

#include <caf/config_option_set.hpp>

namespace {

using namespace troupe;

// [snippet:own_algorithm_message]
/// A worker's parameters after its round `round` of local steps. A
/// messages::tensor crosses the wire as one raw block (a job over several
/// processes also registers the type with CAF, as messages/registry.cpp
/// does troupe's own).
struct average_msg {
  messages::worker_id sender = 0;
  std::uint64_t round = 0;
  messages::tensor values;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, average_msg& x) {
  return f(caf::meta::type_name("average_msg"), x.sender, x.round, x.values);
}
// [/snippet]

/// The workers' communication: local SGD steps, an averaging every period.
class averaging_policy : public actors::comm_policy {
public:
  averaging_policy(std::uint64_t period, optim::optimizer_options optimizer,
                   double lr, std::size_t parameters)
      : period_(period), lr_(lr),
        optimizer_(optim::make_optimizer<float>(optimizer, parameters)) {}

  void before_compute(actors::worker_context&,
                      std::function<void()> ready) override {
    ready();
  }

  void after_compute(actors::worker_context& ctx, std::uint32_t,
                     std::function<void()> done) override {
    auto& rep = ctx.replica();
    optimizer_->step(rep.params(), rep.grads(), rep.size(), lr_);
    if (++steps_ % period_ != 0 || expected_.size() <= 1) {
      done();
      return;
    }
    // Send this round's parameters to every other worker, then wait.
    ++round_;
    average_msg m{ctx.id(), round_, {rep.params(), rep.size()}};
    auto bytes = 4 * rep.size();
    for (auto& peer : peers_)
      if (peer && peer != caf::actor_cast<caf::actor>(ctx.self())) {
        ctx.self()->send(peer, m);
        ctx.count_sent(actors::msg_type::other, bytes); // in the report
      }
    received_[round_][ctx.id()] = std::move(m.values);
    waiting_ = std::move(done);
    ctx.schedule_timeout(round_);
    try_average(ctx);
  }

  // [snippet:own_algorithm_handlers]
  /// The algorithm's own message, handled by the worker after its core.
  caf::message_handler handlers(actors::worker_context& ctx) override {
    return {
        [this, &ctx](average_msg& m) {
          received_[m.round][m.sender] = std::move(m.values);
          try_average(ctx);
        },
    };
  }
  // [/snippet]

  /// The other workers (the default peer_ranks: every other rank).
  void on_peers(actors::worker_context& ctx,
                const std::vector<messages::worker_id>& ranks,
                const std::vector<caf::actor>& handles) override {
    peers_ = handles;
    expected_.insert(ranks.begin(), ranks.end());
    expected_.insert(ctx.id()); // its own parameters count too
  }

  void on_peer_gone(actors::worker_context& ctx,
                    messages::worker_id w) override {
    expected_.erase(w); // finished or lost: no longer awaited
    try_average(ctx);
  }

  void on_timeout(actors::worker_context& ctx, std::uint64_t round) override {
    if (round == round_ && waiting_) {
      ctx.count_timeout();
      average(ctx); // the ones that arrived
    }
  }

private:
  void try_average(actors::worker_context& ctx) {
    if (!waiting_)
      return;
    const auto& got = received_[round_];
    for (auto w : expected_)
      if (got.count(w) == 0)
        return;
    average(ctx);
  }

  /// The mean of this round's parameters, summed in rank order.
  void average(actors::worker_context& ctx) {
    auto& rep = ctx.replica();
    auto& got = received_[round_];
    std::vector<float> sum(rep.size(), 0.0f);
    for (auto& [rank, values] : got) // std::map: rank order
      for (std::size_t i = 0; i < sum.size() && i < values.size(); ++i)
        sum[i] += values[i];
    auto n = static_cast<float>(got.size());
    std::transform(sum.begin(), sum.end(), rep.params(),
                   [n](float s) { return s / n; });
    received_.erase(round_);
    ctx.count_mix();
    auto done = std::move(waiting_);
    waiting_ = nullptr;
    done();
  }

  std::uint64_t period_;
  double lr_;
  std::unique_ptr<optim::optimizer<float>> optimizer_;
  std::uint64_t steps_ = 0, round_ = 0;
  std::vector<caf::actor> peers_;
  std::set<messages::worker_id> expected_;
  std::map<std::uint64_t, std::map<messages::worker_id, messages::tensor>>
      received_;
  std::function<void()> waiting_;
};

// [snippet:own_algorithm_class]
/// The algorithm: its option, its shard plan, its workers' policy.
class model_averaging : public algos::algorithm {
public:
  std::uint64_t period = 8; ///< local steps between two averagings
  /// The workers' optimizer and rate, resolved by build().
  optim::optimizer_options optimizer;
  double lr = 0;

  std::string name() const override {
    return "average";
  }
  std::string summary() const override {
    return "local SGD with periodic model averaging (examples/"
           "own_algorithm.cpp)";
  }
  std::shared_ptr<algos::algorithm> clone() const override {
    return std::make_shared<model_averaging>(*this);
  }
  void bind(caf::config_option_set& set) override {
    set.add(period, "?average", "period",
            "local steps between two averagings (default 8)");
  }
  void check_flags(const algos::job_options&,
                   const std::set<std::string>&) const override {
    if (period < 1 || period > 1000000)
      throw std::invalid_argument("--period must be in [1, 1000000]");
  }
  bool uses_shards(const algos::job_options&) const override {
    return false;
  }
  void build(algos::job_build& b) override {
    b.job.shards = 0;
    optimizer
        = {b.options.optimizer, b.options.momentum, b.options.weight_decay};
    lr = b.options.lr;
  }
  actors::shard_plan plan(const actors::job_config&) const override {
    return actors::shard_plan::none;
  }
  void configure_worker(const actors::job_config&,
                        actors::worker_config& config,
                        std::vector<actors::shard_ref>) const override {
    config.make_policy
        = [period = period, opt = optimizer, lr = lr](std::size_t n) {
            return std::make_unique<averaging_policy>(period, opt, lr, n);
          };
    config.yield_steps = true; // local steps: hand the thread on
  }
  bool peer_to_peer() const noexcept override {
    return true; // the workers get each other's handles
  }
  bool lingers() const noexcept override {
    return true; // their models are the evaluated ones
  }
};
// [/snippet]

} // namespace

int main(int argc, char** argv) {
  // [snippet:own_algorithm_register]
  troupe::algos::register_algorithm(
      {"average", [] { return std::make_shared<model_averaging>(); }});
  // [/snippet]
  std::vector<std::string> args{
      "--algo=average", "--model=logreg", "--data=synthetic-logreg",
      "--workers=4",    "--epochs=2",     "--progress=lines"};
  args.insert(args.end(), argv + 1, argv + argc);
  return troupe::apps::train_main(args);
}
