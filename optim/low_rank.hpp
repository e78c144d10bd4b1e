#pragma once

// The summable compressors of a ring all-reduce (docs/algorithms.md
// "PowerSGD and ScaleCom"), without actors. PowerSGD (Vogels et al. 2019):
// each weight matrix M (rows x cols) is approximated by P Q^T of rank r
// with one power iteration warm-started from the previous step's Q: P = M Q
// and Q = M^T P are linear in M, so the workers' P and Q can be summed by an
// all-reduce. ScaleCom (Chen et al. 2020): the workers all send the values
// at one index set, the top-k of a leader that changes every step
// (cyclic), so their sparse gradients stay summable; each worker's memory
// of what it did not send goes through a low-pass filter.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "optim/range_table.hpp"

namespace troupe::optim {

/// A layer's weights seen as a row-major matrix inside the flat vector.
struct matrix_part {
  std::size_t offset = 0;
  std::size_t rows = 0, cols = 0;
};

/// How PowerSGD cuts a model: the matrices it compresses and the rest,
/// sent dense. A range named "X.weight" is a matrix of rows = the size of
/// "X.bias" (a fully connected layer's outputs, a convolution's output
/// channels) when rank * (rows + cols) < rows * cols; everything else
/// (biases, small layers) is dense.
struct powersgd_layout {
  std::vector<matrix_part> matrices;
  std::vector<slice> dense;
  std::size_t rank = 0;
  /// Values of the first exchange (the P's, then the dense parts) and of
  /// the second (the Q's).
  std::size_t p_length = 0, q_length = 0;
};

/// The layout of a model of n values laid out by `layers` (with no layers,
/// one dense part); throws std::invalid_argument for rank 0.
powersgd_layout make_powersgd_layout(const std::vector<named_range>& layers,
                                     std::size_t n, std::size_t rank);

/// p (rows x rank) = m (rows x cols) q (cols x rank), row-major (Eigen's
/// products: the same bits for the same inputs on a machine).
void low_rank_project(const float* m, std::size_t rows, std::size_t cols,
                      const float* q, std::size_t rank, float* p) noexcept;

/// q (cols x rank) = m^T p.
void low_rank_back(const float* m, std::size_t rows, std::size_t cols,
                   const float* p, std::size_t rank, float* q) noexcept;

/// out (rows x cols) = p q^T.
void low_rank_expand(const float* p, const float* q, std::size_t rows,
                     std::size_t cols, std::size_t rank, float* out) noexcept;

/// Makes p's columns orthonormal in place (modified Gram-Schmidt in
/// double); a column that is (nearly) in the span of the previous ones
/// becomes zero.
void orthonormalize(float* p, std::size_t rows, std::size_t rank) noexcept;

/// PowerSGD's starting Q of every matrix of `layout` (q_length values,
/// standard normal from `seed`: the same on every worker).
std::vector<float> powersgd_start(const powersgd_layout& layout,
                                  std::uint64_t seed);

/// The indices of the k largest |v_i| (ties to the lower index), increasing.
std::vector<std::uint32_t> top_k_indices(const float* v, std::size_t n,
                                         std::size_t k);

/// ScaleCom's leader of step t among `workers`: t mod workers.
std::uint32_t cyclic_leader(std::uint64_t step, std::uint32_t workers) noexcept;

/// ScaleCom's low-pass filter on a worker's memory e of n values: m = e + g
/// was compressed and its entries at `sent` (increasing) were sent, C(m);
/// e becomes (1 - beta) e + beta (m - C(m)). At beta = 1 it is plain error
/// feedback, bit for bit: e = m with the sent entries zeroed.
void scalecom_memory(float* e, const float* m, std::size_t n,
                     const std::vector<std::uint32_t>& sent,
                     float beta) noexcept;

/// Indices as 2 floats each (the high and low 16 bits, exact in float), so
/// that a sum with zeros from every other worker carries them unchanged.
void encode_indices(const std::vector<std::uint32_t>& idx, float* out) noexcept;

/// Reads k indices encoded by encode_indices: empty if every value is
/// zero (the leader had nothing finite to send); otherwise why they cannot
/// be used (not integers of 16 bits, not increasing, not below n), empty
/// when they can.
std::string decode_indices(const float* in, std::size_t k, std::size_t n,
                           std::vector<std::uint32_t>& out);

} // namespace troupe::optim
