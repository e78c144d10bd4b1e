#include "optim/lbfgs.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "optim/check.hpp"

namespace troupe::optim {

std::uint32_t lbfgs_history::next_position() const noexcept {
  if (ring.size() < memory)
    return static_cast<std::uint32_t>(ring.size());
  return ring.front();
}

bool lbfgs_history::push(double sy, double yy, double ss) {
  if (!(sy > 1e-10 * ss) || !(yy > 0) || !std::isfinite(sy))
    return false;
  auto pos = next_position();
  if (ring.size() == memory) {
    ring.erase(ring.begin());
    rho.erase(rho.begin());
  }
  ring.push_back(pos);
  rho.push_back(1.0 / sy);
  gamma = sy / yy;
  return true;
}

two_loop::two_loop(const lbfgs_history& history)
    : h_(history), alpha_(history.ring.size(), 0.0) {}

void two_loop::result(double dot) {
  last_ = dot;
  waiting_ = false;
}

vector_command two_loop::next() {
  using op = vector_command::op;
  auto k = h_.ring.size();
  switch (phase_) {
  case 0: // q = g
    phase_ = 1;
    i_ = k;
    return {op::copy, slot_g, slot_q, 0};
  case 1: // newest to oldest: a_j = rho_j s_j . q; q -= a_j y_j
    TROUPE_CHECK(!waiting_, "two_loop: the dot's result is missing");
    if (i_ == 0) {
      phase_ = 3;
      return {op::copy, slot_q, slot_d, 0};
    }
    phase_ = 2;
    waiting_ = true;
    return {op::dot, slot_s(h_.ring[i_ - 1]), slot_q, 0};
  case 2: {
    TROUPE_CHECK(!waiting_, "two_loop: the dot's result is missing");
    auto j = --i_;
    alpha_[j] = h_.rho[j] * last_;
    phase_ = 1;
    return {op::axpy, slot_y(h_.ring[j]), slot_q, -alpha_[j]};
  }
  case 3: // d = gamma q
    phase_ = 4;
    i_ = 0;
    return {op::scale, slot_d, 0, k > 0 ? h_.gamma : 1.0};
  case 4: // oldest to newest: b = rho_j y_j . d; d += (a_j - b) s_j
    if (i_ == k) {
      phase_ = 6;
      return {op::scale, slot_d, 0, -1.0};
    }
    phase_ = 5;
    waiting_ = true;
    return {op::dot, slot_y(h_.ring[i_]), slot_d, 0};
  case 5: {
    TROUPE_CHECK(!waiting_, "two_loop: the dot's result is missing");
    auto j = i_++;
    double b = h_.rho[j] * last_;
    phase_ = 4;
    return {op::axpy, slot_s(h_.ring[j]), slot_d, alpha_[j] - b};
  }
  default:
    return {op::done, 0, 0, 0};
  }
}

dense_store::dense_store(std::size_t n, std::size_t memory, std::size_t extra)
    : slots_(4 + 2 * memory + extra, std::vector<double>(n, 0.0)) {}

std::vector<double>& dense_store::slot(std::uint32_t s) {
  return slots_.at(s);
}

double dense_store::run(const vector_command& c) {
  using op = vector_command::op;
  switch (c.kind) {
  case op::dot: {
    auto &a = slot(c.a), &b = slot(c.b);
    double sum = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
      sum += a[i] * b[i];
    return sum;
  }
  case op::axpy: {
    auto &a = slot(c.a), &b = slot(c.b);
    for (std::size_t i = 0; i < a.size(); ++i)
      b[i] += c.alpha * a[i];
    return 0;
  }
  case op::scale:
    for (auto& v : slot(c.a))
      v *= c.alpha;
    return 0;
  case op::copy:
    slot(c.b) = slot(c.a);
    return 0;
  default:
    return 0;
  }
}

void run_two_loop(const lbfgs_history& h, dense_store& store) {
  two_loop t{h};
  for (auto c = t.next(); c.kind != vector_command::op::done; c = t.next()) {
    auto r = store.run(c);
    if (c.kind == vector_command::op::dot)
      t.result(r);
  }
}

namespace {

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    s += a[i] * b[i];
  return s;
}

} // namespace

lbfgs_result lbfgs_minimize(const objective_fn& f, std::vector<double> x0,
                            const lbfgs_options& opts) {
  auto n = x0.size();
  dense_store store{n, opts.memory};
  lbfgs_history h;
  h.memory = opts.memory;
  lbfgs_result out;
  store.slot(slot_x) = std::move(x0);
  auto fx = f(store.slot(slot_x), store.slot(slot_g));
  ++out.evaluations;
  std::vector<double> xt(n), gt(n);
  for (; out.iterations < opts.max_iterations; ++out.iterations) {
    auto gnorm = std::sqrt(dot(store.slot(slot_g), store.slot(slot_g)));
    if (gnorm < opts.gradient_tolerance)
      break;
    run_two_loop(h, store);
    auto& d = store.slot(slot_d);
    double slope = dot(store.slot(slot_g), d);
    if (!(slope < 0)) { // not a descent direction: restart from -g
      h.ring.clear();
      h.rho.clear();
      d = store.slot(slot_g);
      for (auto& v : d)
        v = -v;
      slope = dot(store.slot(slot_g), d);
    }
    // Weak Wolfe by bisection: t = 1 first.
    double lo = 0, hi = std::numeric_limits<double>::infinity(), t = 1;
    double ft = fx;
    bool found = false;
    for (std::size_t ls = 0; ls < opts.max_line_search; ++ls) {
      for (std::size_t i = 0; i < n; ++i)
        xt[i] = store.slot(slot_x)[i] + t * d[i];
      ft = f(xt, gt);
      ++out.evaluations;
      if (!(ft <= fx + opts.c1 * t * slope))
        hi = t;
      else if (dot(gt, d) < opts.c2 * slope)
        lo = t;
      else {
        found = true;
        break;
      }
      t = std::isinf(hi) ? 2 * lo : (lo + hi) / 2;
    }
    if (!found)
      break;
    // s = t d, y = g_new - g; the pair goes to the next ring position.
    // (Into the ring only if accepted: the position may hold the oldest
    // pair, still in use when this one is refused.)
    std::vector<double> s(n), y(n);
    for (std::size_t i = 0; i < n; ++i) {
      s[i] = t * d[i];
      y[i] = gt[i] - store.slot(slot_g)[i];
    }
    auto pos = h.next_position();
    if (h.push(dot(s, y), dot(y, y), dot(s, s))) {
      store.slot(slot_s(pos)) = std::move(s);
      store.slot(slot_y(pos)) = std::move(y);
    } else {
      ++out.pairs_rejected;
    }
    store.slot(slot_x) = xt;
    store.slot(slot_g) = gt;
    fx = ft;
  }
  out.x = store.slot(slot_x);
  out.f = fx;
  out.gradient_norm = std::sqrt(dot(store.slot(slot_g), store.slot(slot_g)));
  return out;
}

} // namespace troupe::optim
