#include "optim/state_file.hpp"

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "optim/quote.hpp"

namespace troupe::optim {

namespace {

/// Whether this machine stores integers little-endian (the file's order),
/// so that blocks are copied as they are.
bool little_endian() noexcept {
  std::uint32_t one = 1;
  unsigned char first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

/// The little-endian bytes of n values of 4 or 8 bytes each.
template <class U, class T>
std::string le_bytes(const T* v, std::size_t n) {
  static_assert(sizeof(U) == sizeof(T));
  std::string out(n * sizeof(T), '\0');
  if (n == 0)
    return out;
  if (little_endian()) {
    std::memcpy(out.data(), v, n * sizeof(T));
    return out;
  }
  auto* p = out.data();
  for (std::size_t i = 0; i < n; ++i) {
    U u;
    std::memcpy(&u, v + i, sizeof(T));
    for (std::size_t b = 0; b < sizeof(T); ++b)
      *p++ = static_cast<char>((u >> (8 * b)) & 0xff);
  }
  return out;
}

/// Reads n little-endian values of 4 or 8 bytes each from `p` into `out`.
template <class U, class T>
void from_le(const char* p, T* out, std::size_t n) {
  static_assert(sizeof(U) == sizeof(T));
  if (n == 0)
    return;
  if (little_endian()) {
    std::memcpy(out, p, n * sizeof(T));
    return;
  }
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i, b += sizeof(T)) {
    U u = 0;
    for (std::size_t k = sizeof(T); k-- > 0;)
      u = static_cast<U>((u << 8) | b[k]);
    std::memcpy(out + i, &u, sizeof(T));
  }
}

std::string count_text(std::uint64_t n) {
  return std::to_string(n) + (n == 1 ? " value" : " values");
}

} // namespace

std::string exact_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", x);
  return buf;
}

// -- state_writer -------------------------------------------------------------

namespace {

void add(std::vector<raw_tensor>& tensors,
         std::unordered_map<std::string, std::size_t>& index,
         const std::string& name, const char* dtype, std::size_t n,
         std::string bytes) {
  if (name == "__metadata__" || !index.emplace(name, tensors.size()).second)
    throw std::invalid_argument("state_writer: tensor name " + quote(name)
                                + " taken");
  tensors.push_back({name, dtype, {n}, std::move(bytes)});
}

} // namespace

void state_writer::put(const std::string& name, const float* v, std::size_t n) {
  add(tensors_, index_, name, "F32", n, le_bytes<std::uint32_t>(v, n));
}

void state_writer::put(const std::string& name, const double* v,
                       std::size_t n) {
  add(tensors_, index_, name, "F64", n, le_bytes<std::uint64_t>(v, n));
}

void state_writer::put(const std::string& name, const std::uint64_t* v,
                       std::size_t n) {
  add(tensors_, index_, name, "U64", n, le_bytes<std::uint64_t>(v, n));
}

void state_writer::put_u64(const std::string& name, std::uint64_t v) {
  put(name, &v, 1);
}

void state_writer::put_f64(const std::string& name, double v) {
  put(name, &v, 1);
}

void state_writer::meta(const std::string& key, std::string value) {
  if (!meta_.emplace(key, std::move(value)).second)
    throw std::invalid_argument("state_writer: metadata key " + quote(key)
                                + " taken");
}

std::string state_writer::encode() const {
  return encode_safetensors(tensors_, meta_);
}

// -- state_reader -------------------------------------------------------------

state_reader::state_reader(std::string bytes, std::string file)
    : bytes_(std::move(bytes)), file_(std::move(file)) {
  header_ = parse_safetensors(bytes_, file_, {"F32", "F64", "U64", "I64"});
  for (std::size_t i = 0; i < header_.tensors.size(); ++i)
    index_.emplace(header_.tensors[i].name, i);
}

data_error state_reader::error(const std::string& name,
                               const std::string& what) const {
  return data_error(file_ + ": tensor " + quote(name) + ": " + what);
}

bool state_reader::has(const std::string& name) const {
  return index_.count(name) > 0;
}

const tensor_entry& state_reader::entry(const std::string& name,
                                        const char* dtype) const {
  auto i = index_.find(name);
  if (i == index_.end())
    throw data_error(file_ + ": no tensor " + quote(name));
  const auto& t = header_.tensors[i->second];
  if (t.dtype != dtype)
    throw error(name, "dtype " + t.dtype + ", expected " + dtype);
  return t;
}

std::vector<float> state_reader::f32(const std::string& name) const {
  const auto& t = entry(name, "F32");
  std::vector<float> out((t.end - t.begin) / 4);
  from_le<std::uint32_t>(bytes_.data() + header_.data_start + t.begin,
                         out.data(), out.size());
  return out;
}

void state_reader::f32(const std::string& name, float* out,
                       std::size_t n) const {
  const auto& t = entry(name, "F32");
  auto have = (t.end - t.begin) / 4;
  if (have != n)
    throw data_error(file_ + ": tensor " + quote(name) + " has "
                     + count_text(have) + ", expected " + std::to_string(n));
  from_le<std::uint32_t>(bytes_.data() + header_.data_start + t.begin, out, n);
}

std::vector<double> state_reader::f64(const std::string& name) const {
  const auto& t = entry(name, "F64");
  std::vector<double> out((t.end - t.begin) / 8);
  from_le<std::uint64_t>(bytes_.data() + header_.data_start + t.begin,
                         out.data(), out.size());
  return out;
}

void state_reader::f64(const std::string& name, double* out,
                       std::size_t n) const {
  const auto& t = entry(name, "F64");
  auto have = (t.end - t.begin) / 8;
  if (have != n)
    throw data_error(file_ + ": tensor " + quote(name) + " has "
                     + count_text(have) + ", expected " + std::to_string(n));
  from_le<std::uint64_t>(bytes_.data() + header_.data_start + t.begin, out, n);
}

std::vector<std::uint64_t> state_reader::u64(const std::string& name) const {
  const auto& t = entry(name, "U64");
  std::vector<std::uint64_t> out((t.end - t.begin) / 8);
  from_le<std::uint64_t>(bytes_.data() + header_.data_start + t.begin,
                         out.data(), out.size());
  return out;
}

std::vector<std::uint64_t> state_reader::u64(const std::string& name,
                                             std::size_t n) const {
  auto v = u64(name);
  if (v.size() != n)
    throw data_error(file_ + ": tensor " + quote(name) + " has "
                     + count_text(v.size()) + ", expected "
                     + std::to_string(n));
  return v;
}

std::uint64_t state_reader::u64_scalar(const std::string& name) const {
  return u64(name, 1)[0];
}

double state_reader::f64_scalar(const std::string& name) const {
  double v;
  f64(name, &v, 1);
  return v;
}

std::string state_reader::meta(const std::string& key) const {
  auto i = header_.metadata.find(key);
  if (i == header_.metadata.end())
    throw data_error(file_ + ": no metadata " + quote(key));
  return i->second;
}

void state_reader::expect_meta(const std::string& key,
                               const std::string& expected) const {
  auto value = meta(key);
  if (value != expected)
    throw data_error(file_ + ": " + quote(key) + " is " + quote(value)
                     + " in the file, " + quote(expected) + " here");
}

void state_reader::expect_u64(const std::string& name,
                              std::uint64_t expected) const {
  auto value = u64_scalar(name);
  if (value != expected)
    throw data_error(file_ + ": tensor " + quote(name) + " is "
                     + std::to_string(value) + " in the file, "
                     + std::to_string(expected) + " here");
}

} // namespace troupe::optim
