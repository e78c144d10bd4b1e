// A CSV file (optim/csv_reader.cpp, read_csv). The first byte picks the
// label column: odd, the column named "b"; even, the default rule.
// Contract: the file is either a data set (one column per example, as many
// rows as the header has columns but one, finite features, a target per
// example and, when the labels are integers, a class per example numbered
// 0..C-1) or refused with a data_error that starts with the file's path;
// nothing else escapes.

#include <cmath>
#include <string>

#include "optim/dataset.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace troupe::optim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  if (size == 0)
    return 0;
  static troupe::fuzz::scratch_file file{".csv"};
  file.write(data + 1, size - 1);
  dataset d;
  try {
    d = read_csv(file.path(), (data[0] & 1) != 0 ? "b" : "");
  } catch (const data_error& e) {
    FUZZ_CHECK(std::string{e.what()}.rfind(file.path(), 0) == 0,
               "a data_error does not start with the file's path");
    return 0;
  }
  FUZZ_CHECK(d.size() > 0, "an empty data set accepted");
  FUZZ_CHECK(d.x.rows() >= 1, "a data set without features accepted");
  FUZZ_CHECK(d.sample_shape.size() == static_cast<std::size_t>(d.x.rows()),
             "the sample shape differs from the features");
  FUZZ_CHECK(d.targets.size() == d.size(), "targets do not match the examples");
  FUZZ_CHECK(d.labels.empty() ? d.classes == 0 : d.labels.size() == d.size(),
             "labels do not match the examples");
  for (auto label : d.labels)
    FUZZ_CHECK(label >= 0 && label < d.classes, "a label out of range");
  FUZZ_CHECK(d.x.allFinite(), "a non-finite feature accepted");
  for (auto t : d.targets)
    FUZZ_CHECK(std::isfinite(t), "a non-finite target accepted");
  return 0;
}
