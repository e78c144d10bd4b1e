#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "optim/dataset.hpp"
#include "optim/types.hpp"

namespace troupe::optim {

// The LSQ and LOGREG reference problems of algorithms.md section 0, built in
// double precision with their exact optimum. Row k of `a` is example a_k.
// Losses and gradients take a flat parameter vector of d entries and a list
// of example indices (the minibatch); they compute in double whatever T is.

// -- LSQ ----------------------------------------------------------------------

/// Settings of the least-squares problem.
struct lsq_options {
  std::size_t m = 4096;   ///< examples
  std::size_t d = 32;     ///< parameters
  double condition = 10;  ///< condition number of A^T A / m (met exactly)
  double noise = 0.1;     ///< standard deviation of the noise added to b
  std::uint64_t seed = 1; ///< fixes A, x_true and the noise
};

/// f(x) = (1/(2m)) ||A x - b||^2 with b = A x_true + noise, and its minimiser.
struct lsq_problem {
  matrix<double> a;      ///< m x d design matrix
  vector<double> b;      ///< m targets
  vector<double> x_true; ///< parameters that generated b
  vector<double> x_star; ///< exact minimiser (A^T A)^{-1} A^T b
  double f_star = 0;     ///< f(x_star)
  double lambda_max = 0; ///< L: largest eigenvalue of A^T A / m
  double lambda_min = 0; ///< mu: smallest eigenvalue of A^T A / m
};

/// Builds A = sqrt(m) Q diag(sqrt(lambda)) V^T with Q (m x d) orthonormal
/// columns and V orthogonal, both from Gaussian matrices, and lambda spaced
/// geometrically in [1, condition], so that A^T A / m has exactly those
/// eigenvalues. Throws std::invalid_argument unless 1 <= d <= m, condition
/// >= 1 (= 1 if d = 1) and noise >= 0.
lsq_problem make_lsq(const lsq_options& opts);

/// Full objective f(x).
double objective(const lsq_problem& p, const double* x);

/// Mean over `batch` of (1/2) (a_k . x - b_k)^2.
template <class T>
double batch_loss(const lsq_problem& p, const T* x,
                  const std::vector<std::size_t>& batch);

/// Writes (1/|B|) sum_{k in B} a_k (a_k . x - b_k) to `grad` (d entries) and
/// returns batch_loss.
template <class T>
double batch_gradient(const lsq_problem& p, const T* x,
                      const std::vector<std::size_t>& batch, T* grad);

/// Writes the full gradient (1/m) A^T (A x - b) to `grad`; returns f(x).
double full_gradient(const lsq_problem& p, const double* x, double* grad);

/// The problem as a data set named "synthetic-lsq": features d x m (float),
/// targets b, no labels, classes 0.
dataset to_dataset(const lsq_problem& p);

// -- LOGREG -------------------------------------------------------------------

/// Settings of the L2-regularised logistic-regression problem.
struct logreg_options {
  std::size_t m = 4096;   ///< examples
  std::size_t d = 32;     ///< parameters
  double mu = 1e-3;       ///< L2 regularisation strength
  std::uint64_t seed = 1; ///< fixes A, x_true and the labels
};

/// f(x) = (1/m) sum_k log(1 + exp(-y_k a_k . x)) + (mu/2) ||x||^2 with
/// a_k ~ N(0, I), y_k = +1 with probability sigmoid(a_k . x_true), and x_true
/// a random direction of norm 2: the margins a_k . x_true are N(0, 4) for
/// every seed, so the data are not separable and the Bayes accuracy is about
/// 0.79 whatever the seed.
struct logreg_problem {
  matrix<double> a;      ///< m x d features
  vector<double> y;      ///< m labels in {-1, +1}
  double mu = 0;         ///< L2 regularisation strength
  vector<double> x_true; ///< parameters that generated y
  vector<double> x_star; ///< minimiser from Newton's method
  double f_star = 0;     ///< f(x_star)
  double grad_norm = 0;  ///< ||grad f(x_star)|| reached (< 1e-10)
  int newton_steps = 0;  ///< Newton iterations taken
};

/// Builds the problem and solves it with damped Newton's method in double
/// to ||grad|| < 1e-10. Throws std::invalid_argument unless 1 <= d, 1 <= m
/// and mu > 0; std::runtime_error if Newton's method does not converge.
logreg_problem make_logreg(const logreg_options& opts);

/// Full objective f(x).
double objective(const logreg_problem& p, const double* x);

/// Mean over `batch` of log(1 + exp(-y_k a_k . x)) plus (mu/2) ||x||^2, an
/// unbiased estimate of f(x).
template <class T>
double batch_loss(const logreg_problem& p, const T* x,
                  const std::vector<std::size_t>& batch);

/// Writes the gradient of batch_loss, (1/|B|) sum_{k in B} -y_k a_k
/// sigmoid(-y_k a_k . x) + mu x, to `grad` (d entries); returns batch_loss.
template <class T>
double batch_gradient(const logreg_problem& p, const T* x,
                      const std::vector<std::size_t>& batch, T* grad);

/// Writes the full gradient to `grad`; returns f(x).
double full_gradient(const logreg_problem& p, const double* x, double* grad);

/// The problem as a data set named "synthetic-logreg": features d x m
/// (float), labels 0 (y = -1) and 1 (y = +1), classes 2.
dataset to_dataset(const logreg_problem& p);

} // namespace troupe::optim
