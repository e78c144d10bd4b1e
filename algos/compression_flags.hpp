// The compression flags an algorithm that compresses its messages binds
// (Downpour and sync their pushes, SGP its shares): --compress and the
// per-codec settings, checked only where they apply.

#pragma once

#include <cstdint>
#include <set>
#include <string>

#include <caf/fwd.hpp>
#include <caf/string_view.hpp>

#include "optim/compress.hpp"

namespace troupe::algos {

struct compression_flags {
  std::string compress = "none"; ///< adacomp | topk | onebit | none
  std::uint64_t bin_fc = 500;    ///< AdaComp bin length, dense layers
  std::uint64_t bin_conv = 50;   ///< AdaComp bin length, conv layers
  double topk_fc = 0.01;         ///< top-k density, dense layers
  double topk_conv = 0.01;       ///< top-k density, conv layers

  /// Binds the flags under `category` ("?downpour"); `what` says what is
  /// compressed ("the gradient pushes").
  void bind(caf::config_option_set& set, caf::string_view category,
            const std::string& what);

  /// Throws std::invalid_argument naming the flag: an unknown codec, a
  /// codec's setting given for another codec, a value out of range.
  void check(const std::set<std::string>& given) const;

  /// The settings as the policies take them.
  optim::compress_options options() const;
};

} // namespace troupe::algos
