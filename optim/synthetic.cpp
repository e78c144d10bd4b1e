#include "optim/synthetic.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <Eigen/QR>

#include "optim/rng.hpp"

namespace troupe::optim {

namespace {

void require(bool ok, const std::string& what) {
  if (!ok)
    throw std::invalid_argument(what);
}

matrix<double> gaussian(rng& gen, Eigen::Index rows, Eigen::Index cols) {
  matrix<double> z(rows, cols);
  for (Eigen::Index j = 0; j < cols; ++j)
    for (Eigen::Index i = 0; i < rows; ++i)
      z(i, j) = gen.normal();
  return z;
}

/// The first `cols` columns of the orthogonal factor of a Gaussian matrix.
matrix<double> orthonormal(rng& gen, Eigen::Index rows, Eigen::Index cols) {
  Eigen::HouseholderQR<matrix<double>> qr{gaussian(gen, rows, cols)};
  return qr.householderQ() * matrix<double>::Identity(rows, cols);
}

template <class T>
vector<double> to_double(const T* x, Eigen::Index d) {
  return const_vector_map<T>{x, d}.template cast<double>();
}

void check_batch(const std::vector<std::size_t>& batch, Eigen::Index m) {
  require(!batch.empty(), "synthetic: empty minibatch");
  for (auto k : batch)
    require(k < static_cast<std::size_t>(m),
            "synthetic: example index " + std::to_string(k)
                + " out of range for " + std::to_string(m) + " examples");
}

/// log(1 + exp(u)) without overflow.
double softplus(double u) {
  return std::max(u, 0.0) + std::log1p(std::exp(-std::abs(u)));
}

/// 1 / (1 + exp(-u)) without overflow.
double sigmoid(double u) {
  if (u >= 0)
    return 1.0 / (1.0 + std::exp(-u));
  auto e = std::exp(u);
  return e / (1.0 + e);
}

std::pair<double, double> extreme_eigenvalues(const matrix<double>& a) {
  matrix<double> h = a.transpose() * a / static_cast<double>(a.rows());
  Eigen::SelfAdjointEigenSolver<matrix<double>> eig{h, Eigen::EigenvaluesOnly};
  return {eig.eigenvalues().maxCoeff(), eig.eigenvalues().minCoeff()};
}

dataset make_dataset(const char* name, const matrix<double>& a) {
  dataset result;
  result.name = name;
  result.x = a.transpose().cast<float>();
  result.sample_shape = shape{static_cast<int>(a.cols()), 1, 1};
  return result;
}

/// Logistic loss terms and their derivatives for margins z = y .* (A x).
double logreg_terms(const logreg_problem& p, const matrix<double>& a,
                    const vector<double>& y, const vector<double>& x,
                    vector<double>* grad) {
  vector<double> z = y.cwiseProduct(a * x);
  auto n = static_cast<double>(a.rows());
  double sum = 0;
  vector<double> coef(z.size());
  for (Eigen::Index k = 0; k < z.size(); ++k) {
    sum += softplus(-z[k]);
    coef[k] = -y[k] * sigmoid(-z[k]);
  }
  if (grad != nullptr)
    *grad = a.transpose() * coef / n + p.mu * x;
  return sum / n + 0.5 * p.mu * x.squaredNorm();
}

} // namespace

// -- LSQ ----------------------------------------------------------------------

lsq_problem make_lsq(const lsq_options& opts) {
  require(opts.d >= 1 && opts.d <= opts.m,
          "lsq_options: need 1 <= d <= m, got d = " + std::to_string(opts.d)
              + ", m = " + std::to_string(opts.m));
  require(opts.condition >= 1 && (opts.d > 1 || opts.condition == 1),
          "lsq_options: condition must be >= 1 (and 1 if d = 1), got "
              + std::to_string(opts.condition));
  require(opts.noise >= 0,
          "lsq_options: noise must be >= 0, got " + std::to_string(opts.noise));
  auto m = static_cast<Eigen::Index>(opts.m);
  auto d = static_cast<Eigen::Index>(opts.d);
  rng gen{opts.seed};
  matrix<double> q = orthonormal(gen, m, d);
  matrix<double> v = orthonormal(gen, d, d);
  vector<double> root_lambda(d);
  for (Eigen::Index i = 0; i < d; ++i) {
    auto t = d > 1 ? static_cast<double>(i) / static_cast<double>(d - 1) : 0.0;
    root_lambda[i] = std::sqrt(std::pow(opts.condition, t));
  }
  lsq_problem p;
  p.a = std::sqrt(static_cast<double>(m)) * q * root_lambda.asDiagonal()
        * v.transpose();
  p.x_true = gaussian(gen, d, 1);
  p.b = p.a * p.x_true + opts.noise * gaussian(gen, m, 1);
  matrix<double> ata = p.a.transpose() * p.a;
  p.x_star = ata.llt().solve(p.a.transpose() * p.b);
  p.f_star = objective(p, p.x_star.data());
  std::tie(p.lambda_max, p.lambda_min) = extreme_eigenvalues(p.a);
  return p;
}

double objective(const lsq_problem& p, const double* x) {
  vector<double> r = p.a * to_double(x, p.a.cols()) - p.b;
  return 0.5 * r.squaredNorm() / static_cast<double>(p.a.rows());
}

template <class T>
double batch_loss(const lsq_problem& p, const T* x,
                  const std::vector<std::size_t>& batch) {
  check_batch(batch, p.a.rows());
  matrix<double> ab = p.a(batch, Eigen::all);
  vector<double> r = ab * to_double(x, p.a.cols()) - p.b(batch);
  return 0.5 * r.squaredNorm() / static_cast<double>(batch.size());
}

template <class T>
double batch_gradient(const lsq_problem& p, const T* x,
                      const std::vector<std::size_t>& batch, T* grad) {
  check_batch(batch, p.a.rows());
  auto nb = static_cast<double>(batch.size());
  matrix<double> ab = p.a(batch, Eigen::all);
  vector<double> r = ab * to_double(x, p.a.cols()) - p.b(batch);
  vector_map<T>{grad, p.a.cols()}
  = (ab.transpose() * r / nb).template cast<T>();
  return 0.5 * r.squaredNorm() / nb;
}

double full_gradient(const lsq_problem& p, const double* x, double* grad) {
  auto m = static_cast<double>(p.a.rows());
  vector<double> r = p.a * to_double(x, p.a.cols()) - p.b;
  vector_map<double>{grad, p.a.cols()} = p.a.transpose() * r / m;
  return 0.5 * r.squaredNorm() / m;
}

dataset to_dataset(const lsq_problem& p) {
  auto result = make_dataset("synthetic-lsq", p.a);
  result.targets.assign(p.b.data(), p.b.data() + p.b.size());
  result.classes = 0;
  return result;
}

// -- LOGREG -------------------------------------------------------------------

logreg_problem make_logreg(const logreg_options& opts) {
  require(opts.d >= 1 && opts.m >= 1,
          "logreg_options: need d >= 1 and m >= 1, got d = "
              + std::to_string(opts.d) + ", m = " + std::to_string(opts.m));
  require(opts.mu > 0,
          "logreg_options: mu must be > 0, got " + std::to_string(opts.mu));
  auto m = static_cast<Eigen::Index>(opts.m);
  auto d = static_cast<Eigen::Index>(opts.d);
  rng gen{opts.seed};
  logreg_problem p;
  p.mu = opts.mu;
  p.a = gaussian(gen, m, d);
  p.x_true = gaussian(gen, d, 1);
  p.x_true *= 2.0 / p.x_true.norm();
  vector<double> margin = p.a * p.x_true;
  p.y.resize(m);
  for (Eigen::Index k = 0; k < m; ++k)
    p.y[k] = gen.uniform() < sigmoid(margin[k]) ? 1.0 : -1.0;
  // Damped Newton from 0; the Armijo test is skipped once the predicted
  // decrease is below rounding, where pure Newton converges quadratically.
  vector<double> x = vector<double>::Zero(d);
  vector<double> g;
  double f = logreg_terms(p, p.a, p.y, x, &g);
  constexpr int max_steps = 100;
  while (g.norm() >= 1e-10) {
    if (p.newton_steps == max_steps)
      throw std::runtime_error("make_logreg: Newton's method did not reach "
                               "||grad|| < 1e-10 in 100 steps (||grad|| = "
                               + std::to_string(g.norm()) + ")");
    ++p.newton_steps;
    vector<double> z = p.y.cwiseProduct(p.a * x);
    vector<double> w(m);
    for (Eigen::Index k = 0; k < m; ++k) {
      auto s = sigmoid(z[k]);
      w[k] = s * (1 - s);
    }
    matrix<double> h
        = p.a.transpose() * w.asDiagonal() * p.a / static_cast<double>(m);
    h.diagonal().array() += p.mu;
    vector<double> dx = h.llt().solve(-g);
    double slope = g.dot(dx);
    double t = 1;
    vector<double> next = x + dx;
    vector<double> next_g;
    double next_f = logreg_terms(p, p.a, p.y, next, &next_g);
    while (-slope > 1e-14 && next_f > f + 1e-4 * t * slope && t > 1e-12) {
      t /= 2;
      next = x + t * dx;
      next_f = logreg_terms(p, p.a, p.y, next, &next_g);
    }
    x = next;
    f = next_f;
    g = next_g;
  }
  p.x_star = x;
  p.f_star = f;
  p.grad_norm = g.norm();
  return p;
}

double objective(const logreg_problem& p, const double* x) {
  return logreg_terms(p, p.a, p.y, to_double(x, p.a.cols()), nullptr);
}

template <class T>
double batch_loss(const logreg_problem& p, const T* x,
                  const std::vector<std::size_t>& batch) {
  check_batch(batch, p.a.rows());
  return logreg_terms(p, p.a(batch, Eigen::all), p.y(batch),
                      to_double(x, p.a.cols()), nullptr);
}

template <class T>
double batch_gradient(const logreg_problem& p, const T* x,
                      const std::vector<std::size_t>& batch, T* grad) {
  check_batch(batch, p.a.rows());
  vector<double> g;
  auto loss = logreg_terms(p, p.a(batch, Eigen::all), p.y(batch),
                           to_double(x, p.a.cols()), &g);
  vector_map<T>{grad, p.a.cols()} = g.template cast<T>();
  return loss;
}

double full_gradient(const logreg_problem& p, const double* x, double* grad) {
  vector<double> g;
  auto loss = logreg_terms(p, p.a, p.y, to_double(x, p.a.cols()), &g);
  vector_map<double>{grad, p.a.cols()} = g;
  return loss;
}

dataset to_dataset(const logreg_problem& p) {
  auto result = make_dataset("synthetic-logreg", p.a);
  result.labels.resize(static_cast<std::size_t>(p.y.size()));
  for (Eigen::Index k = 0; k < p.y.size(); ++k)
    result.labels[static_cast<std::size_t>(k)] = p.y[k] > 0 ? 1 : 0;
  result.classes = 2;
  return result;
}

// -- explicit instantiations --------------------------------------------------

#define TROUPE_SYNTHETIC_INSTANTIATE(T, problem)                               \
  template double batch_loss<T>(const problem&, const T*,                      \
                                const std::vector<std::size_t>&);              \
  template double batch_gradient<T>(const problem&, const T*,                  \
                                    const std::vector<std::size_t>&, T*);

TROUPE_SYNTHETIC_INSTANTIATE(float, lsq_problem)
TROUPE_SYNTHETIC_INSTANTIATE(double, lsq_problem)
TROUPE_SYNTHETIC_INSTANTIATE(float, logreg_problem)
TROUPE_SYNTHETIC_INSTANTIATE(double, logreg_problem)

#undef TROUPE_SYNTHETIC_INSTANTIATE

} // namespace troupe::optim
