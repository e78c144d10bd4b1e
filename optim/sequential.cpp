#include "optim/sequential.hpp"

#include <map>
#include <stdexcept>

#include "optim/check.hpp"
#include "optim/conv2d.hpp"
#include "optim/dense.hpp"
#include "optim/flatten.hpp"
#include "optim/loss.hpp"
#include "optim/max_pool2d.hpp"
#include "optim/model_spec.hpp"
#include "optim/quote.hpp"
#include "optim/relu.hpp"

namespace troupe::optim {

namespace {

std::string describe(const shape& s) {
  return "{" + std::to_string(s.c) + ", " + std::to_string(s.h) + ", "
         + std::to_string(s.w) + "}";
}

const char* describe(layout x) {
  return x == layout::planes ? "planes (C, B, H, W)" : "per-sample columns";
}

} // namespace

template <class T>
sequential<T>::sequential(shape input) : input_(input) {
  // nop
}

template <class T>
sequential<T>& sequential<T>::add(std::unique_ptr<layer<T>> ptr) {
  TROUPE_CHECK(!finalized_, "sequential: add after finalize");
  if (ptr == nullptr)
    throw std::invalid_argument("sequential: add of a null layer");
  layers_.push_back(std::move(ptr));
  return *this;
}

template <class T>
void sequential<T>::finalize() {
  TROUPE_CHECK(!finalized_, "sequential: finalize called twice");
  if (layers_.empty())
    throw std::invalid_argument("sequential: no layers");
  finalize(0, layers_.size());
}

template <class T>
void sequential<T>::finalize(std::size_t first, std::size_t last) {
  TROUPE_CHECK(!finalized_, "sequential: finalize called twice");
  if (layers_.empty())
    throw std::invalid_argument("sequential: no layers");
  if (first >= last || last > layers_.size())
    throw std::invalid_argument("sequential: a stage of layers ["
                                + std::to_string(first) + ", "
                                + std::to_string(last) + ") of a model with "
                                + std::to_string(layers_.size()) + " layers");
  if (input_.c <= 0 || input_.h <= 0 || input_.w <= 0)
    throw std::invalid_argument("sequential: invalid input shape "
                                + describe(input_));
  std::map<std::string, int> counts;
  std::vector<std::string> names;
  std::vector<shape> shapes;
  std::vector<std::size_t> offsets;
  std::vector<std::size_t> buffer_offsets;
  range_table table;   // the stage's layers
  range_table buffers; // the stage's layers
  range_table whole;   // every layer: the stage's offset and the total
  range_table whole_buffers;
  std::size_t offset = 0;
  std::size_t buffer_start = 0;
  shape cur = input_;
  layout lay = layout::columns; // images enter as plain columns
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    auto& ptr = layers_[i];
    const bool kept = i >= first && i < last;
    const std::string kind = ptr->kind();
    std::string name = kind + std::to_string(++counts[kind]);
    shapes.push_back(cur);
    const shape in = cur;
    try {
      cur = ptr->setup(cur);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(name + ": " + e.what());
    }
    // Asked after setup: a layer may pick its layout by its input's shape.
    // With one channel both layouts coincide.
    const layout need = ptr->input_layout();
    if (need != layout::same && need != lay && in.c > 1)
      throw std::invalid_argument(
          name + ": needs its input as " + describe(need) + " but gets "
          + describe(lay) + " of shape " + describe(in)
          + (need == layout::columns ? "; insert a flatten before it" : ""));
    if (ptr->output_layout() != layout::same)
      lay = ptr->output_layout();
    if (cur.size() > max_activation_values)
      throw std::invalid_argument(name + ": gives " + describe(cur) + ", "
                                  + std::to_string(cur.size())
                                  + " values per sample; at most "
                                  + std::to_string(max_activation_values));
    if (i == first) {
      offset = whole.total();
      buffer_start = whole_buffers.total();
    }
    ptr->declare(whole, name);
    ptr->declare_buffers(whole_buffers, name);
    if (!kept) {
      offsets.push_back(0);
      buffer_offsets.push_back(0);
      names.push_back(std::move(name));
      continue;
    }
    offsets.push_back(table.total());
    ptr->declare(table, name);
    buffer_offsets.push_back(buffers.total());
    ptr->declare_buffers(buffers, name);
    if (table.total() > max_model_parameters)
      throw std::invalid_argument(
          name + ": the model would have " + std::to_string(table.total())
          + " parameters; at most " + std::to_string(max_model_parameters));
    if (buffers.total() > max_model_parameters)
      throw std::invalid_argument(
          name + ": the model would have " + std::to_string(buffers.total())
          + " buffer values; at most " + std::to_string(max_model_parameters));
    names.push_back(std::move(name));
  }
  if (lay == layout::planes && cur.c > 1)
    throw std::invalid_argument("sequential: the output " + describe(cur)
                                + " is in the planes layout; end with a "
                                  "flatten or dense layer");
  shapes.push_back(cur);
  constexpr std::size_t phase = 64 / sizeof(T); // flat_storage's alignment
  pad_ = offset % phase;
  buffer_pad_ = buffer_start % phase;
  params_.assign(pad_ + table.total(), T{0});
  grads_.assign(pad_ + table.total(), T{0});
  buffers_.assign(buffer_pad_ + buffers.total(), T{0});
  for (std::size_t i = first; i < last; ++i) {
    layers_[i]->bind(params() + offsets[i], grads() + offsets[i]);
    layers_[i]->bind_buffers(this->buffers() + buffer_offsets[i]);
    layers_[i]->reset_buffers();
  }
  if (first > 0 || last < layers_.size()) {
    // Keep the stage's layers only, and the shapes around them.
    layers_.erase(layers_.begin() + last, layers_.end());
    layers_.erase(layers_.begin(), layers_.begin() + first);
    names.erase(names.begin() + last, names.end());
    names.erase(names.begin(), names.begin() + first);
    shapes.erase(shapes.begin() + last + 1, shapes.end());
    shapes.erase(shapes.begin(), shapes.begin() + first);
    input_ = shapes.front();
  }
  ends_model_ = last == offsets.size();
  param_offset_ = offset;
  first_layer_ = first;
  full_size_ = whole.total();
  names_ = std::move(names);
  shapes_ = std::move(shapes);
  table_ = std::move(table);
  buffer_table_ = std::move(buffers);
  acts_.resize(layers_.size());
  deltas_.resize(layers_.size());
  finalized_ = true;
}

template <class T>
void sequential<T>::init(std::uint64_t seed) {
  TROUPE_CHECK(finalized_, "sequential: init before finalize");
  rng gen{seed};
  for (auto& ptr : layers_)
    ptr->init(gen);
  reset_buffers();
}

template <class T>
void sequential<T>::reset_buffers() {
  for (auto& ptr : layers_)
    ptr->reset_buffers();
}

template <class T>
void sequential<T>::seed_noise(std::uint64_t seed) {
  rng gen{seed};
  // A stage's layers draw as they do in the whole model: the cut does not
  // change the masks.
  for (std::size_t i = 0; i < first_layer_; ++i)
    gen.next();
  for (auto& ptr : layers_)
    ptr->seed_noise(gen.next());
}

template <class T>
void sequential<T>::calibrate(const matrix<T>& x) {
  run(x, optim::pass::calibration);
}

template <class T>
const matrix<T>& sequential<T>::forward(const matrix<T>& x) {
  return run(x, optim::pass::inference);
}

template <class T>
const matrix<T>& sequential<T>::run(const matrix<T>& x, optim::pass p) {
  TROUPE_CHECK(finalized_, "sequential: forward before finalize");
  if (p != pass_) {
    for (auto& ptr : layers_)
      ptr->set_pass(p);
    pass_ = p;
  }
  if (static_cast<std::size_t>(x.rows()) != input_.size())
    throw std::invalid_argument(
        "sequential: input has " + std::to_string(x.rows())
        + " rows, the model expects " + std::to_string(input_.size()) + " = "
        + describe(input_));
  layers_[0]->forward(x, acts_[0]);
  for (std::size_t i = 1; i < layers_.size(); ++i)
    layers_[i]->forward(acts_[i - 1], acts_[i]);
  return acts_.back();
}

template <class T>
T sequential<T>::loss_and_gradient(const matrix<T>& x, batch_targets targets) {
  run(x, optim::pass::training);
  const T loss = batch_loss(loss_, acts_.back(), targets, &dlogits_);
  backprop(x, &dlogits_, nullptr);
  return loss;
}

template <class T>
T sequential<T>::loss_and_gradient(const matrix<T>& x, batch_targets targets,
                                   matrix<T>* din, T scale) {
  TROUPE_CHECK(ends_model_, "sequential: loss of a stage before the last");
  run(x, optim::pass::training);
  const T loss = batch_loss(loss_, acts_.back(), targets, &dlogits_);
  if (scale != T{1})
    dlogits_ *= scale;
  backprop(x, &dlogits_, din);
  return loss;
}

template <class T>
const matrix<T>& sequential<T>::forward_training(const matrix<T>& x) {
  return run(x, optim::pass::training);
}

template <class T>
void sequential<T>::backward(const matrix<T>& x, const matrix<T>& dout,
                             matrix<T>* din) {
  const auto& out = acts_.back();
  if (dout.rows() != out.rows() || dout.cols() != out.cols()
      || x.cols() != out.cols())
    throw std::invalid_argument(
        "sequential: an output gradient of " + std::to_string(dout.rows())
        + " x " + std::to_string(dout.cols()) + " for outputs of "
        + std::to_string(out.rows()) + " x " + std::to_string(out.cols()));
  backprop(x, &dout, din);
}

template <class T>
void sequential<T>::backprop(const matrix<T>& x, const matrix<T>* dout,
                             matrix<T>* din) {
  for (std::size_t i = layers_.size(); i-- > 0;) {
    const matrix<T>& in = i == 0 ? x : acts_[i - 1];
    matrix<T>* d = i == 0 ? din : &deltas_[i];
    layers_[i]->backward(in, acts_[i], *dout, d);
    dout = d;
  }
}

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names{"logreg", "mlp", "lenet"};
  return names;
}

template <class T>
sequential<T> make_model(const std::string& name, shape input, int classes) {
  return build_model<T>(name, input, classes);
}

template class sequential<float>;
template class sequential<double>;
template sequential<float> make_model<float>(const std::string&, shape, int);
template sequential<double> make_model<double>(const std::string&, shape, int);

} // namespace troupe::optim
