// compressor::save and compressor::load of optim/compress.hpp.

#include <utility>

#include "optim/compress.hpp"
#include "optim/state_file.hpp"

namespace troupe::optim {

namespace {

/// The settings that shape what a compressor sends, as metadata.
std::vector<std::pair<std::string, std::string>>
option_texts(const compress_options& o) {
  return {{"codec", to_string(o.method)},
          {"bin_fc", std::to_string(o.bin_fc)},
          {"bin_conv", std::to_string(o.bin_conv)},
          {"density_fc", exact_text(o.density_fc)},
          {"density_conv", exact_text(o.density_conv)}};
}

} // namespace

void compressor::save(state_writer& w, const std::string& prefix) const {
  for (const auto& [key, value] : option_texts(opts_))
    w.meta(prefix + key, value);
  std::vector<std::uint64_t> offset, size, kind;
  for (const auto& s : segments_) {
    offset.push_back(s.offset);
    size.push_back(s.size);
    kind.push_back(static_cast<std::uint64_t>(s.kind));
  }
  w.put(prefix + "segments.offset", offset);
  w.put(prefix + "segments.size", size);
  w.put(prefix + "segments.kind", kind);
  w.put(prefix + "residual", residual_);
  w.put(prefix + "stats.dense_bytes", stats_.dense_bytes.data(), 2);
  w.put(prefix + "stats.packed_bytes", stats_.packed_bytes.data(), 2);
}

void compressor::load(const state_reader& r, const std::string& prefix) {
  for (const auto& [key, value] : option_texts(opts_))
    r.expect_meta(prefix + key, value);
  const char* fields[] = {"offset", "size", "kind"};
  for (int f = 0; f < 3; ++f) {
    auto name = prefix + "segments." + fields[f];
    auto saved = r.u64(name);
    if (saved.size() != segments_.size())
      throw r.error(name, std::to_string(saved.size()) + " segments, expected "
                              + std::to_string(segments_.size()));
    for (std::size_t i = 0; i < saved.size(); ++i) {
      const auto& s = segments_[i];
      std::uint64_t here = f == 0   ? s.offset
                           : f == 1 ? s.size
                                    : static_cast<std::uint64_t>(s.kind);
      if (saved[i] != here)
        throw r.error(name, "segment " + std::to_string(i) + " has "
                                + std::to_string(saved[i]) + ", expected "
                                + std::to_string(here));
    }
  }
  std::vector<float> residual(residual_.size());
  r.f32(prefix + "residual", residual.data(), residual.size());
  compress_stats stats;
  for (auto [name, out] :
       {std::pair{"stats.dense_bytes", stats.dense_bytes.data()},
        std::pair{"stats.packed_bytes", stats.packed_bytes.data()}}) {
    auto saved = r.u64(prefix + name);
    if (saved.size() != 2)
      throw r.error(prefix + name,
                    std::to_string(saved.size()) + " values, expected 2");
    std::copy(saved.begin(), saved.end(), out);
  }
  residual_ = std::move(residual);
  stats_ = stats;
}

} // namespace troupe::optim
