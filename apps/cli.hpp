#pragma once

#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <caf/config_option_set.hpp>

namespace troupe::apps {

/// A command-line mistake (unknown flag, bad value, missing file). The
/// message is written for the user; the process exits with status 2.
class usage_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Options of one subcommand, parsed from `--name=value` arguments (and
/// optionally a `--config=FILE` of `name = value` lines, which the command
/// line overrides). Built on caf::config_option_set, which does the typed
/// parsing and the help text.
class option_parser {
public:
  /// `command` names the subcommand in messages, e.g. "troupe train".
  explicit option_parser(std::string command);

  /// Binds `--name` to `ref` (its current value is the default).
  template <class T>
  option_parser& add(T& ref, const char* name, const std::string& description) {
    // config_option copies name and description into its own buffer.
    opts_.add(ref, caf::string_view{name, std::strlen(name)},
              caf::string_view{description.data(), description.size()});
    return *this;
  }

  /// Parses `args`. Returns false if `--help` was given (help printed to
  /// stdout). Throws usage_error naming the offending argument otherwise.
  bool parse(const std::vector<std::string>& args);

  /// The help text: usage line plus every option with its type, the
  /// options of a group (an algorithm's) under its heading.
  std::string help() const;

  /// The last value `args` (after their --config file) give --name, or
  /// nullopt; throws usage_error for an unusable --config.
  std::optional<std::string> peek(const std::vector<std::string>& args,
                                  const std::string& name) const;

  /// The options (an algorithm binds its own here, algos/algorithm.hpp).
  caf::config_option_set& options() noexcept {
    return opts_;
  }

  /// The names of the options the last parse() was given (without their
  /// group).
  const std::set<std::string>& given() const noexcept {
    return given_;
  }

  /// Explains an unknown option (its name): e.g. that it belongs to
  /// another algorithm. Empty: "unknown option".
  std::function<std::string(const std::string&)> explain_unknown;

  /// A heading per group for help() (group -> one line).
  std::map<std::string, std::string> group_titles;

  /// Extra text at the end of help().
  std::string help_footer;

  /// Lists the common options `names` under the heading `title` in help(),
  /// in the order sections are declared; common options no section names
  /// follow under "other options". Without sections, one flat list.
  void section(std::string title, std::vector<std::string> names);

private:
  std::vector<std::string> read_config(const std::string& path) const;
  /// --config's lines followed by `args`.
  std::vector<std::string> expand(const std::vector<std::string>& args) const;
  std::string command_;
  caf::config_option_set opts_;
  std::string config_;
  std::set<std::string> given_;
  std::vector<std::pair<std::string, std::vector<std::string>>> sections_;
};

/// `x` with `digits` decimals ("%.*f").
std::string fixed(double x, int digits);

/// Runs a subcommand's body and turns what it throws into a message on
/// stderr and an exit status: usage_error and std::invalid_argument 2 (the
/// user's to fix), any other exception 1.
template <class F>
int guarded_main(const std::string& command, F body) {
  try {
    return body();
  } catch (const usage_error& e) {
    std::cerr << e.what() << '\n';
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << command << ": " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << command << ": error: " << e.what() << '\n';
    return 1;
  }
}

} // namespace troupe::apps
