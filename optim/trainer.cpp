#include "optim/trainer.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "optim/loss.hpp"

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
      opt_(make_optimizer<float>(opt, model.size())), lr_(std::move(lr)) {}

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

} // namespace troupe::optim
