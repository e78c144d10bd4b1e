#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "messages/control.hpp"
#include "messages/messages.hpp"

// The messages of Sandblaster L-BFGS (algorithms.md §2) that carry more than
// an atom and a number: the driver's vector commands to the L-BFGS shards,
// the shards' evaluation point, a worker's gradient sum of one portion for
// one shard, and the worker's report to the driver. The driver only ever
// receives scalars. Vectors travel as raw little-endian doubles (8 bytes a
// value) in a string: pack_doubles / unpack_doubles.

namespace troupe::messages {

// -- lbfgs_vec_msg ------------------------------------------------------------

/// A vector command of the driver's two-loop machine for a shard's slice
/// (optim::vector_command): op on slots a and b with scalar alpha. A dot
/// is answered with the slice's partial sum, the others with 0.
struct lbfgs_vec_msg {
  std::uint8_t op = 0; ///< optim::vector_command::op
  std::uint32_t a = 0;
  std::uint32_t b = 0;
  real alpha;
};

/// Serializes or prints an lbfgs_vec_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lbfgs_vec_msg& x) {
  return f(caf::meta::type_name("lbfgs_vec_msg"), x.op, x.a, x.b, x.alpha);
}

// -- lbfgs_point_msg ----------------------------------------------------------

/// A shard's evaluation point (its slice of x + t d) and the pass it belongs
/// to.
struct lbfgs_point_msg {
  std::uint64_t pass = 0;
  std::string values; ///< raw doubles: pack_doubles
};

/// Serializes or prints an lbfgs_point_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lbfgs_point_msg& x) {
  return f(caf::meta::type_name("lbfgs_point_msg"), x.pass, x.values);
}

// -- lbfgs_grad_msg -----------------------------------------------------------

/// A worker's gradient sum of one portion for one shard's slice, at the
/// point of pass `pass`. The shard counts the first per portion and pass.
struct lbfgs_grad_msg {
  std::uint64_t pass = 0;
  std::uint64_t portion = 0;
  std::uint64_t samples = 0; ///< examples the sum is over
  std::string values;        ///< raw doubles: pack_doubles
};

/// Serializes or prints an lbfgs_grad_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lbfgs_grad_msg& x) {
  return f(caf::meta::type_name("lbfgs_grad_msg"), x.pass, x.portion, x.samples,
           x.values);
}

// -- lbfgs_done_msg -----------------------------------------------------------

/// A worker's report to the driver: portion `portion` of pass `pass` is
/// computed and its slices sent to every shard.
struct lbfgs_done_msg {
  worker_id worker = 0;
  std::uint64_t pass = 0;
  std::uint64_t portion = 0;
  real loss;                 ///< the loss summed over the portion
  std::uint64_t samples = 0; ///< examples of the portion
};

/// Serializes or prints an lbfgs_done_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lbfgs_done_msg& x) {
  return f(caf::meta::type_name("lbfgs_done_msg"), x.worker, x.pass, x.portion,
           x.loss, x.samples);
}

/// Returns one-line descriptions for logs (vectors by their length).
std::string to_string(const lbfgs_vec_msg& x);
std::string to_string(const lbfgs_point_msg& x);
std::string to_string(const lbfgs_grad_msg& x);
std::string to_string(const lbfgs_done_msg& x);

/// n doubles as raw little-endian bytes (8 per value).
std::string pack_doubles(const double* x, std::size_t n);

/// The doubles of `s`; throws std::invalid_argument if its length is not a
/// multiple of 8 or a value is not finite.
std::vector<double> unpack_doubles(const std::string& s);

} // namespace troupe::messages
