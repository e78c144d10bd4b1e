// read_idx and load_mnist_dir of optim/dataset.hpp.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <vector>

#include "optim/dataset.hpp"
#include "optim/detail/gz_file.hpp"

namespace troupe::optim {

namespace {

constexpr std::uint32_t images_magic = 0x00000803;
constexpr std::uint32_t labels_magic = 0x00000801;

/// Largest number of elements accepted from an IDX header.
constexpr std::uint64_t max_elements = (std::uint64_t{1} << 31) - 1;

/// Payload bytes per gzread call: large enough for zlib to inflate straight
/// into our buffer, small enough to stay in cache for the conversion.
constexpr std::size_t chunk_bytes = std::size_t{256} << 10;

/// Deflate never compresses by more than this factor.
constexpr std::uint64_t max_deflate_ratio = 1032;

std::string hex32(std::uint32_t x) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08X", x);
  return buf;
}

std::uint32_t big_endian(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16)
         | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

/// The dimensions of an IDX file after its magic number was checked.
std::vector<std::uint32_t> read_header(detail::gz_file& f, std::uint32_t magic,
                                       const char* what) {
  auto rank = static_cast<std::size_t>(magic & 0xFF);
  auto header_bytes = 4 + 4 * rank;
  unsigned char buf[4 + 4 * 255];
  auto got = f.read(buf, header_bytes);
  if (got >= 4 && big_endian(buf) != magic)
    f.fail("wrong magic number " + hex32(big_endian(buf)) + ", expected "
           + hex32(magic) + " (" + what + ")");
  if (got < header_bytes)
    f.fail("truncated header: expected " + std::to_string(header_bytes)
           + " bytes, got " + std::to_string(got));
  std::vector<std::uint32_t> dims(rank);
  std::uint64_t total = 1;
  for (std::size_t i = 0; i < rank; ++i) {
    dims[i] = big_endian(buf + 4 + 4 * i);
    if (dims[i] == 0)
      f.fail("dimension " + std::to_string(i) + " of " + what
             + " is zero in the header");
    total *= dims[i]; // < 2^63: the previous total is at most 2^31
    if (total > max_elements)
      f.fail("header claims more than 2^31 - 1 elements (dimension "
             + std::to_string(i) + " is " + std::to_string(dims[i])
             + "); refusing to allocate");
  }
  return dims;
}

/// Asks Linux to back a large fresh buffer with transparent huge pages, so
/// that filling Fashion-MNIST's 188 MB matrix takes about a hundred page
/// faults instead of 46,000 (which dominate the load time in a VM). Only
/// advice: ignored where unsupported.
void advise_huge_pages(void* data, std::uint64_t bytes) {
#ifdef MADV_HUGEPAGE
  constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
  auto first = reinterpret_cast<std::uintptr_t>(data);
  auto begin = (first + huge - 1) & ~(huge - 1);
  auto end = (first + bytes) & ~(huge - 1);
  if (end > begin)
    ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#endif
}

[[noreturn]] void truncated(const detail::gz_file& f, std::uint64_t expected,
                            std::uint64_t got) {
  f.fail("truncated data: expected " + std::to_string(expected)
         + " bytes after the header, got " + std::to_string(got));
}

[[noreturn]] void trailing(const detail::gz_file& f, std::uint64_t expected) {
  f.fail("trailing data: expected exactly " + std::to_string(expected)
         + " bytes after the header, found more");
}

/// Makes sure that exactly `expected` payload bytes follow the header before
/// anything that large is allocated: from the size on disk for a plain file,
/// from the gzip trailer (bounded by deflate's largest ratio) for a gzip
/// file, and otherwise by inflating once and counting.
void check_payload_size(detail::gz_file& f, std::uint64_t expected,
                        std::uint64_t header_bytes) {
  if (f.plain()) {
    auto available = f.disk_size() - header_bytes;
    if (available < expected)
      truncated(f, expected, available);
    if (available > expected)
      trailing(f, expected);
    return;
  }
  auto total = header_bytes + expected;
  if (f.trailer_size() == static_cast<std::uint32_t>(total)
      && total <= max_deflate_ratio * f.disk_size())
    return;
  std::unique_ptr<unsigned char[]> scratch{new unsigned char[chunk_bytes]};
  std::uint64_t got = 0;
  for (;;) {
    auto k = f.read(scratch.get(), chunk_bytes);
    got += k;
    if (k < chunk_bytes || got > expected)
      break;
  }
  if (got < expected)
    truncated(f, expected, got);
  if (got > expected)
    trailing(f, expected);
  f.rewind();
  f.read(scratch.get(), static_cast<std::size_t>(header_bytes));
}

/// Passes the `expected` payload bytes to `sink(bytes, count, offset)` chunk
/// by chunk, then checks that nothing follows.
template <class Sink>
void read_payload(detail::gz_file& f, std::uint64_t expected, Sink&& sink) {
  std::unique_ptr<unsigned char[]> chunk{new unsigned char[chunk_bytes]};
  std::uint64_t got = 0;
  while (got < expected) {
    auto want = static_cast<std::size_t>(
        std::min<std::uint64_t>(chunk_bytes, expected - got));
    auto k = f.read(chunk.get(), want);
    sink(chunk.get(), k, static_cast<std::size_t>(got));
    got += k;
    if (k < want)
      truncated(f, expected, got);
  }
  unsigned char extra = 0;
  if (f.read(&extra, 1) != 0)
    trailing(f, expected);
}

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string find_file(const std::string& dir, const std::string& name) {
  auto path = dir + "/" + name;
  if (is_file(path))
    return path;
  if (is_file(path + ".gz"))
    return path + ".gz";
  throw data_error(path + "[.gz]: missing (looked for " + name + " and " + name
                   + ".gz in " + dir + ")");
}

std::string base_name(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  auto slash = dir.find_last_of('/');
  return slash == std::string::npos ? dir : dir.substr(slash + 1);
}

/// Refuses inferred classes that some training label skips: the first label
/// above the smallest class without an example is out of range.
void check_inferred_classes(const std::string& path, const dataset& d) {
  std::vector<std::size_t> count(static_cast<std::size_t>(d.classes), 0);
  for (auto l : d.labels)
    ++count[static_cast<std::size_t>(l)];
  auto gap = std::find(count.begin(), count.end(), 0) - count.begin();
  if (gap == static_cast<std::ptrdiff_t>(count.size()))
    return;
  auto bad = std::find_if(d.labels.begin(), d.labels.end(),
                          [&](std::int32_t l) { return l > gap; });
  throw data_error(
      path + ": label " + std::to_string(*bad) + " at index "
      + std::to_string(bad - d.labels.begin())
      + " is out of range: no training label is " + std::to_string(gap)
      + (gap == 0 ? " (classes count from 0)"
                  : ", so the labels must be < " + std::to_string(gap)
                        + " (number of classes)"));
}

} // namespace

dataset read_idx(const std::string& images_path, const std::string& labels_path,
                 int classes) {
  dataset result;
  result.name = images_path;
  // Labels first: they are small, so count mismatches surface cheaply.
  detail::gz_file lf{labels_path};
  auto n = read_header(lf, labels_magic, "idx1 ubyte labels")[0];
  check_payload_size(lf, n, 8);
  result.labels.resize(n);
  int max_label = 0;
  read_payload(lf, n,
               [&](const unsigned char* in, std::size_t k, std::size_t at) {
                 auto* out = result.labels.data() + at;
                 for (std::size_t i = 0; i < k; ++i) {
                   out[i] = in[i];
                   max_label = std::max(max_label, static_cast<int>(in[i]));
                 }
               });
  if (classes > 0 && max_label >= classes) {
    auto bad = std::find_if(result.labels.begin(), result.labels.end(),
                            [&](std::int32_t l) { return l >= classes; });
    auto at = bad - result.labels.begin();
    throw data_error(labels_path + ": label " + std::to_string(*bad)
                     + " at index " + std::to_string(at)
                     + " is out of range: labels must be < "
                     + std::to_string(classes) + " (number of classes)");
  }
  result.classes = classes > 0 ? classes : max_label + 1;
  // Images: each is stored row-major and contiguous, exactly one column of x.
  detail::gz_file xf{images_path};
  auto dims = read_header(xf, images_magic, "idx3 ubyte images");
  if (dims[0] != n)
    throw data_error(images_path + ": mismatched counts: " + images_path
                     + " has " + std::to_string(dims[0]) + " images but "
                     + labels_path + " has " + std::to_string(n) + " labels");
  auto features = static_cast<Eigen::Index>(dims[1]) * dims[2];
  auto pixels = static_cast<std::uint64_t>(features) * n;
  check_payload_size(xf, pixels, 16);
  result.x.resize(features, static_cast<Eigen::Index>(n));
  advise_huge_pages(result.x.data(), pixels * sizeof(float));
  float* x = result.x.data();
  read_payload(xf, pixels,
               [x](const unsigned char* in, std::size_t k, std::size_t at) {
                 float* out = x + at;
                 for (std::size_t i = 0; i < k; ++i)
                   out[i] = static_cast<float>(in[i]) / 255.0f;
               });
  result.sample_shape
      = shape{1, static_cast<int>(dims[1]), static_cast<int>(dims[2])};
  return result;
}

train_test load_mnist_dir(const std::string& dir, int classes) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw data_error(dir + ": missing directory (expected the "
                     + "{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] "
                     + "files of (Fashion-)MNIST)");
  auto train_images = find_file(dir, "train-images-idx3-ubyte");
  auto train_labels = find_file(dir, "train-labels-idx1-ubyte");
  auto test_images = find_file(dir, "t10k-images-idx3-ubyte");
  auto test_labels = find_file(dir, "t10k-labels-idx1-ubyte");
  train_test result;
  result.train = read_idx(train_images, train_labels, classes);
  if (classes == 0)
    check_inferred_classes(train_labels, result.train);
  result.test = read_idx(test_images, test_labels, result.train.classes);
  auto& a = result.train.sample_shape;
  auto& b = result.test.sample_shape;
  if (!(a == b))
    throw data_error(test_images + ": images are " + std::to_string(b.h) + "x"
                     + std::to_string(b.w) + " but the training images in "
                     + train_images + " are " + std::to_string(a.h) + "x"
                     + std::to_string(a.w));
  auto name = base_name(dir);
  result.train.name = name + "/train";
  result.test.name = name + "/test";
  return result;
}

} // namespace troupe::optim
