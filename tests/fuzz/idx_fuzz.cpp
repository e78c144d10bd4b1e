// A pair of IDX files (optim/idx_reader.cpp, read_idx), each plain or gzip.
// Input: one byte for `classes` (0: inferred), two bytes for the length of
// the images file, its bytes, then the labels file. Contract: the pair is
// either a data set (h*w features in [0, 1] per example, one label per
// example below the class count) or refused with a data_error that starts
// with the offending file's path; nothing else escapes.

#include <string>

#include "optim/dataset.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace troupe::optim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  if (size < 3)
    return 0;
  static troupe::fuzz::scratch_file images{"-images-idx3-ubyte"};
  static troupe::fuzz::scratch_file labels{"-labels-idx1-ubyte"};
  int classes = data[0] % 16;
  std::size_t split = data[1] | (std::size_t{data[2]} << 8);
  data += 3;
  size -= 3;
  if (split > size)
    split = size;
  images.write(data, split);
  labels.write(data + split, size - split);
  dataset d;
  try {
    d = read_idx(images.path(), labels.path(), classes);
  } catch (const data_error& e) {
    std::string what = e.what();
    FUZZ_CHECK(what.rfind(images.path(), 0) == 0
                   || what.rfind(labels.path(), 0) == 0,
               "a data_error does not start with a file's path");
    return 0;
  }
  FUZZ_CHECK(d.size() == d.labels.size(), "labels do not match the examples");
  FUZZ_CHECK(d.classes > 0 && (classes == 0 || d.classes == classes),
             "wrong class count");
  for (auto label : d.labels)
    FUZZ_CHECK(label >= 0 && label < d.classes, "a label out of range");
  FUZZ_CHECK(d.x.size() == 0
                 || (d.x.minCoeff() >= 0.0f && d.x.maxCoeff() <= 1.0f),
             "a pixel outside [0, 1]");
  FUZZ_CHECK(d.sample_shape.size() == static_cast<std::size_t>(d.x.rows()),
             "the sample shape does not match the features");
  return 0;
}
