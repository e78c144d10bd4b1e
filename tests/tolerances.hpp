#pragma once

// Every numeric tolerance of the test suite in one place.

namespace troupe::test {

/// Relative error allowed between analytic and central finite-difference
/// gradients (double precision, step fd_step).
inline constexpr double grad_check_rel = 1e-6;

/// Finite-difference step for gradient checks.
inline constexpr double fd_step = 1e-6;

/// Absolute floor of the gradient check's denominator, so tiny gradients do
/// not inflate the relative error.
inline constexpr double grad_check_abs = 1e-8;

/// Relative distance ||x - x*|| / ||x*|| for "converged to the known optimum".
inline constexpr double optimum_rel = 1e-3;

/// Agreement of double-precision closed forms (normal equations, Newton).
inline constexpr double exact_rel = 1e-9;

/// Relative agreement of a few optimizer or schedule steps with values worked
/// out by hand (double precision; only rounding separates them).
inline constexpr double hand_rel = 1e-12;

/// Relative agreement of a float optimizer step with the double one.
inline constexpr double float_step_rel = 1e-6;

/// Relative error of the synthetic LSQ problem's condition number of
/// A^T A / m (built exactly from its eigenvalues; only rounding).
inline constexpr double condition_rel = 1e-8;

/// An optimizer run on a quadratic counts as converged when f fell below this
/// fraction of its starting value.
inline constexpr double quadratic_converged = 1e-10;

/// Relative error allowed in the layer and model gradient checks (double,
/// central differences with fd_step). Their losses sum many terms, so
/// rounding of order 1e-16 * |loss| / fd_step limits the agreement.
inline constexpr double layer_grad_rel = 1e-5;

/// Floor of those checks' denominator as a fraction of the largest checked
/// gradient entry, so entries that are exactly zero (ReLU's flat side, max
/// pooling's losers) are judged on the scale of the whole gradient.
inline constexpr double layer_grad_floor = 1e-2;

/// Agreement of a float model's logits and gradients with the double
/// model's for the same parameters and input, relative to the largest double
/// entry (at least 1 for logits).
inline constexpr double float_double_rel = 1e-4;

/// Agreement of an optimized layer with a naive loop implementation of its
/// formula (double precision; only summation order differs).
inline constexpr double naive_rel = 1e-12;

/// Distance allowed between a sharded trajectory and the serial one
/// (algorithms.md §1 T1: 1e-12). Not zero: Eigen peels vectorized reductions
/// by the address of each vector, so the same dot product over two buffers at
/// different alignments can differ in the last bit (seen: 4.4e-16).
inline constexpr double sharded_abs = 1e-12;

} // namespace troupe::test
