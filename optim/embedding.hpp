#pragma once

#include <string>

#include "optim/layer.hpp"

namespace troupe::optim {

/// A lookup table of `vocabulary` vectors of `dim` values (PyTorch's
/// nn.Embedding), for categorical inputs such as the user and item ids of
/// a recommendation model. Each of a sample's F input values is an id, an
/// integer in [0, vocabulary); the output is the F looked-up vectors one
/// after the other, shape {F * dim, 1, 1}. The table is "<prefix>.weight",
/// one contiguous vector per id, initialized standard normal as in PyTorch.
///
/// A step reads only the rows its batch names, and the backward pass adds
/// into only those rows; the gradient of every other row is 0 (the flat
/// gradient buffer is dense). Ids are not differentiable: the input gradient
/// is 0. Use it as the first layer.
template <class T>
class embedding : public layer<T> {
public:
  /// Throws std::invalid_argument unless both are positive.
  embedding(int vocabulary, int dim);

  std::string kind() const override {
    return "embedding";
  }

  optim::layout input_layout() const noexcept override {
    return optim::layout::columns;
  }

  optim::layout output_layout() const noexcept override {
    return optim::layout::columns;
  }

  shape setup(const shape& in) override;

  void declare(range_table& table, const std::string& prefix) override;

  void bind(T* params, T* grads) override {
    w_ = params;
    dw_ = grads;
  }

  void init(rng& gen) override;

  int vocabulary() const noexcept {
    return vocabulary_;
  }
  int dim() const noexcept {
    return dim_;
  }

  /// Throws std::invalid_argument naming the sample and the value if an
  /// input is not an id in [0, vocabulary).
  void forward(const matrix<T>& in, matrix<T>& out) override;

  void backward(const matrix<T>& in, const matrix<T>& out,
                const matrix<T>& dout, matrix<T>* din) override;

private:
  int vocabulary_;
  int dim_;
  int fields_ = 0;
  T* w_ = nullptr;
  T* dw_ = nullptr;

  /// The id at `in(f, b)`, checked.
  Eigen::Index id(const matrix<T>& in, Eigen::Index f, Eigen::Index b) const;
};

} // namespace troupe::optim
