#include "optim/batch_objective.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "optim/model_spec.hpp"
#include "optim/torchscript_layer.hpp"

namespace troupe::optim {

namespace {

/// Whether the TorchScript modules among `layers` (and in their blocks)
/// are deterministic (optim/torchscript_layer.hpp).
bool deterministic_modules(const nlohmann::json& layers) {
  for (const auto& l : layers) {
    if (l.contains("layers") && !deterministic_modules(l["layers"]))
      return false;
#ifdef TROUPE_HAVE_TORCH
    if (l["type"] == "torchscript"
        && !torchscript_deterministic(l["file"].get<std::string>()))
      return false;
#endif
  }
  return true;
}

} // namespace

bool deterministic_model(const std::string& model) {
  auto d = model_description(model);
  return model_loss(model) == loss_kind::cross_entropy
         && d.find("\"dropout\"") == std::string::npos
         && d.find("\"batch_norm\"") == std::string::npos
         && deterministic_modules(nlohmann::json::parse(d)["layers"]);
}

batch_objective::batch_objective(std::shared_ptr<const dataset> data,
                                 batch_objective_options opts)
    : data_(std::move(data)), opts_(std::move(opts)),
      model_(make_model<double>(opts_.model, data_->sample_shape,
                                data_->classes)) {
  if (data_->labels.empty())
    throw std::invalid_argument(
        "batch objective: the data set has no class labels");
  if (!deterministic_model(opts_.model))
    throw std::invalid_argument(
        "batch objective: the full-batch objective needs a model whose "
        "forward pass is a function of its parameters (cross-entropy, no "
        "dropout or batch_norm), not "
        + model_label(opts_.model));
  if (opts_.examples == 0 || opts_.examples > data_->size())
    opts_.examples = data_->size();
  if (opts_.portions == 0 || opts_.portions > opts_.examples)
    throw std::invalid_argument(
        "batch objective: " + std::to_string(opts_.portions) + " portions of "
        + std::to_string(opts_.examples)
        + " examples (need 1 to one per example)");
  if (!(opts_.l2 >= 0) || !std::isfinite(opts_.l2))
    throw std::invalid_argument("batch objective: the L2 penalty must be "
                                "zero or positive");
  opts_.chunk = std::max<std::size_t>(opts_.chunk, 1);
}

double batch_objective::portion(const double* x, std::size_t n, std::size_t p,
                                double* grad, std::uint64_t& samples) {
  if (n != model_.size())
    throw std::invalid_argument("batch objective: " + std::to_string(n)
                                + " values for a model of "
                                + std::to_string(model_.size()));
  if (p >= opts_.portions)
    throw std::invalid_argument("batch objective: no portion "
                                + std::to_string(p));
  std::copy(x, x + n, model_.params());
  std::fill(grad, grad + n, 0.0);
  auto [first, last] = bounds(p);
  double loss = 0;
  for (auto i = first; i < last; i += opts_.chunk) {
    auto count = std::min(opts_.chunk, last - i);
    x_ = data_->x
             .middleCols(static_cast<Eigen::Index>(i),
                         static_cast<Eigen::Index>(count))
             .cast<double>();
    auto c = static_cast<double>(count);
    loss += c * model_.loss_and_gradient(x_, data_->labels.data() + i);
    const double* g = model_.grads();
    for (std::size_t j = 0; j < n; ++j)
      grad[j] += c * g[j];
  }
  auto m = static_cast<double>(last - first);
  if (opts_.l2 > 0) {
    double sq = 0;
    for (std::size_t j = 0; j < n; ++j) {
      sq += x[j] * x[j];
      grad[j] += m * opts_.l2 * x[j];
    }
    loss += m * 0.5 * opts_.l2 * sq;
  }
  if (!std::isfinite(loss))
    throw std::domain_error("batch objective: the loss of portion "
                            + std::to_string(p) + " is not finite");
  samples = last - first;
  return loss;
}

double batch_objective::full(const std::vector<double>& x,
                             std::vector<double>& grad) {
  std::vector<double> part(x.size());
  grad.assign(x.size(), 0.0);
  double loss = 0;
  std::uint64_t total = 0;
  for (std::size_t p = 0; p < opts_.portions; ++p) {
    std::uint64_t samples = 0;
    loss += portion(x.data(), x.size(), p, part.data(), samples);
    total += samples;
    for (std::size_t j = 0; j < x.size(); ++j)
      grad[j] += part[j];
  }
  // Divided, not multiplied by the inverse: as the shards and the
  // coordinator do, so the serial reference matches them bit for bit.
  auto count = static_cast<double>(total);
  for (auto& g : grad)
    g /= count;
  return loss / count;
}

} // namespace troupe::optim
