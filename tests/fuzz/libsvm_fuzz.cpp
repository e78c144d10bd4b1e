// A libsvm text file (optim/libsvm_reader.cpp, read_libsvm). The first byte
// gives the dimension (1..64; an inferred dimension lets a 16-byte file ask
// for a dense matrix at the reader's limit, libsvm_max_elements = 1 GiB,
// which tests/optim/libsvm_reader_test covers and which would only slow
// the target down). Contract: the file is either a data
// set (one column per example, each label or target per column, classes
// numbered 0..C-1, finite features) or refused with a data_error that starts
// with the file's path; nothing else escapes.

#include <cmath>
#include <string>

#include "optim/dataset.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace troupe::optim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  if (size == 0)
    return 0;
  static troupe::fuzz::scratch_file file{".svm"};
  file.write(data + 1, size - 1);
  auto dim = static_cast<std::size_t>(1 + data[0] % 64);
  dataset d;
  try {
    d = read_libsvm(file.path(), dim);
  } catch (const data_error& e) {
    FUZZ_CHECK(std::string{e.what()}.rfind(file.path(), 0) == 0,
               "a data_error does not start with the file's path");
    return 0;
  }
  FUZZ_CHECK(d.size() > 0, "an empty data set accepted");
  FUZZ_CHECK(static_cast<std::size_t>(d.x.rows()) == dim,
             "rows differ from the dimension asked for");
  FUZZ_CHECK(d.labels.size() == d.size() || d.targets.size() == d.size(),
             "labels or targets do not match the examples");
  for (auto label : d.labels)
    FUZZ_CHECK(label >= 0 && label < d.classes, "a label out of range");
  FUZZ_CHECK(d.x.allFinite(), "a non-finite feature accepted");
  for (auto t : d.targets)
    FUZZ_CHECK(std::isfinite(t), "a non-finite target accepted");
  return 0;
}
