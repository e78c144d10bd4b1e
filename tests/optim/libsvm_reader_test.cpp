#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "data_files.hpp"
#include "optim/dataset.hpp"

using namespace troupe::optim;
using namespace troupe::test;

// -- libsvm
// ---------------------------------------------------------------------

TEST_CASE("read_libsvm parses classes, regression targets and gzip") {
  temp_dir tmp;
  auto path = write_text(tmp.file("a.svm"), "# header comment\n"
                                            "+1 1:0.5 3:2\n"
                                            "-1 2:1.5   # trailing comment\n"
                                            "\n"
                                            "1 3:-1e-1\n");
  auto data = read_libsvm(path);
  REQUIRE(data.size() == 3);
  CHECK(data.x.rows() == 3);
  CHECK(data.sample_shape == shape{3, 1, 1});
  CHECK(data.classes == 2);
  CHECK(data.labels == std::vector<std::int32_t>{1, 0, 1});
  CHECK(data.targets.empty());
  CHECK(data.x(0, 0) == 0.5f);
  CHECK(data.x(1, 0) == 0.0f);
  CHECK(data.x(2, 0) == 2.0f);
  CHECK(data.x(1, 1) == 1.5f);
  CHECK(data.x(2, 2) == -0.1f);
  CHECK(read_libsvm(path, 5).x.rows() == 5);
  auto multi = read_libsvm(write_text(tmp.file("b.svm"), "7 1:1\n3 1:2\n5 2:1\n"
                                                         "7 1:0\n"));
  CHECK(multi.classes == 3);
  CHECK(multi.labels == std::vector<std::int32_t>{2, 0, 1, 2});
  auto reg = read_libsvm(write_text(tmp.file("c.svm"), "0.5 1:1\n2.25 2:1\n"));
  CHECK(reg.labels.empty());
  CHECK(reg.classes == 0);
  CHECK(reg.targets == std::vector<float>{0.5f, 2.25f});
  std::string text = "1 1:1\n0 2:2\n";
  auto gz = read_libsvm(
      write_gz(tmp.file("d.svm.gz"), bytes(text.begin(), text.end())));
  CHECK(gz.size() == 2);
  CHECK(gz.x(1, 1) == 2.0f);
}

TEST_CASE("read_libsvm errors give the file and line") {
  temp_dir tmp;
  struct bad_case {
    const char* text;
    const char* where;
    const char* what;
  };
  for (auto c : {bad_case{"1 1:0.5 foo\n", ":1:", "bad token 'foo'"},
                 bad_case{"1 1:1\n1 0:2\n", ":2:", "index 0 is invalid"},
                 bad_case{"1 1:1\n\n1 -3:2\n", ":3:", "index -3 is invalid"},
                 bad_case{"1 2:abc\n", ":1:", "non-numeric value in '2:abc'"},
                 bad_case{"1 x:1\n", ":1:", "index is not an integer"},
                 bad_case{"yes 1:1\n", ":1:", "non-numeric label 'yes'"},
                 bad_case{"1 1:nan\n", ":1:", "not finite"},
                 // Found by tests/fuzz/libsvm_fuzz.cpp: finite as doubles,
                 // infinite as the floats troupe stores.
                 bad_case{"1 1:1\n3e54 1:1\n",
                          ":2:", "label '3e54' is beyond the float range"},
                 bad_case{"1 1:1e300\n", ":1:",
                          "value in '1:1e300' is beyond the float range"}}) {
    auto path = write_text(tmp.file("bad.svm"), c.text);
    check_message(error_of([&] { read_libsvm(path); }), path,
                  {path + c.where, c.what});
  }
  auto path = write_text(tmp.file("dim.svm"), "1 1:1\n1 9:1\n");
  check_message(error_of([&] { read_libsvm(path, 4); }), path,
                {":2:", "index 9 exceeds the dimension 4"});
  auto empty = write_text(tmp.file("empty.svm"), "");
  check_message(error_of([&] { read_libsvm(empty); }), empty,
                {"no examples (empty file)"});
  auto comments = write_text(tmp.file("comments.svm"), "# nothing\n\n");
  check_message(error_of([&] { read_libsvm(comments); }), comments,
                {"no examples (only comments and blank lines)"});
  auto missing = tmp.file("missing.svm");
  check_message(error_of([&] { read_libsvm(missing); }), missing,
                {"cannot open"});
}

TEST_CASE("read_libsvm refuses a dense matrix over its limit, naming the "
          "line of the largest index") {
  temp_dir tmp;
  // 16 bytes that would ask for 2^31 - 1 floats (8 GiB) stored densely.
  auto huge = write_text(tmp.file("huge.svm"), "1 2147483647:1\n");
  check_message(error_of([&] { read_libsvm(huge); }), huge,
                {huge + ":1: index 2147483647", "2147483647 x 1",
                 "would exceed 268435456 elements"});
  // Just over the limit with two examples: the index on line 3 is named.
  auto two = write_text(tmp.file("two.svm"), "1 1:1\n# c\n0 134217729:1\n");
  check_message(error_of([&] { read_libsvm(two); }), two,
                {two + ":3: index 134217729", "134217729 x 2"});
  // An explicit dimension over the limit is refused before any allocation.
  check_message(error_of([&] { read_libsvm(two, libsvm_max_elements); }), two,
                {"268435456 x 2"});
  // At the limit it is read (half of 2^28 rows x 2 examples, 1 GiB): not
  // built here; one example of 1000 features is.
  CHECK(read_libsvm(write_text(tmp.file("ok.svm"), "1 1000:1\n")).x.rows()
        == 1000);
}

TEST_CASE("read_libsvm refuses a feature index given twice on a line") {
  temp_dir tmp;
  for (auto text : {"1 1:1\n0 2:1 2:3\n", "1 1:1\n0 3:1 1:2 3:4\n"}) {
    auto path = write_text(tmp.file("dup.svm"), text);
    check_message(error_of([&] { read_libsvm(path); }), path,
                  {path + ":2:", "duplicate feature index"});
  }
  auto path = write_text(tmp.file("dup.svm"), "1 5:1 2:1 5:2\n");
  check_message(error_of([&] { read_libsvm(path); }), path,
                {":1:", "duplicate feature index 5"});
  // The same index on different lines is of course fine.
  CHECK(read_libsvm(write_text(tmp.file("ok.svm"), "1 2:1 1:3\n0 2:1\n")).size()
        == 2);
}

TEST_CASE("read_libsvm quotes a bad token escaped and truncated") {
  temp_dir tmp;
  std::string text = "1 1:1 \x1B[31mred\x07:";
  text += std::string(5000, 'z');
  text += "\n";
  auto path = write_text(tmp.file("ctl.svm"), text);
  auto msg = error_of([&] { read_libsvm(path); });
  check_message(msg, path, {":1:", "\\x1B[31mred\\x07", "(5010 bytes)"});
  CHECK(msg.find('\x1B') == std::string::npos);
  CHECK(msg.size() < 400);
}
