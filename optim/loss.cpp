#include "optim/loss.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace troupe::optim {

namespace {

template <class T>
void check_labels(const matrix<T>& logits, const std::int32_t* labels) {
  const Eigen::Index classes = logits.rows();
  for (Eigen::Index j = 0; j < logits.cols(); ++j)
    if (labels[j] < 0 || labels[j] >= classes)
      throw std::invalid_argument("label " + std::to_string(labels[j])
                                  + " of sample " + std::to_string(j)
                                  + " is outside [0, " + std::to_string(classes)
                                  + ")");
}

} // namespace

template <class T>
T softmax_cross_entropy(const matrix<T>& logits, const std::int32_t* labels,
                        matrix<T>* dlogits) {
  const Eigen::Index classes = logits.rows();
  const Eigen::Index batch = logits.cols();
  if (classes == 0 || batch == 0)
    throw std::invalid_argument("softmax_cross_entropy: empty logits");
  check_labels(logits, labels);
  if (dlogits != nullptr)
    dlogits->resize(classes, batch);
  const T inv_batch = T{1} / static_cast<T>(batch);
  double total = 0;
  for (Eigen::Index j = 0; j < batch; ++j) {
    const T* z = logits.col(j).data();
    T top = z[0];
    for (Eigen::Index i = 1; i < classes; ++i)
      top = z[i] > top ? z[i] : top;
    T sum = 0;
    if (dlogits != nullptr) {
      T* g = dlogits->col(j).data();
      for (Eigen::Index i = 0; i < classes; ++i)
        sum += (g[i] = std::exp(z[i] - top));
      const T scale = inv_batch / sum;
      for (Eigen::Index i = 0; i < classes; ++i)
        g[i] *= scale;
      g[labels[j]] -= inv_batch;
    } else {
      for (Eigen::Index i = 0; i < classes; ++i)
        sum += std::exp(z[i] - top);
    }
    // -log softmax(z)[label] = log(sum) + top - z[label]
    total += static_cast<double>(std::log(sum) + top - z[labels[j]]);
  }
  return static_cast<T>(total / static_cast<double>(batch));
}

template <class T>
std::size_t count_correct(const matrix<T>& logits, const std::int32_t* labels) {
  std::size_t correct = 0;
  for (Eigen::Index j = 0; j < logits.cols(); ++j) {
    Eigen::Index best = 0;
    logits.col(j).maxCoeff(&best);
    if (best == labels[j])
      ++correct;
  }
  return correct;
}

const char* to_string(loss_kind k) noexcept {
  switch (k) {
  case loss_kind::cross_entropy:
    return "cross_entropy";
  case loss_kind::binary_cross_entropy:
    return "binary_cross_entropy";
  case loss_kind::mse:
    return "mse";
  }
  return "?";
}

const std::vector<std::string>& loss_names() {
  static const std::vector<std::string> names{
      to_string(loss_kind::cross_entropy),
      to_string(loss_kind::binary_cross_entropy), to_string(loss_kind::mse)};
  return names;
}

loss_kind parse_loss(const std::string& name) {
  for (auto k : {loss_kind::cross_entropy, loss_kind::binary_cross_entropy,
                 loss_kind::mse})
    if (name == to_string(k))
      return k;
  throw std::invalid_argument("unknown loss \"" + name
                              + "\" (known: cross_entropy, "
                                "binary_cross_entropy, mse)");
}

int loss_outputs(loss_kind k, int classes) noexcept {
  return k == loss_kind::cross_entropy ? classes : 1;
}

namespace {

template <class T>
void check_single_output(const char* what, const matrix<T>& out) {
  if (out.rows() != 1 || out.cols() == 0)
    throw std::invalid_argument(std::string{what} + ": needs one output per "
                                + "sample, not " + std::to_string(out.rows()));
}

} // namespace

template <class T>
T binary_cross_entropy(const matrix<T>& logits, const std::int32_t* labels,
                       matrix<T>* dlogits) {
  check_single_output("binary_cross_entropy", logits);
  const Eigen::Index batch = logits.cols();
  for (Eigen::Index j = 0; j < batch; ++j)
    if (labels[j] != 0 && labels[j] != 1)
      throw std::invalid_argument("label " + std::to_string(labels[j])
                                  + " of sample " + std::to_string(j)
                                  + " is not 0 or 1");
  if (dlogits != nullptr)
    dlogits->resize(1, batch);
  const T inv_batch = T{1} / static_cast<T>(batch);
  double total = 0;
  for (Eigen::Index j = 0; j < batch; ++j) {
    const T z = logits(0, j);
    const T y = static_cast<T>(labels[j]);
    const T e = std::exp(-std::abs(z)); // in (0, 1]: never overflows
    total += static_cast<double>((z > T{0} ? z : T{0}) - z * y + std::log1p(e));
    if (dlogits != nullptr) {
      const T sig = z >= T{0} ? T{1} / (T{1} + e) : e / (T{1} + e);
      (*dlogits)(0, j) = (sig - y) * inv_batch;
    }
  }
  return static_cast<T>(total / static_cast<double>(batch));
}

template <class T>
T mean_squared_error(const matrix<T>& out, const float* targets,
                     matrix<T>* dout) {
  check_single_output("mse", out);
  const Eigen::Index batch = out.cols();
  if (dout != nullptr)
    dout->resize(1, batch);
  const T scale = T{2} / static_cast<T>(batch);
  double total = 0;
  for (Eigen::Index j = 0; j < batch; ++j) {
    const T d = out(0, j) - static_cast<T>(targets[j]);
    total += static_cast<double>(d) * static_cast<double>(d);
    if (dout != nullptr)
      (*dout)(0, j) = scale * d;
  }
  return static_cast<T>(total / static_cast<double>(batch));
}

template <class T>
T batch_loss(loss_kind k, const matrix<T>& out, batch_targets t,
             matrix<T>* dout) {
  if (k == loss_kind::mse) {
    if (t.values == nullptr)
      throw std::invalid_argument("mse: the data has no regression targets");
    return mean_squared_error(out, t.values, dout);
  }
  if (t.labels == nullptr)
    throw std::invalid_argument(std::string{to_string(k)}
                                + ": the data has no class labels");
  return k == loss_kind::cross_entropy
             ? softmax_cross_entropy(out, t.labels, dout)
             : binary_cross_entropy(out, t.labels, dout);
}

template <class T>
std::size_t count_correct(loss_kind k, const matrix<T>& out,
                          const std::int32_t* labels) {
  if (k == loss_kind::cross_entropy)
    return count_correct(out, labels);
  std::size_t correct = 0;
  if (k == loss_kind::binary_cross_entropy)
    for (Eigen::Index j = 0; j < out.cols(); ++j)
      correct += (out(0, j) > T{0}) == (labels[j] == 1) ? 1 : 0;
  return correct;
}

template float softmax_cross_entropy<float>(const matrix<float>&,
                                            const std::int32_t*,
                                            matrix<float>*);
template double softmax_cross_entropy<double>(const matrix<double>&,
                                              const std::int32_t*,
                                              matrix<double>*);
template std::size_t count_correct<float>(const matrix<float>&,
                                          const std::int32_t*);
template std::size_t count_correct<double>(const matrix<double>&,
                                           const std::int32_t*);
template float binary_cross_entropy<float>(const matrix<float>&,
                                           const std::int32_t*, matrix<float>*);
template double binary_cross_entropy<double>(const matrix<double>&,
                                             const std::int32_t*,
                                             matrix<double>*);
template float mean_squared_error<float>(const matrix<float>&, const float*,
                                         matrix<float>*);
template double mean_squared_error<double>(const matrix<double>&, const float*,
                                           matrix<double>*);
template float batch_loss<float>(loss_kind, const matrix<float>&, batch_targets,
                                 matrix<float>*);
template double batch_loss<double>(loss_kind, const matrix<double>&,
                                   batch_targets, matrix<double>*);
template std::size_t count_correct<float>(loss_kind, const matrix<float>&,
                                          const std::int32_t*);
template std::size_t count_correct<double>(loss_kind, const matrix<double>&,
                                           const std::int32_t*);

} // namespace troupe::optim
