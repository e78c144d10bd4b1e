#pragma once

#include <cstdint>
#include <string>

#include "optim/dataset.hpp"

namespace troupe::apps {

/// Names the data sources `--data` accepts, for help and error messages.
const char* data_source_help();

/// Loads what `--data=spec` names: "fashion-mnist" (Debian's
/// dataset-fashion-mnist), a directory of IDX files, a libsvm file, or
/// "synthetic-logreg" (the last two with every tenth example held out as the
/// test set). Throws
/// optim::data_error naming the file and the problem.
optim::train_test load_data(const std::string& spec, std::uint64_t seed);

} // namespace troupe::apps
