#include "optim/replica.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "optim/state_file.hpp"

namespace troupe::optim {

namespace {

void check_finite(double loss, std::size_t epoch) {
  // A non-finite gradient makes the next loss non-finite, so checking the
  // scalar loss catches divergence one step late without scanning the
  // gradient every step.
  if (!std::isfinite(loss))
    throw std::domain_error("non-finite loss in epoch " + std::to_string(epoch)
                            + " (loss " + std::to_string(loss)
                            + "): training diverged; lower --lr");
}

/// Throws data_error unless every example the state's batch iterator names
/// is below `examples`.
void check_examples(const state_reader& r, const std::string& name,
                    std::size_t examples, const std::string& data) {
  for (auto i : r.u64(name))
    if (i >= examples)
      throw r.error(name, "example " + std::to_string(i)
                              + " is out of range for " + data + " with "
                              + std::to_string(examples) + " examples");
}

/// The layers of a model, "dense1 relu1 dense2": state of one model does
/// not load into another of as many parameters.
std::string layers_text(const sequential<float>& m) {
  std::string out;
  for (const auto& name : m.names())
    out += (out.empty() ? "" : " ") + name;
  return out;
}

/// The problem a synthetic replica trains.
const char* problem_name(const lsq_problem*) noexcept {
  return "lsq";
}
const char* problem_name(const logreg_problem*) noexcept {
  return "logreg";
}

} // namespace

void replica::save_state(state_writer&, const std::string& prefix) const {
  throw std::logic_error("this replica cannot be checkpointed (state " + prefix
                         + ")");
}

void replica::load_state(const state_reader&, const std::string& prefix) {
  throw std::logic_error("this replica cannot be checkpointed (state " + prefix
                         + ")");
}

// -- model_replica ----------------------------------------------------------

model_replica::model_replica(sequential<float>& model, const dataset& data,
                             std::vector<std::size_t> indices,
                             std::size_t batch_size, std::uint64_t seed,
                             batch_part part)
    : model_(&model), data_(&data),
      batches_(std::move(indices), batch_size, seed, part) {
  if (model.loss() == loss_kind::mse ? data.targets.size() != data.size()
                                     : data.labels.size() != data.size())
    throw std::invalid_argument(
        data.name + ": the model trains with " + to_string(model.loss())
        + (model.loss() == loss_kind::mse
               ? " on regression targets, but this data set has none"
               : " on class labels, but this data set has none"));
  // Replicas of one model draw their dropout masks apart.
  model.seed_noise(seed ^ 0x9e3779b97f4a7c15ULL);
  if (model.input_shape().size() != static_cast<std::size_t>(data.x.rows()))
    throw std::invalid_argument(data.name + ": examples have "
                                + std::to_string(data.x.rows())
                                + " features but the model expects "
                                + std::to_string(model.input_shape().size()));
}

std::size_t model_replica::size() const noexcept {
  return model_->size();
}

float* model_replica::params() noexcept {
  return model_->params();
}

float* model_replica::grads() noexcept {
  return model_->grads();
}

step_result model_replica::compute() {
  step_result result;
  const bool regression = model_->loss() == loss_kind::mse;
  result.samples
      = batches_.next(*data_, x_, labels_, regression ? &targets_ : nullptr);
  if (flip_ > 0)
    for (auto& y : labels_)
      y = flip_ - 1 - y;
  result.loss = static_cast<double>(model_->loss_and_gradient(
      x_, regression ? batch_targets{nullptr, targets_.data()}
                     : batch_targets{labels_.data(), nullptr}));
  check_finite(result.loss, batches_.epoch());
  return result;
}

bool model_replica::flip_labels(std::int32_t classes) {
  if (model_->loss() == loss_kind::mse || data_->labels.empty() || classes < 2)
    return false;
  flip_ = classes;
  return true;
}

std::size_t model_replica::batches_per_epoch() const noexcept {
  return batches_.batches_per_epoch();
}

std::size_t model_replica::epoch() const noexcept {
  return batches_.epoch();
}

std::size_t add_to_stream(batch_iterator& batches, const dataset& data,
                          const std::vector<std::size_t>& indices) {
  for (auto i : indices)
    if (i >= data.size())
      throw std::out_of_range("add_examples: index " + std::to_string(i)
                              + " is out of range for " + data.name);
  batches.add_indices(indices);
  return indices.size();
}

std::size_t
model_replica::add_examples(const std::vector<std::size_t>& indices) {
  return add_to_stream(batches_, *data_, indices);
}

void model_replica::save_state(state_writer& w,
                               const std::string& prefix) const {
  w.meta(prefix + "layers", layers_text(*model_));
  w.put(prefix + "params", model_->params(), model_->size());
  batches_.save(w, prefix + "batches.");
}

void model_replica::load_state(const state_reader& r,
                               const std::string& prefix) {
  r.expect_meta(prefix + "layers", layers_text(*model_));
  std::vector<float> params(model_->size());
  r.f32(prefix + "params", params.data(), params.size());
  check_examples(r, prefix + "batches.indices", data_->size(), data_->name);
  batches_.load(r, prefix + "batches.");
  std::copy(params.begin(), params.end(), model_->params());
}

std::size_t replica::add_examples(const std::vector<std::size_t>&) {
  throw std::logic_error("this replica cannot take more examples");
}

std::vector<std::size_t> replica::cede_examples(std::uint32_t, std::uint32_t) {
  throw std::logic_error("this replica cannot give examples up");
}

std::vector<std::size_t> cede_share(batch_iterator& b, std::uint32_t num,
                                    std::uint32_t den) {
  if (den == 0 || num >= den)
    throw std::invalid_argument("cede_examples: share " + std::to_string(num)
                                + "/" + std::to_string(den));
  return b.cede(b.size() * num / den);
}

std::vector<std::size_t> model_replica::cede_examples(std::uint32_t num,
                                                      std::uint32_t den) {
  return cede_share(batches_, num, den);
}

namespace {

/// Owns the model and keeps the data set alive for its model_replica.
class owning_model_replica : public replica {
public:
  owning_model_replica(sequential<float> model,
                       std::shared_ptr<const dataset> data,
                       std::vector<std::size_t> indices, std::size_t batch_size,
                       std::uint64_t seed, batch_part part)
      : model_(std::move(model)), data_(std::move(data)),
        inner_(model_, *data_, std::move(indices), batch_size, seed, part) {}

  std::size_t size() const noexcept override {
    return inner_.size();
  }
  float* params() noexcept override {
    return inner_.params();
  }
  float* grads() noexcept override {
    return inner_.grads();
  }
  step_result compute() override {
    return inner_.compute();
  }
  pass_view last_pass() const noexcept override {
    return inner_.last_pass();
  }
  bool flip_labels(std::int32_t classes) override {
    return inner_.flip_labels(classes);
  }
  std::size_t batches_per_epoch() const noexcept override {
    return inner_.batches_per_epoch();
  }
  std::size_t epoch() const noexcept override {
    return inner_.epoch();
  }
  std::vector<std::size_t> cede_examples(std::uint32_t num,
                                         std::uint32_t den) override {
    return inner_.cede_examples(num, den);
  }
  std::size_t add_examples(const std::vector<std::size_t>& indices) override {
    return inner_.add_examples(indices);
  }
  void save_state(state_writer& w, const std::string& prefix) const override {
    inner_.save_state(w, prefix);
  }
  void load_state(const state_reader& r, const std::string& prefix) override {
    inner_.load_state(r, prefix);
  }

private:
  sequential<float> model_;
  std::shared_ptr<const dataset> data_;
  model_replica inner_;
};

} // namespace

std::unique_ptr<replica> make_model_replica(
    const std::string& model, std::shared_ptr<const dataset> data,
    std::vector<std::size_t> indices, std::size_t batch_size,
    std::uint64_t seed, std::uint64_t init_seed, batch_part part) {
  auto m = make_model<float>(model, data->sample_shape, data->classes);
  m.init(init_seed);
  return std::make_unique<owning_model_replica>(std::move(m), std::move(data),
                                                std::move(indices), batch_size,
                                                seed, part);
}

std::unique_ptr<replica> make_model_replica(const std::string& model,
                                            batch_source source,
                                            std::uint64_t init_seed) {
  return make_model_replica(model, std::move(source.data),
                            std::move(source.indices), source.batch_size,
                            source.seed, init_seed, source.part);
}

// -- synthetic_replica ------------------------------------------------------

template <class Problem>
synthetic_replica<Problem>::synthetic_replica(
    std::shared_ptr<const Problem> problem, std::vector<std::size_t> indices,
    std::size_t batch_size, std::uint64_t seed, batch_part part)
    : problem_(std::move(problem)),
      batches_(std::move(indices), batch_size, seed, part),
      params_(static_cast<std::size_t>(problem_->a.cols()), 0.0f),
      grads_(params_.size(), 0.0f) {}

template <class Problem>
std::size_t synthetic_replica<Problem>::size() const noexcept {
  return params_.size();
}

template <class Problem>
float* synthetic_replica<Problem>::params() noexcept {
  return params_.data();
}

template <class Problem>
float* synthetic_replica<Problem>::grads() noexcept {
  return grads_.data();
}

template <class Problem>
step_result synthetic_replica<Problem>::compute() {
  const auto& batch = batches_.next_indices();
  step_result result;
  result.samples = batch.size();
  result.loss = batch_gradient(*problem_, params_.data(), batch, grads_.data());
  check_finite(result.loss, batches_.epoch());
  return result;
}

template <class Problem>
std::size_t synthetic_replica<Problem>::batches_per_epoch() const noexcept {
  return batches_.batches_per_epoch();
}

template <class Problem>
std::size_t synthetic_replica<Problem>::epoch() const noexcept {
  return batches_.epoch();
}

template <class Problem>
std::vector<std::size_t>
synthetic_replica<Problem>::cede_examples(std::uint32_t num,
                                          std::uint32_t den) {
  return cede_share(batches_, num, den);
}

template <class Problem>
void synthetic_replica<Problem>::save_state(state_writer& w,
                                            const std::string& prefix) const {
  w.meta(prefix + "problem", problem_name(problem_.get()));
  w.put(prefix + "params", params_);
  batches_.save(w, prefix + "batches.");
}

template <class Problem>
void synthetic_replica<Problem>::load_state(const state_reader& r,
                                            const std::string& prefix) {
  r.expect_meta(prefix + "problem", problem_name(problem_.get()));
  std::vector<float> params(params_.size());
  r.f32(prefix + "params", params.data(), params.size());
  check_examples(r, prefix + "batches.indices",
                 static_cast<std::size_t>(problem_->a.rows()),
                 "the synthetic problem");
  batches_.load(r, prefix + "batches.");
  std::copy(params.begin(), params.end(), params_.begin());
}

template class synthetic_replica<lsq_problem>;
template class synthetic_replica<logreg_problem>;

} // namespace troupe::optim
