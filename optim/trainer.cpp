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
  const auto loss = model.loss();
  const bool regression = loss == loss_kind::mse;
  if (data.size() == 0
      || (regression ? data.targets.size() : data.labels.size()) != data.size())
    throw std::invalid_argument(
        "evaluate: " + data.name + " has no "
        + (regression ? "regression targets" : "class labels")
        + " to evaluate against");
  chunk = std::max<std::size_t>(chunk, 1);
  double loss_sum = 0;
  std::size_t correct = 0;
  matrix<float> x;
  for (std::size_t first = 0; first < data.size(); first += chunk) {
    auto n = std::min(chunk, data.size() - first);
    x = data.x.middleCols(static_cast<Eigen::Index>(first),
                          static_cast<Eigen::Index>(n));
    const auto& out = model.forward(x);
    batch_targets t;
    if (regression)
      t.values = data.targets.data() + first;
    else
      t.labels = data.labels.data() + first;
    loss_sum += static_cast<double>(batch_loss<float>(loss, out, t, nullptr))
                * static_cast<double>(n);
    if (!regression)
      correct += count_correct<float>(loss, out, t.labels);
  }
  result.samples = data.size();
  result.loss = loss_sum / static_cast<double>(data.size());
  if (regression) {
    // R^2 = 1 - SSE / SST, against the mean of the evaluated targets.
    double mean = 0;
    for (auto t : data.targets)
      mean += static_cast<double>(t);
    mean /= static_cast<double>(data.size());
    double sst = 0;
    for (auto t : data.targets)
      sst += (static_cast<double>(t) - mean) * (static_cast<double>(t) - mean);
    const double sse = result.loss * static_cast<double>(data.size());
    result.accuracy = sst > 0 ? 1 - sse / sst : (sse == 0 ? 1.0 : 0.0);
  } else {
    result.accuracy
        = static_cast<double>(correct) / static_cast<double>(data.size());
  }
  return result;
}

namespace {

/// Every stride-th example: evenly spread over the set, whatever order it
/// is stored in.
std::size_t calibration_stride(const dataset& train, std::size_t examples) {
  return std::max<std::size_t>(
      train.size() / std::max<std::size_t>(examples, 1), 1);
}

} // namespace

dataset calibration_set(const dataset& train, std::size_t examples) {
  examples = std::min(examples, train.size());
  const std::size_t stride = calibration_stride(train, examples);
  dataset out;
  out.name = train.name + " (calibration)";
  out.sample_shape = train.sample_shape;
  out.classes = train.classes;
  out.x.resize(train.x.rows(), static_cast<Eigen::Index>(examples));
  for (std::size_t j = 0; j < examples; ++j)
    out.x.col(static_cast<Eigen::Index>(j))
        = train.x.col(static_cast<Eigen::Index>(j * stride));
  return out;
}

void calibrate(sequential<float>& model, const dataset& train,
               std::size_t examples, std::size_t chunk) {
  if (model.buffer_size() == 0)
    return;
  model.reset_buffers();
  examples = std::min(examples, train.size());
  chunk = std::max<std::size_t>(chunk, 2);
  const std::size_t stride = calibration_stride(train, examples);
  matrix<float> x;
  for (std::size_t first = 0; first < examples; first += chunk) {
    auto n = std::min(chunk, examples - first);
    if (n < 2 && first > 0)
      break; // a batch of one has no variance to add
    x.resize(train.x.rows(), static_cast<Eigen::Index>(n));
    for (std::size_t j = 0; j < n; ++j)
      x.col(static_cast<Eigen::Index>(j))
          = train.x.col(static_cast<Eigen::Index>((first + j) * stride));
    model.calibrate(x);
  }
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
