#pragma once

#include <memory>
#include <string>
#include <vector>

#include "optim/layer.hpp"

namespace troupe::optim {

/// A residual block (He et al. 2016): out = in + f(in), f a sequence of
/// inner layers whose output has the input's shape and layout. The inner
/// layers' ranges are "<prefix>.<kind><i>.weight" and so on, counting per
/// kind inside the block; their buffers likewise.
template <class T>
class residual : public layer<T> {
public:
  /// Throws std::invalid_argument for an empty or null inner layer list.
  explicit residual(std::vector<std::unique_ptr<layer<T>>> inner);

  std::string kind() const override {
    return "residual";
  }

  /// The layout the first inner layer that has one needs (after setup).
  optim::layout input_layout() const noexcept override {
    return need_;
  }

  /// Throws std::invalid_argument naming the inner layer if one does not fit
  /// its input, or if the block's output differs from its input in shape or
  /// layout.
  shape setup(const shape& in) override;

  void declare(range_table& table, const std::string& prefix) override;
  void bind(T* params, T* grads) override;
  void init(rng& gen) override;
  void declare_buffers(range_table& table, const std::string& prefix) override;
  void bind_buffers(T* buffers) override;
  void reset_buffers() override;
  void seed_noise(std::uint64_t seed) override;
  void set_pass(optim::pass p) override;

  void forward(const matrix<T>& in, matrix<T>& out) override;

  void backward(const matrix<T>& in, const matrix<T>& out,
                const matrix<T>& dout, matrix<T>* din) override;

  const std::vector<std::unique_ptr<layer<T>>>& inner() const noexcept {
    return inner_;
  }

  /// The inner layers' names, "<kind><i>" counting per kind in the block.
  const std::vector<std::string>& names() const noexcept {
    return names_;
  }

private:
  std::vector<std::unique_ptr<layer<T>>> inner_;
  std::vector<std::string> names_;
  std::vector<std::size_t> offsets_;        ///< of each inner's parameters
  std::vector<std::size_t> buffer_offsets_; ///< of each inner's buffers
  optim::layout need_ = optim::layout::same;
  std::vector<matrix<T>> acts_;   ///< output of each inner layer
  std::vector<matrix<T>> deltas_; ///< d loss / d input of each inner layer
};

} // namespace troupe::optim
