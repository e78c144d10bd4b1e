// troupe train's entry point: parse, run under the signal watch, print.

#include <iostream>
#include <memory>
#include <string>

#include "apps/cli.hpp"
#include "apps/interrupt.hpp"
#include "apps/train_command.hpp"

namespace troupe::apps {

int train_main(const std::vector<std::string>& args) {
  train_options opts;
  option_parser parser{"troupe train"};
  try {
    add_train_options(parser, opts, args);
    if (!parser.parse(args))
      return 0;
    opts.given = parser.given();
  } catch (const usage_error& e) {
    std::cerr << e.what() << '\n';
    return 2;
  }
  return train_main_with(std::move(opts));
}

int train_main_with(train_options opts) {
  // Before any thread starts: they inherit the blocked signals.
  if (!opts.stop)
    opts.stop = std::make_shared<actors::stop_request>();
  interrupt_watch watch{opts.stop, "troupe train"};
  auto status = guarded_main("troupe train", [&] {
    auto json = opts.json;
    auto result = run_train(std::move(opts));
    const auto& acc = result["test_accuracy"]; // null: no evaluation
    std::cerr << "troupe train: test accuracy "
              << (acc.is_number() ? std::to_string(acc.get<double>()) : "none")
              << " after " << result["seconds"].get<double>() << " s, "
              << static_cast<long>(result["samples_per_sec"].get<double>())
              << " samples/s\n";
    if (result.contains("error"))
      std::cerr << "troupe train: error: " << result["error"].get<std::string>()
                << '\n';
    if (json)
      std::cout << result.dump() << std::endl;
    if (result.contains("save_error"))
      std::cerr << "troupe train: error: the model was not saved: "
                << result["save_error"].get<std::string>() << '\n';
    return result.contains("error") || result.contains("save_error") ? 1 : 0;
  });
  return watch.exit_status(status);
}

} // namespace troupe::apps
