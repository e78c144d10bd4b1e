#include "optim/compress.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "optim/quote.hpp"

namespace troupe::optim {

const char* to_string(codec c) noexcept {
  switch (c) {
  case codec::adacomp:
    return "adacomp";
  case codec::topk:
    return "topk";
  case codec::onebit:
    return "onebit";
  default:
    return "none";
  }
}

codec parse_codec(const std::string& name) {
  for (auto c : {codec::none, codec::adacomp, codec::topk, codec::onebit})
    if (name == to_string(c))
      return c;
  throw std::invalid_argument("unknown compression " + quote(name)
                              + " (adacomp, topk, onebit or none)");
}

layer_kind kind_of(const named_range& r) noexcept {
  return r.name.rfind("conv", 0) == 0 ? layer_kind::conv : layer_kind::fc;
}

double compress_stats::ratio() const noexcept {
  auto d = dense_bytes[0] + dense_bytes[1];
  auto p = packed_bytes[0] + packed_bytes[1];
  return p > 0 ? static_cast<double>(d) / static_cast<double>(p) : 0.0;
}

double compress_stats::ratio(layer_kind k) const noexcept {
  auto i = static_cast<std::size_t>(k);
  return packed_bytes[i] > 0 ? static_cast<double>(dense_bytes[i])
                                   / static_cast<double>(packed_bytes[i])
                             : 0.0;
}

std::vector<segment_spec> segments_of(const std::vector<named_range>& layers,
                                      std::size_t offset, std::size_t size) {
  std::vector<segment_spec> out;
  std::size_t at = offset, end = offset + size;
  for (auto& r : layers) {
    auto lo = std::max(r.offset, at), hi = std::min(r.offset + r.size, end);
    if (lo >= hi)
      continue;
    if (lo > at)
      out.push_back({at - offset, lo - at, layer_kind::fc});
    out.push_back({lo - offset, hi - lo, kind_of(r)});
    at = hi;
  }
  if (at < end)
    out.push_back({at - offset, end - at, layer_kind::fc});
  return out;
}

namespace {

// -- byte writer and reader ---------------------------------------------------

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_f32(std::string& out, float f) {
  std::uint32_t v;
  std::memcpy(&v, &f, 4);
  put_u32(out, v);
}

void put_varint(std::string& out, std::uint32_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

/// Sign bits (1: negative) of the values at `idx`, 8 per byte.
void put_signs(std::string& out, const float* v,
               const std::vector<std::uint32_t>& idx) {
  std::size_t start = out.size();
  out.resize(start + (idx.size() + 7) / 8, '\0');
  for (std::size_t i = 0; i < idx.size(); ++i)
    if (std::signbit(v[idx[i]]))
      out[start + i / 8] = static_cast<char>(
          static_cast<unsigned char>(out[start + i / 8]) | (1u << (i % 8)));
}

void put_indices(std::string& out, const std::vector<std::uint32_t>& idx) {
  std::uint32_t prev = 0;
  for (std::size_t i = 0; i < idx.size(); ++i) {
    put_varint(out, i == 0 ? idx[i] : idx[i] - prev - 1);
    prev = idx[i];
  }
}

class reader {
public:
  explicit reader(const std::string& s) : s_(s) {}

  std::uint32_t u32() {
    need(4);
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i)
      v |= static_cast<std::uint32_t>(static_cast<unsigned char>(s_[at_ + i]))
           << (8 * i);
    at_ += 4;
    return v;
  }
  std::uint8_t u8() {
    need(1);
    return static_cast<std::uint8_t>(s_[at_++]);
  }
  float f32() {
    auto v = u32();
    float f;
    std::memcpy(&f, &v, 4);
    if (!std::isfinite(f))
      throw std::invalid_argument("compressed block: non-finite value");
    return f;
  }
  std::uint32_t varint() {
    std::uint32_t v = 0;
    for (int shift = 0; shift < 35; shift += 7) {
      auto b = u8();
      v |= static_cast<std::uint32_t>(b & 0x7f) << shift;
      if (!(b & 0x80))
        return v;
    }
    throw std::invalid_argument("compressed block: bad index encoding");
  }
  bool sign(std::size_t base, std::size_t i) const {
    return (static_cast<unsigned char>(s_[base + i / 8]) >> (i % 8)) & 1u;
  }
  /// Skips n sign bits; returns where they start.
  std::size_t signs(std::size_t n) {
    auto bytes = (n + 7) / 8;
    need(bytes);
    auto base = at_;
    at_ += bytes;
    return base;
  }
  bool done() const noexcept {
    return at_ == s_.size();
  }

private:
  void need(std::size_t n) const {
    if (s_.size() - at_ < n)
      throw std::invalid_argument("compressed block: truncated");
  }
  const std::string& s_;
  std::size_t at_ = 0;
};

// -- the compressors, one segment at a time ---------------------------------

/// AdaComp on one segment: G = p (residual included), H = G + dW; in bins
/// of `bin`, select |H| >= max |G| of the bin (bins whose max is 0 send
/// nothing); every selected entry becomes sign(G) * s with s the mean of
/// the bins' maxima.
void adacomp(std::string& out, const float* p, const float* dw, float* sent,
             std::size_t n, std::size_t bin) {
  std::vector<std::uint32_t> idx;
  double scale_sum = 0;
  std::size_t bins = 0;
  for (std::size_t b0 = 0; b0 < n; b0 += bin) {
    auto b1 = std::min(n, b0 + bin);
    float gmax = 0;
    for (auto k = b0; k < b1; ++k)
      gmax = std::max(gmax, std::abs(p[k]));
    if (gmax == 0)
      continue; // the all-zero guard
    scale_sum += gmax;
    ++bins;
    for (auto k = b0; k < b1; ++k)
      if (std::abs(p[k] + dw[k]) >= gmax)
        idx.push_back(static_cast<std::uint32_t>(k));
  }
  auto scale = bins > 0 ? static_cast<float>(scale_sum / bins) : 0.0f;
  put_f32(out, scale);
  put_u32(out, static_cast<std::uint32_t>(idx.size()));
  put_indices(out, idx);
  put_signs(out, p, idx);
  std::fill(sent, sent + n, 0.0f);
  for (auto k : idx)
    sent[k] = std::signbit(p[k]) ? -scale : scale;
}

/// Top-k: the k entries of largest magnitude, sent exactly.
void topk(std::string& out, const float* p, float* sent, std::size_t n,
          double density) {
  auto k = std::max<std::size_t>(
      1, static_cast<std::size_t>(std::llround(density * n)));
  k = std::min(k, n);
  std::vector<std::uint32_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0u);
  std::nth_element(
      idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k - 1), idx.end(),
      [&](auto a, auto b) { return std::abs(p[a]) > std::abs(p[b]); });
  idx.resize(k);
  std::sort(idx.begin(), idx.end());
  put_u32(out, static_cast<std::uint32_t>(k));
  put_indices(out, idx);
  std::fill(sent, sent + n, 0.0f);
  for (auto i : idx) {
    put_f32(out, p[i]);
    sent[i] = p[i];
  }
}

/// 1-bit: every entry's sign; negatives decode to the mean of the negative
/// entries, the others to the mean of the non-negative ones.
void onebit(std::string& out, const float* p, float* sent, std::size_t n) {
  double pos = 0, neg = 0;
  std::size_t np = 0, nn = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (std::signbit(p[i]))
      neg += p[i], ++nn;
    else
      pos += p[i], ++np;
  auto mp = np > 0 ? static_cast<float>(pos / np) : 0.0f;
  auto mn = nn > 0 ? static_cast<float>(neg / nn) : 0.0f;
  put_f32(out, mp);
  put_f32(out, mn);
  std::vector<std::uint32_t> all(n);
  std::iota(all.begin(), all.end(), 0u);
  put_signs(out, p, all);
  for (std::size_t i = 0; i < n; ++i)
    sent[i] = std::signbit(p[i]) ? mn : mp;
}

} // namespace

compressor::compressor(compress_options opts, std::vector<segment_spec> segs)
    : opts_(opts), segments_(std::move(segs)) {
  if (opts_.bin_fc == 0 || opts_.bin_conv == 0)
    throw std::invalid_argument("adacomp: the bin length must be at least 1");
  auto ok = [](double d) { return d > 0 && d <= 1; };
  if (!ok(opts_.density_fc) || !ok(opts_.density_conv))
    throw std::invalid_argument("topk: the density must be in (0, 1]");
  std::size_t at = 0;
  for (auto& s : segments_) {
    if (s.offset != at || s.size == 0)
      throw std::invalid_argument("compressor: segments must tile the range");
    at += s.size;
  }
  residual_.assign(at, 0.0f);
  work_.resize(at);
  sent_.resize(at);
}

std::string compressor::compress(const float* g, std::size_t n) {
  if (n != residual_.size())
    throw std::invalid_argument("compressor: " + std::to_string(n)
                                + " values for a range of "
                                + std::to_string(residual_.size()));
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(g[i]))
      throw std::invalid_argument("compressor: non-finite gradient value at "
                                  + std::to_string(i));
  for (std::size_t i = 0; i < n; ++i)
    work_[i] = residual_[i] + g[i];
  std::string out;
  out.push_back(static_cast<char>(opts_.method));
  put_u32(out, static_cast<std::uint32_t>(segments_.size()));
  for (auto& s : segments_) {
    auto before = out.size();
    put_u32(out, static_cast<std::uint32_t>(s.size));
    const float* p = work_.data() + s.offset;
    float* sent = sent_.data() + s.offset;
    bool conv = s.kind == layer_kind::conv;
    switch (opts_.method) {
    case codec::adacomp:
      adacomp(out, p, g + s.offset, sent, s.size,
              conv ? opts_.bin_conv : opts_.bin_fc);
      break;
    case codec::topk:
      topk(out, p, sent, s.size, conv ? opts_.density_conv : opts_.density_fc);
      break;
    case codec::onebit:
      onebit(out, p, sent, s.size);
      break;
    case codec::none:
      throw std::invalid_argument("compressor: no codec chosen");
    }
    auto k = static_cast<std::size_t>(s.kind);
    stats_.dense_bytes[k] += 4 * s.size;
    stats_.packed_bytes[k] += out.size() - before;
  }
  // The header counts toward the first segment's kind.
  if (!segments_.empty())
    stats_.packed_bytes[static_cast<std::size_t>(segments_[0].kind)] += 5;
  for (std::size_t i = 0; i < n; ++i)
    residual_[i] = work_[i] - sent_[i];
  return out;
}

void compressor::reset_residual() noexcept {
  std::fill(residual_.begin(), residual_.end(), 0.0f);
}

double compressor::residual_norm() const noexcept {
  double s = 0;
  for (auto v : residual_)
    s += static_cast<double>(v) * v;
  return std::sqrt(s);
}

void decompress(const std::string& packed, float* out, std::size_t n) {
  reader in{packed};
  auto method = static_cast<codec>(in.u8());
  if (method != codec::adacomp && method != codec::topk
      && method != codec::onebit)
    throw std::invalid_argument("compressed block: unknown codec "
                                + std::to_string(static_cast<int>(method)));
  auto segments = in.u32();
  if (segments > n)
    throw std::invalid_argument("compressed block: more segments than values");
  std::fill(out, out + n, 0.0f);
  std::size_t at = 0;
  for (std::uint32_t s = 0; s < segments; ++s) {
    auto len = in.u32();
    if (len > n - at)
      throw std::invalid_argument("compressed block: segments exceed the "
                                  + std::to_string(n) + " values");
    float* seg = out + at;
    auto read_indices = [&](std::uint32_t count) {
      if (count > len)
        throw std::invalid_argument("compressed block: more entries than "
                                    "the segment holds");
      std::vector<std::uint32_t> idx(count);
      std::uint64_t prev = 0;
      for (std::uint32_t i = 0; i < count; ++i) {
        std::uint64_t v = in.varint();
        prev = i == 0 ? v : prev + v + 1;
        if (prev >= len)
          throw std::invalid_argument("compressed block: index out of range");
        idx[i] = static_cast<std::uint32_t>(prev);
      }
      return idx;
    };
    if (method == codec::adacomp) {
      auto scale = in.f32();
      auto idx = read_indices(in.u32());
      auto base = in.signs(idx.size());
      for (std::size_t i = 0; i < idx.size(); ++i)
        seg[idx[i]] = in.sign(base, i) ? -scale : scale;
    } else if (method == codec::topk) {
      auto idx = read_indices(in.u32());
      for (auto i : idx)
        seg[i] = in.f32();
    } else {
      auto mp = in.f32(), mn = in.f32();
      auto base = in.signs(len);
      for (std::uint32_t i = 0; i < len; ++i)
        seg[i] = in.sign(base, i) ? mn : mp;
    }
    at += len;
  }
  if (at != n)
    throw std::invalid_argument("compressed block: " + std::to_string(at)
                                + " values for a range of "
                                + std::to_string(n));
  if (!in.done())
    throw std::invalid_argument("compressed block: trailing bytes");
}

} // namespace troupe::optim
