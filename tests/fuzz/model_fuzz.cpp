// A model file (optim/model_file.cpp, decode_model): the safetensors header,
// its metadata and the tensors. Input: the file's bytes. Contract: the bytes
// are either a model, whose parameters encode and decode again to the same
// bits, or refused with a data_error that starts with the file's name;
// nothing else escapes, and no allocation follows an unchecked length.

#include <cstring>
#include <string>
#include <string_view>

#include "optim/model_file.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace troupe::optim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const std::string file = "fuzz.safetensors";
  std::string_view bytes{reinterpret_cast<const char*>(data), size};
  try {
    auto h = parse_safetensors(bytes, file);
    std::uint64_t at = 0;
    for (const auto& t : h.tensors) {
      FUZZ_CHECK(t.begin == at && t.dtype == "F32", "tensors not contiguous");
      at = t.end;
    }
    FUZZ_CHECK(h.data_start + at == size, "data not covered");
  } catch (const data_error& e) {
    FUZZ_CHECK(std::string_view{e.what()}.rfind(file, 0) == 0,
               "a data_error does not start with the file's name");
    return 0;
  }
  loaded_model m{{}, sequential<float>{shape{}}};
  try {
    m = decode_model(bytes, file);
  } catch (const data_error& e) {
    FUZZ_CHECK(std::string_view{e.what()}.rfind(file, 0) == 0,
               "a data_error does not start with the file's name");
    return 0;
  }
  auto again = decode_model(encode_model(m.model, m.info), file);
  FUZZ_CHECK(again.model.size() == m.model.size(), "the size changed");
  FUZZ_CHECK(std::memcmp(again.model.params(), m.model.params(),
                         m.model.size() * sizeof(float))
                 == 0,
             "the parameters changed in a round trip");
  return 0;
}
