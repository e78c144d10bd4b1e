// A checkpoint's state file (optim/state_file.hpp) loaded into the objects
// a shard and a worker restore (shard_store, batch_iterator). Input: the
// file's bytes. Contract: the bytes load, and saving the loaded objects
// again gives the same state; or they are refused with a data_error that
// starts with the file's name. Nothing else escapes, and no allocation
// follows an unchecked length.

#include <numeric>
#include <string>
#include <string_view>

#include "optim/dataset.hpp"
#include "optim/shard_store.hpp"
#include "optim/state_file.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/state_seed.hpp"

using namespace troupe::optim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const std::string file = "fuzz.state";
  std::string bytes{reinterpret_cast<const char*>(data), size};
  auto store = troupe::fuzz::seed_store();
  auto batches = troupe::fuzz::seed_batches();
  try {
    state_reader r{bytes, file};
    store.load(r, "store.");
    batches.load(r, "batches.");
  } catch (const data_error& e) {
    FUZZ_CHECK(std::string_view{e.what()}.rfind(file, 0) == 0,
               "a data_error does not start with the file's name");
    return 0;
  }
  // Loaded: the objects' state round-trips.
  state_writer w;
  store.save(w, "store.");
  batches.save(w, "batches.");
  auto again_store = troupe::fuzz::seed_store();
  auto again_batches = troupe::fuzz::seed_batches();
  state_reader r2{w.encode(), file};
  again_store.load(r2, "store.");
  again_batches.load(r2, "batches.");
  FUZZ_CHECK(again_store.version() == store.version(), "the version changed");
  FUZZ_CHECK(again_batches.epoch() == batches.epoch(), "the epoch changed");
  // And the loaded iterator works: a batch of valid indices.
  for (auto i : batches.next_indices())
    FUZZ_CHECK(i < 1000, "an index outside the examples");
  return 0;
}
