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

} // namespace troupe::optim
