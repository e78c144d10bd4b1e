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

} // namespace troupe::test
