#include "algos/allreduce/sfb_reducer.hpp"

#include <algorithm>
#include <stdexcept>

namespace troupe::algos {

namespace {

/// Values of one worker's slot for layer l: U then V, `batch` columns each.
std::size_t slot_of(const optim::fc_layer& l, std::size_t batch) {
  return batch * (l.out + l.in);
}

class sfb_reducer : public reducer {
public:
  sfb_reducer(const reducer_options& o, std::size_t n, std::uint32_t workers,
              std::uint32_t rank)
      : n_(n), batch_(o.batch), workers_(workers), rank_(rank),
        chosen_(sfb_chosen(o, workers)) {
    // The values that travel plainly: all but the chosen weights.
    std::vector<bool> factored(n, false);
    for (const auto& l : chosen_) {
      if (l.offset + l.out * l.in > n)
        throw std::invalid_argument("--reducer=sfb: layer " + l.name
                                    + " lies outside the model");
      std::fill_n(factored.begin() + static_cast<std::ptrdiff_t>(l.offset),
                  l.out * l.in, true);
      slots_ += slot_of(l, batch_);
    }
    for (std::size_t i = 0; i < n; ++i)
      if (!factored[i])
        plain_.push_back(i);
  }

  std::size_t exchanges() const noexcept override {
    return 1;
  }
  std::size_t length(std::size_t) const noexcept override {
    return plain_.size() + workers_ * slots_;
  }
  bool wants_pass() const noexcept override {
    return !chosen_.empty();
  }
  void take_pass(const optim::sequential<float>& model,
                 const optim::matrix<float>& batch) override {
    model_ = &model;
    x_ = &batch;
  }

  void begin(std::uint64_t, const float* g, std::uint32_t samples,
             float* out) override {
    std::fill(out, out + length(0), 0.0f);
    problem_.clear();
    if (samples == 0)
      return; // not finite: adds nothing
    auto s = static_cast<float>(samples);
    std::size_t at = 0;
    for (auto i : plain_)
      out[at++] = g[i] * s;
    if (chosen_.empty())
      return;
    if (model_ == nullptr) {
      problem_ = "the worker's gradient is not its model's own pass "
                 "(--worker-momentum and --byzantine change it)";
      return;
    }
    at += rank_ * slots_;
    for (const auto& l : chosen_) {
      const auto& u = model_->output_gradient(l.layer);
      const auto& v = model_->layer_input(l.layer, *x_);
      auto b = static_cast<std::size_t>(u.cols());
      if (static_cast<std::size_t>(u.rows()) != l.out
          || static_cast<std::size_t>(v.rows()) != l.in
          || static_cast<std::size_t>(v.cols()) != b || b > batch_) {
        problem_ = "layer " + l.name + "'s factors are "
                   + std::to_string(u.rows()) + " x " + std::to_string(u.cols())
                   + " and " + std::to_string(v.rows()) + " x "
                   + std::to_string(v.cols()) + ", not " + std::to_string(l.out)
                   + " and " + std::to_string(l.in) + " x at most "
                   + std::to_string(batch_);
        return;
      }
      // s U: U is the gradient of the batch's mean loss.
      for (std::size_t k = 0; k < l.out * b; ++k)
        out[at + k] = u.data()[k] * s;
      std::copy(v.data(), v.data() + l.in * b, out + at + l.out * batch_);
      at += slot_of(l, batch_);
    }
  }

  bool next(std::size_t, const float* sum, std::uint64_t total, float*,
            float* mean, std::string& problem) override {
    if (!problem_.empty()) {
      problem = "sufficient factors: " + problem_;
      return false;
    }
    std::fill(mean, mean + n_, 0.0f);
    if (total == 0)
      return false;
    auto t = static_cast<float>(total);
    std::size_t at = 0;
    for (auto i : plain_)
      mean[i] = sum[at++] / t;
    for (std::uint32_t r = 0; r < workers_; ++r)
      for (const auto& l : chosen_) {
        optim::add_factor_product(sum + at, sum + at + l.out * batch_, l.out,
                                  l.in, batch_, mean + l.offset);
        at += slot_of(l, batch_);
      }
    for (const auto& l : chosen_)
      for (std::size_t k = 0; k < l.out * l.in; ++k)
        mean[l.offset + k] /= t;
    return false;
  }

private:
  std::size_t n_, batch_;
  std::uint32_t workers_, rank_;
  std::vector<optim::fc_layer> chosen_;
  std::vector<std::size_t> plain_;
  std::size_t slots_ = 0; ///< one worker's factor values
  const optim::sequential<float>* model_ = nullptr;
  const optim::matrix<float>* x_ = nullptr;
  std::string problem_;
};

} // namespace

std::vector<optim::fc_layer> sfb_chosen(const reducer_options& o,
                                        std::uint32_t workers) {
  std::vector<optim::fc_layer> out;
  for (const auto& l : o.fc)
    if (o.sfb_layers == "all" || optim::prefer_factors(l, o.batch, workers))
      out.push_back(l);
  return out;
}

std::size_t sfb_length(const reducer_options& o, std::size_t n,
                       std::uint32_t workers) {
  std::size_t factored = 0, slots = 0;
  for (const auto& l : sfb_chosen(o, workers)) {
    factored += l.out * l.in;
    slots += slot_of(l, o.batch);
  }
  return n - std::min(n, factored) + workers * slots;
}

std::unique_ptr<reducer> make_sfb_reducer(const reducer_options& o,
                                          std::size_t n, std::uint32_t workers,
                                          std::uint32_t rank) {
  return std::make_unique<sfb_reducer>(o, n, workers, rank);
}

} // namespace troupe::algos
