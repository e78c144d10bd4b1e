#include "algos/compression_flags.hpp"

#include <stdexcept>

#include <caf/config_option_set.hpp>

namespace troupe::algos {

void compression_flags::bind(caf::config_option_set& set,
                             caf::string_view category,
                             const std::string& what) {
  auto text = "compress " + what
              + " with error feedback: adacomp | topk | onebit | none "
                "(default none)";
  set.add(compress, category, "compress",
          caf::string_view{text.data(), text.size()})
      .add(bin_fc, category, "bin-fc",
           "adacomp: bin length of fully connected layers (default 500)")
      .add(bin_conv, category, "bin-conv",
           "adacomp: bin length of convolutional layers (default 50)")
      .add(topk_fc, category, "topk-fc",
           "topk: fraction of a fully connected layer sent (default 0.01)")
      .add(topk_conv, category, "topk-conv",
           "topk: fraction of a convolutional layer sent (default 0.01)");
}

void compression_flags::check(const std::set<std::string>& given) const {
  auto fail
      = [](const std::string& what) { throw std::invalid_argument(what); };
  optim::codec method;
  try {
    method = optim::parse_codec(compress);
  } catch (const std::invalid_argument& e) {
    fail(std::string{"--compress: "} + e.what());
  }
  if ((given.count("bin-fc") || given.count("bin-conv"))
      && method != optim::codec::adacomp)
    fail("--bin-fc and --bin-conv apply to --compress=adacomp");
  if ((given.count("topk-fc") || given.count("topk-conv"))
      && method != optim::codec::topk)
    fail("--topk-fc and --topk-conv apply to --compress=topk");
  if (bin_fc < 1 || bin_fc > 1000000 || bin_conv < 1 || bin_conv > 1000000)
    fail("--bin-fc and --bin-conv must be in [1, 1000000]");
  if (!(topk_fc > 0 && topk_fc <= 1) || !(topk_conv > 0 && topk_conv <= 1))
    fail("--topk-fc and --topk-conv must be in (0, 1]");
}

optim::compress_options compression_flags::options() const {
  optim::compress_options c;
  c.method = optim::parse_codec(compress);
  c.bin_fc = bin_fc;
  c.bin_conv = bin_conv;
  c.density_fc = topk_fc;
  c.density_conv = topk_conv;
  return c;
}

} // namespace troupe::algos
