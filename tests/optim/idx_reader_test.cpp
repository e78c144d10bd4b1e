#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "data_files.hpp"
#include "optim/dataset.hpp"

using namespace troupe::optim;
using namespace troupe::test;

// -- real Fashion-MNIST
// ---------------------------------------------------------

TEST_CASE("Fashion-MNIST loads with the right counts, shapes and values") {
  const std::string dir = fashion_mnist_dir;
  INFO("install Debian's dataset-fashion-mnist package to provide " << dir);
  REQUIRE(fs::is_directory(dir));
  auto start = std::chrono::steady_clock::now();
  auto data = load_mnist_dir(dir);
  auto elapsed = std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - start)
                     .count();
  std::cout << "load_mnist_dir(" << dir << "): " << elapsed << " ms\n";
  CHECK(data.train.name == "fashion-mnist/train");
  CHECK(data.test.name == "fashion-mnist/test");
  REQUIRE(data.train.size() == 60000);
  REQUIRE(data.test.size() == 10000);
  for (auto* set : {&data.train, &data.test}) {
    CHECK(set->x.rows() == 784);
    CHECK(set->sample_shape == shape{1, 28, 28});
    CHECK(set->classes == 10);
    CHECK(set->labels.size() == set->size());
    CHECK(set->targets.empty());
    CHECK(set->x.minCoeff() == 0.0f);
    CHECK(set->x.maxCoeff() == 1.0f);
  }
  // Labels and pixels exactly as stored, read here with zlib directly.
  auto labels = raw_prefix(dir + "/train-labels-idx1-ubyte.gz", 8 + 5);
  for (int i = 0; i < 5; ++i)
    CHECK(data.train.labels[static_cast<std::size_t>(i)] == labels[8 + i]);
  CHECK(data.train.labels[0] == 9); // Fashion-MNIST: "ankle boot"
  auto image = raw_prefix(dir + "/train-images-idx3-ubyte.gz", 16 + 784);
  for (int i = 0; i < 784; ++i)
    REQUIRE(data.train.x(i, 0) == static_cast<float>(image[16 + i]) / 255.0f);
  // Fashion-MNIST is balanced: 6000 training examples per class.
  std::vector<int> counts(10, 0);
  for (auto label : data.train.labels)
    ++counts[static_cast<std::size_t>(label)];
  for (int c : counts)
    CHECK(c == 6000);
}

// -- crafted IDX files
// ----------------------------------------------------------

TEST_CASE("read_idx reads plain and gzip files alike") {
  temp_dir tmp;
  auto images = idx_images(3, 2, 2, pixels_3x2x2);
  auto labels = idx_labels({4, 0, 2});
  for (bool gz : {false, true}) {
    INFO((gz ? "gzip" : "plain"));
    auto write = gz ? write_gz : write_plain;
    auto data = read_idx(write(tmp.file("img"), images),
                         write(tmp.file("lbl"), labels));
    REQUIRE(data.size() == 3);
    CHECK(data.x.rows() == 4);
    CHECK(data.sample_shape == shape{1, 2, 2});
    CHECK(data.labels == std::vector<std::int32_t>{4, 0, 2});
    CHECK(data.classes == 5); // largest label + 1
    CHECK(data.x(1, 0) == 1.0f);
    CHECK(data.x(2, 0) == 0.2f);
    CHECK(data.x(3, 2) == 40.0f / 255.0f);
  }
  auto data = read_idx(write_plain(tmp.file("img"), images),
                       write_plain(tmp.file("lbl"), labels), 10);
  CHECK(data.classes == 10);
}

TEST_CASE("read_idx errors name the file and the problem") {
  temp_dir tmp;
  auto good_images
      = write_plain(tmp.file("good-images"), idx_images(3, 2, 2, pixels_3x2x2));
  auto good_labels
      = write_plain(tmp.file("good-labels"), idx_labels({1, 2, 3}));
  SECTION("missing file") {
    auto missing = tmp.file("nope-images.gz");
    check_message(error_of([&] { read_idx(missing, good_labels); }), missing,
                  {"cannot open", "No such file"});
  }
  SECTION("wrong magic, plain and gzip") {
    // Arguments swapped: the labels are read first, from the image file.
    auto swapped = error_of([&] { read_idx(good_labels, good_images); });
    check_message(swapped, good_images,
                  {"wrong magic number 0x00000803, expected 0x00000801",
                   "idx1 ubyte labels"});
    auto gz = write_gz(tmp.file("labels-as-images.gz"), idx_labels({1, 2, 3}));
    check_message(error_of([&] { read_idx(gz, good_labels); }), gz,
                  {"wrong magic number 0x00000801, expected 0x00000803",
                   "idx3 ubyte images"});
  }
  SECTION("truncated header") {
    auto bad = idx_images(3, 2, 2, {});
    bad.resize(6);
    auto path = write_gz(tmp.file("short-header.gz"), bad);
    check_message(error_of([&] { read_idx(path, good_labels); }), path,
                  {"truncated header: expected 16 bytes, got 6"});
  }
  SECTION("truncated data, plain and gzip") {
    bytes few(pixels_3x2x2.begin(), pixels_3x2x2.begin() + 7);
    for (bool gz : {false, true}) {
      auto path = (gz ? write_gz : write_plain)(tmp.file("short-data"),
                                                idx_images(3, 2, 2, few));
      check_message(error_of([&] { read_idx(path, good_labels); }), path,
                    {"truncated data: expected 12 bytes after the header, "
                     "got 7"});
    }
  }
  SECTION("cut or corrupt gzip stream") {
    bytes noise(3 * 100 * 100);
    std::uint32_t state = 12345;
    for (auto& b : noise) {
      state = state * 1664525u + 1013904223u;
      b = static_cast<unsigned char>(state >> 24);
    }
    auto path = write_gz(tmp.file("cut.gz"), idx_images(3, 100, 100, noise));
    auto whole = fs::file_size(path);
    fs::resize_file(path, whole / 2);
    auto msg = error_of([&] { read_idx(path, good_labels); });
    check_message(msg, path,
                  {"truncated data: expected 30000 bytes after the header"});
    path = write_gz(tmp.file("corrupt.gz"), idx_images(3, 100, 100, noise));
    {
      std::fstream f{path, std::ios::in | std::ios::out | std::ios::binary};
      f.seekp(static_cast<std::streamoff>(whole / 2));
      const char junk[64] = {};
      f.write(junk, sizeof(junk));
    }
    check_message(error_of([&] { read_idx(path, good_labels); }), path,
                  {"corrupt gzip data"});
  }
  SECTION("trailing data") {
    auto extra = pixels_3x2x2;
    extra.push_back(7);
    auto path = write_plain(tmp.file("long"), idx_images(3, 2, 2, extra));
    check_message(error_of([&] { read_idx(path, good_labels); }), path,
                  {"trailing data", "12 bytes"});
  }
  SECTION("zero dimension") {
    auto path = write_plain(tmp.file("zero"), idx_images(3, 0, 2, {}));
    check_message(error_of([&] { read_idx(path, good_labels); }), path,
                  {"dimension 1", "is zero"});
  }
  SECTION("label out of range for the number of classes") {
    auto path = write_plain(tmp.file("labels"), idx_labels({3, 10, 1}));
    check_message(
        error_of([&] { read_idx(good_images, path, 10); }), path,
        {"label 10 at index 1 is out of range", "labels must be < 10"});
  }
  SECTION("mismatched image and label counts") {
    auto path = write_plain(tmp.file("two-labels"), idx_labels({1, 2}));
    check_message(
        error_of([&] { read_idx(good_images, path); }), good_images,
        {"mismatched counts", good_images, "3 images", path, "2 labels"});
  }
  SECTION("hostile headers are refused without allocating their claims") {
    auto huge = write_gz(tmp.file("huge.gz"),
                         idx_images(0xFFFFFFFFu, 28, 28, {1, 2, 3}));
    check_message(error_of([&] { read_idx(huge, good_labels); }), huge,
                  {"more than 2^31 - 1 elements"});
    // 1.5e9 bytes claimed, just under the element limit: must fail as
    // truncated after reading what is there, not after allocating 1.5 GB.
    auto many_labels
        = write_gz(tmp.file("many-labels.gz"), idx_labels(bytes(2000000, 1)));
    auto rss_before = max_rss_kib();
    for (bool gz : {false, true}) {
      auto path = (gz ? write_gz : write_plain)(
          tmp.file("big"), idx_images(2000000, 28, 28, bytes(1000, 7)));
      check_message(error_of([&] { read_idx(path, many_labels); }), path,
                    {"truncated data: expected 1568000000 bytes after the "
                     "header, got 1000"});
    }
    CHECK(max_rss_kib() - rss_before < 100 * 1024);
    // A label file claiming more labels than it holds.
    auto short_labels
        = write_gz(tmp.file("short-labels.gz"), idx_labels(bytes(5, 1)));
    auto raw = idx_labels(bytes(5, 1));
    raw[5] = 0x7F; // count 0x007F0005
    write_gz(short_labels, raw);
    check_message(error_of([&] { read_idx(good_images, short_labels); }),
                  short_labels,
                  {"truncated data: expected 8323077 bytes after the header, "
                   "got 5"});
  }
}

TEST_CASE("load_mnist_dir names what is missing and checks test labels") {
  temp_dir tmp;
  auto missing_dir = tmp.file("no-such-dir");
  check_message(error_of([&] { load_mnist_dir(missing_dir); }), missing_dir,
                {"missing directory"});
  write_gz(tmp.file("train-images-idx3-ubyte.gz"),
           idx_images(3, 2, 2, pixels_3x2x2));
  write_plain(tmp.file("train-labels-idx1-ubyte"), idx_labels({0, 1, 2}));
  write_plain(tmp.file("t10k-images-idx3-ubyte"),
              idx_images(1, 2, 2, {1, 2, 3, 4}));
  auto dir = tmp.path.string();
  check_message(error_of([&] { load_mnist_dir(dir); }),
                tmp.file("t10k-labels-idx1-ubyte"),
                {"missing", "t10k-labels-idx1-ubyte.gz"});
  auto test_labels
      = write_gz(tmp.file("t10k-labels-idx1-ubyte.gz"), idx_labels({1}));
  auto data = load_mnist_dir(dir);
  CHECK(data.train.size() == 3);
  CHECK(data.test.size() == 1);
  CHECK(data.train.classes == 3);
  CHECK(data.test.classes == 3);
  write_gz(test_labels, idx_labels({3}));
  check_message(error_of([&] { load_mnist_dir(dir); }), test_labels,
                {"label 3", "labels must be < 3"});
}

TEST_CASE("load_mnist_dir refuses a training label that skips classes") {
  temp_dir tmp;
  auto dir = tmp.path.string();
  write_plain(tmp.file("train-images-idx3-ubyte"),
              idx_images(3, 2, 2, pixels_3x2x2));
  write_plain(tmp.file("t10k-images-idx3-ubyte"),
              idx_images(1, 2, 2, {1, 2, 3, 4}));
  write_plain(tmp.file("t10k-labels-idx1-ubyte"), idx_labels({1}));
  // One corrupt byte of 255 among labels 0 and 1: not 256 classes.
  auto labels = write_plain(tmp.file("train-labels-idx1-ubyte"),
                            idx_labels({1, 255, 0}));
  check_message(error_of([&] { load_mnist_dir(dir); }), labels,
                {"label 255 at index 1 is out of range",
                 "no training label is 2", "labels must be < 2"});
  write_plain(labels, idx_labels({1, 3, 2}));
  check_message(error_of([&] { load_mnist_dir(dir); }), labels,
                {"label 1 at index 0", "no training label is 0"});
  // The caller may say how many classes there are.
  write_plain(labels, idx_labels({1, 255, 0}));
  check_message(error_of([&] { load_mnist_dir(dir, 10); }), labels,
                {"label 255 at index 1", "labels must be < 10"});
  write_plain(labels, idx_labels({1, 9, 0}));
  CHECK(load_mnist_dir(dir, 10).train.classes == 10);
  CHECK(load_mnist_dir(dir, 10).test.classes == 10);
}

TEST_CASE("read_idx names the first label out of range") {
  temp_dir tmp;
  auto images = write_plain(tmp.file("img"), idx_images(3, 2, 2, pixels_3x2x2));
  auto path = write_plain(tmp.file("lbl"), idx_labels({2, 12, 200}));
  check_message(error_of([&] { read_idx(images, path, 10); }), path,
                {"label 12 at index 1 is out of range"});
}
