// The sharded data directory (optim/data_dir.hpp): its files loaded apart
// give, bit for bit, what the same rows read as one CSV file give (labels,
// features, the columns' standardization), the workers' files cover every
// file once, and a directory that cannot be read as one data set is
// refused naming the file and the problem.

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "data_files.hpp"
#include "optim/data_dir.hpp"
#include "optim/data_dir_replica.hpp"
#include "optim/rng.hpp"
#include "optim/state_file.hpp"

using namespace troupe::optim;
using namespace troupe::test;
namespace fs = std::filesystem;

namespace {

/// `rows` lines of 3 features and a label: integer labels in {-1, 2, 7}
/// (classes), or fractional (targets). Seeded.
std::vector<std::string> make_rows(std::size_t rows, bool classes,
                                   std::uint64_t seed) {
  rng gen{seed};
  std::vector<std::string> out;
  const double values[] = {-1, 2, 7};
  for (std::size_t r = 0; r < rows; ++r) {
    auto f = [&] { return std::to_string(gen.uniform() * 100 - 20); };
    auto label = classes ? std::to_string(static_cast<int>(
                     values[static_cast<std::size_t>(gen.uniform() * 3) % 3]))
                         : std::to_string(gen.uniform() * 5 + 0.25);
    out.push_back(f() + "," + f() + "," + label + "," + f());
  }
  return out;
}

const std::string header = "a,b,label,c\n";

std::string join(const std::vector<std::string>& rows, std::size_t from,
                 std::size_t to) {
  std::string s = header;
  for (auto i = from; i < to; ++i)
    s += rows[i] + "\n";
  return s;
}

/// DIR/train/part-K.csv for the cuts, DIR/test/test.csv.
std::string make_dir(const temp_dir& tmp, const std::vector<std::string>& rows,
                     const std::vector<std::size_t>& cuts,
                     const std::string& test_rows) {
  auto dir = tmp.file("data");
  fs::create_directories(dir + "/train");
  fs::create_directories(dir + "/test");
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k)
    write_text(dir + "/train/part-" + std::to_string(k) + ".csv",
               join(rows, cuts[k], cuts[k + 1]));
  write_text(dir + "/test/test.csv", header + test_rows);
  return dir;
}

} // namespace

TEST_CASE("a data directory loads as its files taken as one") {
  std::uint64_t seed = 11;
  std::cout << "data_dir seed " << seed << "\n";
  temp_dir tmp;
  auto rows = make_rows(103, true, seed);
  auto dir = make_dir(tmp, rows, {0, 25, 50, 51, 103},
                      rows[0] + "\n" + rows[5] + "\n");
  auto whole_path = write_text(tmp.file("whole.csv"), join(rows, 0, 103));
  train_test whole{read_csv(whole_path), dataset{}};
  whole.test.x.resize(3, 0);
  auto expected = standardize_features(whole);

  REQUIRE(is_data_dir(dir));
  CHECK_FALSE(is_data_dir(whole_path));
  auto s = summarize_data_dir(dir);
  CHECK(s.features == 3);
  CHECK(s.train.size() == 4);
  CHECK(s.train_examples() == 103);
  CHECK(s.test_examples() == 2);
  CHECK(s.train[2].examples == 1);
  CHECK(s.classes == std::vector<double>{-1, 2, 7});
  CHECK(s.columns.means == expected.means);
  CHECK(s.columns.stddevs == expected.stddevs);

  auto all = load_data_files(s, {0, 1, 2, 3}, false, true);
  CHECK(all.name == dir + "/train");
  CHECK(all.classes == 3);
  CHECK(all.sample_shape == whole.train.sample_shape);
  CHECK(all.labels == whole.train.labels);
  REQUIRE(all.x.cols() == whole.train.x.cols());
  CHECK(all.x == whole.train.x); // bit for bit, standardized alike
  auto test = load_data_files(s, {0}, true, true);
  REQUIRE(test.size() == 2);
  CHECK(test.labels[0] == whole.train.labels[0]);
  CHECK(test.x.col(1) == whole.train.x.col(5));

  // Workers' files: i % W == w, every file once.
  CHECK(worker_files(s, 0, 3) == std::vector<std::size_t>{0, 3});
  CHECK(worker_files(s, 1, 3) == std::vector<std::size_t>{1});
  CHECK(worker_files(s, 2, 3) == std::vector<std::size_t>{2});
  CHECK(worker_files(s, 4, 5).empty());
  // A worker's part holds its files' rows, in order.
  auto part = load_data_files(s, worker_files(s, 1, 3), false, true);
  REQUIRE(part.size() == 25);
  CHECK(part.x == whole.train.x.middleCols(25, 25));
}

TEST_CASE("a data directory of regression targets keeps them") {
  temp_dir tmp;
  auto rows = make_rows(20, false, 3);
  auto dir = make_dir(tmp, rows, {0, 10, 20}, rows[3] + "\n");
  auto s = summarize_data_dir(dir);
  CHECK(s.classes.empty());
  auto d = load_data_files(s, {1}, false, false);
  CHECK(d.classes == 0);
  CHECK(d.labels.empty());
  REQUIRE(d.targets.size() == 10);
  auto whole = read_csv(write_text(tmp.file("w.csv"), join(rows, 10, 20)));
  CHECK(d.targets == whole.targets);
  CHECK(d.x == whole.x); // not standardized
}

TEST_CASE("a data directory that is not one data set is refused") {
  temp_dir tmp;
  auto rows = make_rows(12, true, 5);
  auto dir = make_dir(tmp, rows, {0, 6, 12}, rows[0] + "\n");
  CHECK(summarize_data_dir(dir).train_examples() == 12);

  write_text(dir + "/train/part-9.csv", "a,c,label,b\n1,2,2,3\n");
  CHECK_THAT(error_of([&] { summarize_data_dir(dir); }),
             Catch::Contains("part-9.csv:1: its header differs"));
  fs::remove(dir + "/train/part-9.csv");

  write_text(dir + "/train/notes.txt", "hello");
  CHECK_THAT(error_of([&] { summarize_data_dir(dir); }),
             Catch::Contains("notes.txt: not a CSV file"));
  fs::remove(dir + "/train/notes.txt");

  write_text(dir + "/train/part-8.csv", header + "1,2,0.5,3\n");
  CHECK_THAT(error_of([&] { summarize_data_dir(dir); }),
             Catch::Contains("hold one kind"));
  fs::remove(dir + "/train/part-8.csv");

  write_text(dir + "/test/test.csv", header + "1,2,99,3\n");
  CHECK_THAT(error_of([&] { summarize_data_dir(dir); }),
             Catch::Contains("test.csv: label 99")
                 && Catch::Contains("no training file"));

  fs::remove_all(dir + "/test");
  CHECK_THAT(error_of([&] { summarize_data_dir(dir); }),
             Catch::Contains("no test/ folder"));
  fs::create_directories(dir + "/test");
  CHECK_THAT(error_of([&] { summarize_data_dir(dir); }),
             Catch::Contains("no CSV files"));

  // A file changed after the summary: its worker says so.
  write_text(dir + "/test/test.csv", header + rows[1] + "\n");
  auto s = summarize_data_dir(dir);
  write_text(dir + "/train/part-0.csv", join(rows, 0, 3));
  CHECK_THAT(error_of([&] { load_data_files(s, {0}, false, true); }),
             Catch::Contains("part-0.csv: changed since"));
}

TEST_CASE("a worker's replica holds its files and loads the part it adopts") {
  std::uint64_t seed = 17;
  std::cout << "data_dir_replica seed " << seed << "\n";
  temp_dir tmp;
  auto rows = make_rows(90, true, seed);
  // Worker 1 of 2 holds part-1 and part-3 (rows 30..50 and 70..90).
  auto dir = make_dir(tmp, rows, {0, 30, 50, 70, 90}, rows[2] + "\n");
  auto s = std::make_shared<data_dir_summary>(summarize_data_dir(dir));
  auto whole = load_data_files(*s, {0, 1, 2, 3}, false, true);

  // A range reads across file boundaries, as the files taken as one.
  auto r = load_data_range(*s, {1, 3}, 15, 32, true);
  REQUIRE(r.size() == 17);
  CHECK(r.x.leftCols(5) == whole.x.middleCols(45, 5));
  CHECK(r.x.rightCols(12) == whole.x.middleCols(70, 12));
  CHECK(std::vector<std::int32_t>(r.labels.begin(), r.labels.begin() + 5)
        == std::vector<std::int32_t>(whole.labels.begin() + 45,
                                     whole.labels.begin() + 50));
  CHECK(load_data_range(*s, {0, 1, 2, 3}, 0, 2048, true).x == whole.x);
  CHECK(load_data_range(*s, {2}, 25, 40, true).size() == 0);

  data_dir_part p{s, 0, 2, true};
  data_dir_replica mine{p, "mlp", 8, seed, 1};
  CHECK(mine.examples() == 50); // part-0 and part-2
  // Worker 1 lost: the second half of its 40 examples comes to worker 0.
  CHECK(mine.adopt(1, 1, 2) == 20);
  CHECK(mine.adopt(1, 1, 2) == 0); // once
  CHECK(mine.examples() == 70);
  for (int i = 0; i < 12; ++i)
    mine.compute();

  // A checkpoint of it, read by a fresh replica: the adopted part is loaded
  // again, and the two go on alike.
  state_writer w;
  mine.save_state(w, "w0.");
  state_reader back{w.encode(), "w0.state"};
  data_dir_replica fresh{p, "mlp", 8, seed, 1};
  fresh.load_state(back, "w0.");
  CHECK(fresh.examples() == 70);
  auto a = mine.compute(), b = fresh.compute();
  CHECK(a.loss == b.loss);
  CHECK(std::equal(mine.grads(), mine.grads() + mine.size(), fresh.grads()));

  // Another worker's state is refused.
  data_dir_replica other{data_dir_part{s, 1, 2, true}, "mlp", 8, seed, 1};
  CHECK_THAT(error_of([&] { other.load_state(back, "w0."); }),
             Catch::Contains("data_dir.worker"));
  // Three workers for two files: the third has none.
  CHECK_THAT(
      error_of([&] {
        data_dir_replica{data_dir_part{s, 4, 5, true}, "mlp", 8, seed, 1};
      }),
      Catch::Contains("none for worker 4 of 5"));
  // Processes that read the same directory agree; a changed file changes it.
  auto fp = data_dir_fingerprint(*s);
  CHECK(fp == data_dir_fingerprint(summarize_data_dir(dir)));
  write_text(dir + "/train/part-3.csv", join(rows, 70, 89));
  CHECK(fp != data_dir_fingerprint(summarize_data_dir(dir)));
}
