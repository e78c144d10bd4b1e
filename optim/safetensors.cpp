#include "optim/safetensors.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "optim/dataset.hpp"
#include "optim/quote.hpp"

namespace troupe::optim {

namespace {

/// Nesting deeper than a header has (object, entry, shape) is refused
/// while parsing, before it is built.
constexpr int max_depth = 4;

struct too_deep {};

std::uint64_t le64(const char* p) {
  std::uint64_t x = 0;
  for (int i = 7; i >= 0; --i)
    x = (x << 8) | static_cast<unsigned char>(p[i]);
  return x;
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    out += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  return out + "]";
}

/// An unsigned integer of the header, or a refusal naming `what`.
std::uint64_t count_of(const nlohmann::json& v, const std::string& what,
                       const std::string& prefix) {
  if (!v.is_number_unsigned()
      && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
    throw data_error(prefix + what + " is " + sanitize(v.dump())
                     + ", not a non-negative integer");
  return v.get<std::uint64_t>();
}

/// "F32", "F32 or F64", "F32, F64 or U64".
std::string dtype_list(const std::vector<std::string>& dtypes) {
  std::string out;
  for (std::size_t i = 0; i < dtypes.size(); ++i)
    out += (i == 0 ? "" : i + 1 == dtypes.size() ? " or " : ", ") + dtypes[i];
  return out;
}

tensor_entry parse_entry(const std::string& name, const nlohmann::json& v,
                         const std::string& file,
                         const std::vector<std::string>& dtypes) {
  auto prefix = file + ": tensor " + quote(name) + ": ";
  if (!v.is_object())
    throw data_error(prefix
                     + "not an object with dtype, shape and "
                       "data_offsets");
  tensor_entry t;
  t.name = name;
  auto field = [&](const char* key) -> const nlohmann::json& {
    auto it = v.find(key);
    if (it == v.end())
      throw data_error(prefix + "no " + key);
    return *it;
  };
  const auto& dtype = field("dtype");
  if (!dtype.is_string())
    throw data_error(prefix + "dtype is not a string");
  t.dtype = dtype.get<std::string>();
  if (std::find(dtypes.begin(), dtypes.end(), t.dtype) == dtypes.end())
    throw data_error(prefix + "dtype " + quote(t.dtype) + "; troupe reads "
                     + dtype_list(dtypes) + " only");
  std::uint64_t size = dtype_size(t.dtype);
  const auto& shape = field("shape");
  if (!shape.is_array())
    throw data_error(prefix + "shape is not an array");
  for (const auto& d : shape)
    t.shape.push_back(count_of(d, "a dimension", prefix));
  const auto& offsets = field("data_offsets");
  if (!offsets.is_array() || offsets.size() != 2)
    throw data_error(prefix + "data_offsets is not a pair [begin, end]");
  t.begin = count_of(offsets[0], "data_offsets[0]", prefix);
  t.end = count_of(offsets[1], "data_offsets[1]", prefix);
  if (t.end < t.begin)
    throw data_error(prefix + "data_offsets [" + std::to_string(t.begin) + ", "
                     + std::to_string(t.end) + "] end before they begin");
  std::uint64_t n = 0;
  try {
    n = element_count(t.shape);
  } catch (const std::overflow_error&) {
    throw data_error(prefix + "shape " + shape_text(t.shape)
                     + " has more than 2^64 elements");
  }
  auto too_big = n > std::numeric_limits<std::uint64_t>::max() / size;
  if (too_big || t.end - t.begin != n * size)
    throw data_error(
        prefix + "shape " + shape_text(t.shape) + " needs "
        + (too_big ? std::string{"more than 2^64"} : std::to_string(n * size))
        + " bytes of " + t.dtype + ", data_offsets give "
        + std::to_string(t.end - t.begin));
  return t;
}

} // namespace

std::size_t dtype_size(std::string_view dtype) noexcept {
  if (dtype == "F32")
    return 4;
  if (dtype == "F64" || dtype == "U64" || dtype == "I64")
    return 8;
  return 0;
}

std::uint64_t element_count(const std::vector<std::uint64_t>& shape) {
  std::uint64_t n = 1;
  for (auto d : shape) {
    if (d != 0 && n > std::numeric_limits<std::uint64_t>::max() / d)
      throw std::overflow_error("element_count: more than 2^64");
    n *= d;
  }
  return n;
}

safetensors_header parse_safetensors(std::string_view bytes,
                                     const std::string& file,
                                     const std::vector<std::string>& dtypes) {
  for (const auto& d : dtypes)
    if (dtype_size(d) == 0)
      throw std::invalid_argument("parse_safetensors: unknown dtype "
                                  + quote(d));
  if (bytes.size() < 8)
    throw data_error(file + ": truncated: " + std::to_string(bytes.size())
                     + " bytes, a safetensors file starts with an 8-byte "
                       "header length");
  auto n = le64(bytes.data());
  if (n > max_safetensors_header)
    throw data_error(file + ": header length " + std::to_string(n)
                     + " exceeds the limit of "
                     + std::to_string(max_safetensors_header) + " bytes");
  if (n > bytes.size() - 8)
    throw data_error(file + ": truncated: the header length "
                     + std::to_string(n) + " runs past the end of the file ("
                     + std::to_string(bytes.size()) + " bytes)");
  auto text = bytes.substr(8, static_cast<std::size_t>(n));
  if (text.empty() || text[0] != '{')
    throw data_error(file + ": the header does not begin with '{'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(
        text.begin(), text.end(),
        [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
          if (depth > max_depth)
            throw too_deep{};
          return true;
        });
  } catch (const too_deep&) {
    throw data_error(file + ": invalid JSON header: nested deeper than "
                     + std::to_string(max_depth) + " levels");
  } catch (const nlohmann::json::exception& e) {
    throw data_error(file + ": invalid JSON header: " + sanitize(e.what()));
  }
  if (!j.is_object())
    throw data_error(file + ": the header is not a JSON object");
  safetensors_header h;
  h.data_start = 8 + n;
  for (const auto& [key, value] : j.items()) {
    if (key == "__metadata__") {
      if (!value.is_object())
        throw data_error(file + ": __metadata__ is not an object");
      for (const auto& [k, v] : value.items()) {
        if (!v.is_string())
          throw data_error(file + ": metadata " + quote(k) + " is "
                           + sanitize(v.dump()) + ", not a string");
        h.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    h.tensors.push_back(parse_entry(key, value, file, dtypes));
  }
  std::stable_sort(h.tensors.begin(), h.tensors.end(),
                   [](const tensor_entry& x, const tensor_entry& y) {
                     return x.begin != y.begin ? x.begin < y.begin
                                               : x.end < y.end;
                   });
  auto data_size = bytes.size() - h.data_start;
  std::uint64_t at = 0;
  for (const auto& t : h.tensors) {
    auto range
        = "[" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "]";
    if (t.begin < at)
      throw data_error(file + ": tensor " + quote(t.name) + ": data_offsets "
                       + range + " overlap the previous tensor's data");
    if (t.begin > at)
      throw data_error(file + ": tensor " + quote(t.name) + ": data_offsets "
                       + range + " leave bytes [" + std::to_string(at) + ", "
                       + std::to_string(t.begin) + ") of no tensor");
    if (t.end > data_size)
      throw data_error(file + ": truncated: tensor " + quote(t.name)
                       + " ends at data byte " + std::to_string(t.end)
                       + ", the file holds " + std::to_string(data_size));
    at = t.end;
  }
  if (at != data_size)
    throw data_error(file + ": " + std::to_string(data_size - at)
                     + " bytes after the last tensor's data");
  return h;
}

void read_f32(std::string_view bytes, const safetensors_header& h,
              const tensor_entry& t, float* out) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data())
                  + h.data_start + t.begin;
  auto n = (t.end - t.begin) / 4;
  for (std::uint64_t i = 0; i < n; ++i, p += 4) {
    std::uint32_t u = std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8)
                      | (std::uint32_t{p[2]} << 16)
                      | (std::uint32_t{p[3]} << 24);
    std::memcpy(out + i, &u, 4);
  }
}

std::string
encode_safetensors(const std::vector<tensor_data>& tensors,
                   const std::map<std::string, std::string>& metadata) {
  std::vector<raw_tensor> raw;
  raw.reserve(tensors.size());
  for (const auto& t : tensors) {
    if (element_count(t.shape) != t.values.size())
      throw std::invalid_argument("encode_safetensors: tensor " + quote(t.name)
                                  + " has " + std::to_string(t.values.size())
                                  + " values for shape " + shape_text(t.shape));
    raw_tensor r{t.name, "F32", t.shape,
                 std::string(4 * t.values.size(), '\0')};
    auto* out = r.bytes.data();
    for (float x : t.values) {
      std::uint32_t u;
      std::memcpy(&u, &x, 4);
      for (int i = 0; i < 4; ++i)
        *out++ = static_cast<char>((u >> (8 * i)) & 0xff);
    }
    raw.push_back(std::move(r));
  }
  return encode_safetensors(raw, metadata);
}

std::string
encode_safetensors(const std::vector<raw_tensor>& tensors,
                   const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  std::set<std::string> names;
  std::uint64_t at = 0;
  for (const auto& t : tensors) {
    if (t.name == "__metadata__" || !names.insert(t.name).second)
      throw std::invalid_argument("encode_safetensors: tensor name "
                                  + quote(t.name) + " taken");
    auto size = dtype_size(t.dtype);
    if (size == 0)
      throw std::invalid_argument("encode_safetensors: tensor " + quote(t.name)
                                  + " has the unknown dtype " + quote(t.dtype));
    if (t.bytes.size() % size != 0
        || element_count(t.shape) != t.bytes.size() / size)
      throw std::invalid_argument("encode_safetensors: tensor " + quote(t.name)
                                  + " has " + std::to_string(t.bytes.size())
                                  + " bytes for shape " + shape_text(t.shape)
                                  + " of " + t.dtype);
    auto bytes = static_cast<std::uint64_t>(t.bytes.size());
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  auto text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + text.size() + at);
  auto n = static_cast<std::uint64_t>(text.size());
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += text;
  for (const auto& t : tensors)
    out += t.bytes;
  return out;
}

} // namespace troupe::optim
