#include "optim/trainer.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "optim/loss.hpp"
#include "optim/state_file.hpp"

namespace troupe::optim {

evaluation evaluate(sequential<float>& model, const dataset& data,
                    std::size_t chunk) {
  evaluation result;
  if (data.size() == 0 || data.labels.size() != data.size())
    throw std::invalid_argument("evaluate: " + data.name
                                + " has no class labels to evaluate against");
  chunk = std::max<std::size_t>(chunk, 1);
  double loss_sum = 0;
  std::size_t correct = 0;
  matrix<float> x;
  for (std::size_t first = 0; first < data.size(); first += chunk) {
    auto n = std::min(chunk, data.size() - first);
    x = data.x.middleCols(static_cast<Eigen::Index>(first),
                          static_cast<Eigen::Index>(n));
    const auto& logits = model.forward(x);
    const auto* labels = data.labels.data() + first;
    loss_sum += static_cast<double>(
                    softmax_cross_entropy<float>(logits, labels, nullptr))
                * static_cast<double>(n);
    correct += count_correct<float>(logits, labels);
  }
  result.samples = data.size();
  result.loss = loss_sum / static_cast<double>(data.size());
  result.accuracy
      = static_cast<double>(correct) / static_cast<double>(data.size());
  return result;
}

local_trainer::local_trainer(sequential<float>& model, const dataset& data,
                             std::vector<std::size_t> indices,
                             std::size_t batch_size,
                             const optimizer_options& opt, schedule lr,
                             std::uint64_t seed)
    : replica_(model, data, std::move(indices), batch_size, seed),
      opt_options_(opt), opt_(make_optimizer<float>(opt, model.size())),
      lr_(std::move(lr)) {}

step_result local_trainer::compute() {
  step_result result;
  try {
    result = replica_.compute();
  } catch (const std::domain_error& e) {
    throw std::domain_error("step " + std::to_string(steps_) + ": " + e.what());
  }
  result.lr = lr_.lr(steps_);
  return result;
}

void local_trainer::apply() {
  auto& m = replica_.model();
  opt_->step(m.params(), m.grads(), m.size(), lr_.lr(steps_));
  ++steps_;
}

step_result local_trainer::step() {
  auto result = compute();
  apply();
  return result;
}

void local_trainer::save(state_writer& w, const std::string& prefix) const {
  replica_.save_state(w, prefix + "replica.");
  opt_->save(w, prefix + "opt.");
  w.put_u64(prefix + "steps", steps_);
}

void local_trainer::load(const state_reader& r, const std::string& prefix) {
  auto steps = r.u64_scalar(prefix + "steps");
  // The replica changes only once its state has been read whole; a later
  // failure of the optimizer's would leave it loaded, so the optimizer's
  // state is checked first on a copy.
  auto copy = make_optimizer<float>(opt_options_, replica_.size());
  copy->load(r, prefix + "opt.");
  replica_.load_state(r, prefix + "replica.");
  opt_ = std::move(copy);
  steps_ = static_cast<std::size_t>(steps);
}

} // namespace troupe::optim
