#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

// L-BFGS as Sandblaster runs it (algorithms.md §2): the coordinator holds
// only scalars and drives the vectors, which live elsewhere (on parameter
// shards, as slices), through a small command set. The two-loop recursion
// is a state machine that emits one command at a time and takes the result
// of each DOT, so the same code drives a serial vector store (tests, the
// reference) and, later, rounds of messages to the shards. No CAF.

namespace troupe::optim {

/// A vector slot: x, the gradient g, the direction d, the work vector q,
/// and the history pairs s_j, y_j in a ring of m (slot_s(j), slot_y(j)).
enum : std::uint32_t { slot_x = 0, slot_g = 1, slot_d = 2, slot_q = 3 };
inline std::uint32_t slot_s(std::uint32_t j) noexcept {
  return 4 + 2 * j;
}
inline std::uint32_t slot_y(std::uint32_t j) noexcept {
  return 5 + 2 * j;
}

/// One vector command. dot(a, b) returns a partial sum per shard (the
/// coordinator adds them); axpy: b += alpha a; scale: a *= alpha; copy:
/// b = a.
struct vector_command {
  enum class op : std::uint8_t { dot, axpy, scale, copy, done };
  op kind = op::done;
  std::uint32_t a = 0, b = 0;
  double alpha = 0;
};

/// The history the coordinator keeps: per stored pair its ring position
/// and rho = 1 / (y . s), oldest first, and the initial scaling gamma =
/// (s . y) / (y . y) of the newest pair.
struct lbfgs_history {
  std::size_t memory = 10;
  std::vector<std::uint32_t> ring; ///< ring positions, oldest first
  std::vector<double> rho;         ///< same order
  double gamma = 1;

  /// The ring position the next pair goes to (the oldest one's when full).
  std::uint32_t next_position() const noexcept;
  /// Records the pair just written at next_position(), given s . y and
  /// y . y; refused (false, nothing changes) unless s . y > 1e-10 s . s.
  bool push(double sy, double yy, double ss);
};

/// The two-loop recursion as commands: d = -H g with H the L-BFGS inverse
/// Hessian approximation of `history`. Call next(); after a dot, pass its
/// (summed) result to result() before the next call.
class two_loop {
public:
  explicit two_loop(const lbfgs_history& history);
  vector_command next();
  void result(double dot);

private:
  const lbfgs_history& h_;
  std::vector<double> alpha_;
  int phase_ = 0;
  std::size_t i_ = 0;
  bool waiting_ = false;
  double last_ = 0;
};

/// Whole vectors in memory, executing commands (the serial reference).
class dense_store {
public:
  /// The 4 + 2 memory slots and `extra` more after them.
  dense_store(std::size_t n, std::size_t memory, std::size_t extra = 0);
  std::vector<double>& slot(std::uint32_t s);
  /// Runs a command; returns the dot product for dot, else 0.
  double run(const vector_command& c);

private:
  std::vector<std::vector<double>> slots_;
};

/// Runs the two-loop recursion on a store until done.
void run_two_loop(const lbfgs_history& h, dense_store& store);

/// A function and its gradient at x (returns f).
using objective_fn = std::function<double(const std::vector<double>& x,
                                          std::vector<double>& g)>;

/// Settings of the serial reference.
struct lbfgs_options {
  std::size_t memory = 10;
  std::size_t max_iterations = 100;
  double gradient_tolerance = 1e-8; ///< stop when ||g|| is below
  double c1 = 1e-4, c2 = 0.9;       ///< Wolfe constants
  std::size_t max_line_search = 40;
};

/// What the reference did.
struct lbfgs_result {
  std::vector<double> x;
  double f = 0, gradient_norm = 0;
  std::size_t iterations = 0, evaluations = 0, pairs_rejected = 0;
};

/// Serial L-BFGS with a weak-Wolfe bisection line search (trial steps 1,
/// then halving / doubling): the reference Sandblaster must reproduce.
lbfgs_result lbfgs_minimize(const objective_fn& f, std::vector<double> x0,
                            const lbfgs_options& opts = {});

} // namespace troupe::optim
