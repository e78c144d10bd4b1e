// A --config file (apps/cli.cpp, option_parser::read_config and parse) with
// every `troupe train` option bound. Contract: the file is either applied or
// refused with usage_error naming the problem; nothing else escapes.

#include <string>
#include <vector>

#include "apps/cli.hpp"
#include "apps/train_command.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace troupe::apps;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  static troupe::fuzz::scratch_file file{".conf"};
  file.write(data, size);
  option_parser p{"troupe train"};
  train_options o;
  add_train_options(p, o);
  try {
    FUZZ_CHECK(p.parse({"--config=" + file.path()}),
               "a config file made parse() stop as for --help");
  } catch (const usage_error& e) {
    FUZZ_CHECK(std::string{e.what()}.rfind("troupe train", 0) == 0
                   || std::string{e.what()}.rfind(file.path(), 0) == 0,
               "a refusal names neither the command nor the file");
  }
  return 0;
}
