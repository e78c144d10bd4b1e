// read_csv: a header row, features and a label column picked by name or by
// the default rule, integer labels as classes and targets, gzip, and every
// refusal naming the file, the line and the problem. Also the per-feature
// standardization CSV data gets.

#include <cmath>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "data_files.hpp"
#include "optim/dataset.hpp"
#include "optim/rng.hpp"

using namespace troupe::optim;
using namespace troupe::test;

TEST_CASE("read_csv reads features, integer labels as classes and targets") {
  temp_dir tmp;
  // CRLF, spaces around fields, a quoted name, a blank line, the label in
  // the middle, no final newline.
  auto path = write_text(tmp.file("a.csv"), " width , label,\"mean, area\"\r\n"
                                            "0.5, 7 ,1e3\r\n"
                                            "\r\n"
                                            "-2,3,  4 \r\n"
                                            "1.25,5,-0\r\n"
                                            "0,7,8");
  auto data = read_csv(path);
  REQUIRE(data.size() == 4);
  CHECK(data.name == path);
  CHECK(data.sample_shape == shape{2, 1, 1});
  CHECK(data.x.rows() == 2);
  CHECK(data.x(0, 0) == 0.5f);
  CHECK(data.x(1, 0) == 1000.0f);
  CHECK(data.x(0, 1) == -2.0f);
  CHECK(data.x(1, 1) == 4.0f);
  CHECK(data.x(1, 3) == 8.0f);
  CHECK(data.classes == 3);
  CHECK(data.labels == std::vector<std::int32_t>{2, 0, 1, 2});
  CHECK(data.targets == std::vector<float>{7, 3, 5, 7});
  // A row count given in advance (right, short, far too long) only sizes
  // the buffers.
  for (std::size_t rows : {4, 1, 1000000}) {
    auto hinted = read_csv(path, "", rows);
    CHECK(hinted.x == data.x);
    CHECK(hinted.labels == data.labels);
  }
  // The same text gzip-compressed, behind a byte order mark.
  std::string text = "\xEF\xBB\xBF"
                     "a,b,label\n1,2,-1\n3,4,1\n";
  auto gz = read_csv(
      write_gz(tmp.file("b.csv.gz"), bytes(text.begin(), text.end())));
  REQUIRE(gz.size() == 2);
  CHECK(gz.x(1, 1) == 4.0f);
  CHECK(gz.labels == std::vector<std::int32_t>{0, 1});
  CHECK(gz.targets == std::vector<float>{-1, 1});
}

TEST_CASE("read_csv's label column: named, label, target, else the last") {
  temp_dir tmp;
  auto path = write_text(tmp.file("c.csv"), "target,x,label,y\n"
                                            "0.5,1,2,3\n"
                                            "1.5,4,5,6\n");
  // "label" before "target".
  auto by_default = read_csv(path);
  CHECK(by_default.labels == std::vector<std::int32_t>{0, 1});
  CHECK(by_default.x.col(0) == (vector<float>(3) << 0.5f, 1, 3).finished());
  // Named: a non-integer column is a regression target only.
  auto named = read_csv(path, "target");
  CHECK(named.classes == 0);
  CHECK(named.labels.empty());
  CHECK(named.targets == std::vector<float>{0.5f, 1.5f});
  CHECK(named.x.col(1) == (vector<float>(3) << 4, 5, 6).finished());
  auto target = read_csv(write_text(tmp.file("d.csv"), "a,target,b\n"
                                                       "1,10,2\n"
                                                       "3,20,4\n"));
  CHECK(target.targets == std::vector<float>{10, 20});
  CHECK(target.x.col(0) == (vector<float>(2) << 1, 2).finished());
  auto last = read_csv(write_text(tmp.file("e.csv"), "a,b,class\n"
                                                     "1,2,1\n"
                                                     "3,4,0\n"));
  CHECK(last.labels == std::vector<std::int32_t>{1, 0});
  CHECK(last.x.col(1) == (vector<float>(2) << 3, 4).finished());
  auto missing = error_of([&] { read_csv(path, "Label"); });
  check_message(missing, path,
                {path
                 + ":1: no label column 'Label' in the header (its "
                   "columns: 'target', 'x', 'label', 'y')"});
}

TEST_CASE("read_csv errors give the file, the line and the problem") {
  temp_dir tmp;
  struct bad_case {
    std::string text;
    const char* where;
    const char* what;
  };
  for (const auto& c : {
           bad_case{"", ":", "no header (empty file)"},
           bad_case{"\n  \n", ":", "no header (only blank lines)"},
           bad_case{"1,2,3\n4,5,6\n",
                    ":1:", "no header: the first line holds numbers"},
           bad_case{"a,b,a\n1,2,3\n",
                    ":1:", "duplicate column name 'a' (columns 1 and 3)"},
           bad_case{"a,,label\n", ":1:", "column 2 of the header has no name"},
           bad_case{"label\n1\n", ":1:", "the header names one column"},
           bad_case{"a,label\n", ":", "no examples (only a header)"},
           bad_case{"a,b,label\n1,2,0\n\n1,2\n",
                    ":4:", "2 fields, the header has 3 columns"},
           bad_case{"a,b,label\n1,2,0,9\n",
                    ":2:", "4 fields, the header has 3 columns"},
           bad_case{"a,area,label\n1,2,0\n1,big,0\n",
                    ":3:", "column 'area' holds 'big', not a number"},
           bad_case{"a,area,label\n1,,0\n", ":2:", "column 'area' is empty"},
           bad_case{"a,b,label\n1,2,yes\n",
                    ":2:", "label column 'label' holds 'yes', not a number"},
           bad_case{"a,b,label\n1,nan,0\n",
                    ":2:", "column 'b' holds 'nan': values must be finite"},
           bad_case{"a,b,label\n-inf,1,0\n",
                    ":2:", "column 'a' holds '-inf': values must be finite"},
           bad_case{"a,b,label\n1,1e39,0\n",
                    ":2:", "column 'b' holds '1e39', beyond the float range"},
           bad_case{"a,b,label\n1,1e999,0\n",
                    ":2:", "column 'b' holds '1e999', beyond the float range"},
           bad_case{"a,b,label\n1,\"2,0\n",
                    ":2:", "quoted field at byte 3 has no closing quote"},
           bad_case{"a,b,label\n1,\"2\"x,0\n",
                    ":2:", "text after the closing quote at byte 6"},
       }) {
    INFO("text: " << c.text);
    auto path = write_text(tmp.file("bad.csv"), c.text);
    check_message(error_of([&] { read_csv(path); }), path,
                  {path + c.where, c.what});
  }
  auto none = tmp.file("none.csv");
  check_message(error_of([&] { read_csv(none); }), none, {"cannot open"});
}

TEST_CASE("read_csv caps the line length and the column count") {
  temp_dir tmp;
  std::string wide = "c0";
  for (std::size_t i = 1; i <= csv_max_columns; ++i)
    wide += ",c" + std::to_string(i);
  auto path = write_text(tmp.file("wide.csv"), wide + "\n");
  check_message(error_of([&] { read_csv(path); }), path,
                {path + ":1: header: more than 65536 fields"});
  std::string long_line = "a,label\n1,";
  long_line.append(csv_max_line_bytes, '1');
  long_line += "\n";
  path = write_text(tmp.file("long.csv"), long_line);
  check_message(error_of([&] { read_csv(path); }), path,
                {path + ":2: line longer than 16777216 bytes"});
  // Exactly at the cap is fine.
  std::string at_cap = "a,label\n";
  at_cap.append(csv_max_line_bytes - 2, '0');
  at_cap += ",3\n";
  path = write_text(tmp.file("at_cap.csv"), at_cap);
  CHECK(read_csv(path).targets == std::vector<float>{3});
}

TEST_CASE("standardize_features scales each feature by the training set's") {
  const std::uint64_t seed = 11;
  std::cout << "seed " << seed << std::endl;
  rng gen{seed};
  train_test d;
  d.train.x.resize(3, 200);
  for (Eigen::Index j = 0; j < d.train.x.cols(); ++j) {
    d.train.x(0, j) = 1000.0f + 300.0f * static_cast<float>(gen.normal());
    d.train.x(1, j) = 0.1f + 0.01f * static_cast<float>(gen.normal());
    d.train.x(2, j) = 5.0f; // constant: centred only
  }
  d.test.x = d.train.x.leftCols(7);
  matrix<float> raw_test = d.test.x;
  auto s = standardize_features(d);
  REQUIRE(s.per_feature());
  REQUIRE(s.means.size() == 3);
  CHECK(s.stddevs[2] == 1.0f);
  for (Eigen::Index i = 0; i < 2; ++i) {
    auto row = d.train.x.row(i).cast<double>();
    CHECK(row.mean() == Approx(0).margin(1e-5));
    CHECK(std::sqrt(row.array().square().mean()) == Approx(1).epsilon(1e-4));
  }
  CHECK(d.train.x.row(2).isZero());
  // The test set gets the training set's map, the same floats as
  // apply_scaling gives.
  CHECK(d.test.x == d.train.x.leftCols(7));
  apply_scaling(s, raw_test);
  CHECK(raw_test == d.test.x);
  matrix<float> two_rows(2, 1);
  CHECK_THROWS_AS(apply_scaling(s, two_rows), std::invalid_argument);
}
