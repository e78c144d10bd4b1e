#include "apps/cli.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <caf/config_value.hpp>
#include <caf/pec.hpp>
#include <caf/settings.hpp>

#include "optim/quote.hpp"

namespace troupe::apps {

namespace {

std::string trim(const std::string& s) {
  auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos)
    return {};
  auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

std::string to_std(caf::string_view sv) {
  return std::string{sv.data(), sv.size()};
}

/// `s` itself when quoting would change nothing but add quotes, else quoted
/// (escaped and truncated).
std::string plain_or_quoted(const std::string& s) {
  auto q = optim::quote(s);
  return q == "'" + s + "'" ? s : q;
}

std::string option_name(const std::string& arg) {
  auto name = arg.substr(arg.rfind("--", 0) == 0 ? 2 : 0);
  return name.substr(0, name.find('='));
}

} // namespace

option_parser::option_parser(std::string command)
    : command_(std::move(command)) {
  opts_.add(config_, "config", "read name = value lines from FILE first");
}

std::vector<std::string>
option_parser::read_config(const std::string& path) const {
  auto refuse = [&](const std::string& why) {
    throw usage_error(command_ + ": --config=" + optim::quote(path) + ": "
                      + why);
  };
  if (path.empty())
    refuse("no file name given (expected --config=FILE)");
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found)
    refuse("no such file");
  if (status.type() == std::filesystem::file_type::directory)
    refuse("is a directory, not a file of 'name = value' lines");
  if (!ec && status.type() != std::filesystem::file_type::regular)
    refuse("is not a regular file");
  errno = 0;
  std::ifstream in{path};
  if (!in)
    refuse(std::string{"cannot be read: "}
           + (errno != 0 ? std::strerror(errno) : "open failed"));
  std::vector<std::string> args;
  std::string line;
  int lineno = 1;
  for (; std::getline(in, line); ++lineno) {
    line = trim(line.substr(0, line.find('#')));
    if (line.empty() || line.front() == '[')
      continue;
    auto eq = line.find('=');
    if (eq == std::string::npos)
      throw usage_error(path + ":" + std::to_string(lineno)
                        + ": expected 'name = value', got "
                        + optim::quote(line));
    args.push_back("--" + trim(line.substr(0, eq)) + "="
                   + trim(line.substr(eq + 1)));
  }
  if (in.bad())
    throw usage_error(path + ":" + std::to_string(lineno)
                      + ": read error: " + std::strerror(errno));
  return args;
}

std::vector<std::string>
option_parser::expand(const std::vector<std::string>& cli_args) const {
  std::vector<std::string> args;
  // A config file comes first so that the command line overrides it.
  for (const auto& arg : cli_args)
    if (arg.rfind("--config=", 0) == 0) {
      args = read_config(arg.substr(9));
    }
  args.insert(args.end(), cli_args.begin(), cli_args.end());
  return args;
}

std::optional<std::string>
option_parser::peek(const std::vector<std::string>& args,
                    const std::string& name) const {
  std::optional<std::string> value;
  auto prefix = "--" + name + "=";
  for (const auto& arg : expand(args))
    if (arg.rfind(prefix, 0) == 0)
      value = arg.substr(prefix.size());
  return value;
}

bool option_parser::parse(const std::vector<std::string>& cli_args) {
  for (const auto& arg : cli_args)
    if (arg == "--help" || arg == "-h" || arg == "help") {
      std::cout << help();
      return false;
    }
  given_.clear();
  auto args = expand(cli_args);
  // Options no one bound: refused together, each explained (an option of
  // another algorithm says whose it is).
  if (explain_unknown) {
    std::vector<std::string> why;
    for (const auto& arg : args) {
      if (arg.rfind("--", 0) != 0 || arg.rfind("--config=", 0) == 0)
        continue;
      auto name = option_name(arg);
      if (opts_.cli_long_name_lookup(name) != nullptr)
        continue;
      auto text = explain_unknown(name);
      if (!text.empty() && std::find(why.begin(), why.end(), text) == why.end())
        why.push_back(text);
    }
    if (!why.empty()) {
      std::string msg;
      for (auto& w : why)
        msg += (msg.empty() ? "" : "; ") + w;
      throw usage_error(command_ + ": " + msg + " (see " + command_
                        + " --help)");
    }
  }
  // CAF 0.17 takes a flag only bare (`--json`); accept `--json=true|false`
  // too, which a config file and a default-on flag like --standardize need.
  std::vector<std::string> rest;
  for (const auto& arg : args) {
    auto eq = arg.find('=');
    const caf::config_option* flag = nullptr;
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos)
      for (const auto& o : opts_)
        if (o.is_flag() && to_std(o.long_name()) == option_name(arg))
          flag = &o;
    if (flag == nullptr) {
      rest.push_back(arg);
      continue;
    }
    auto value = arg.substr(eq + 1);
    if (value != "true" && value != "false")
      throw usage_error(command_ + ": invalid value for --" + option_name(arg)
                        + ": " + optim::quote(value)
                        + " (expected true or false)");
    flag->store(caf::config_value{value == "true"});
    given_.insert(to_std(flag->long_name()));
  }
  args = std::move(rest);
  caf::settings cfg;
  auto [code, pos] = opts_.parse(cfg, args);
  if (code == caf::pec::success) {
    for (const auto& [key, value] : cfg) {
      if (auto* group = caf::get_if<caf::settings>(&value)) {
        for (const auto& entry : *group)
          given_.insert(entry.first);
      } else {
        given_.insert(key);
      }
    }
    return true;
  }
  const auto& arg = *pos;
  auto name = option_name(arg);
  const caf::config_option* opt = nullptr;
  for (const auto& o : opts_)
    if (to_std(o.long_name()) == name)
      opt = &o;
  std::string msg;
  if (arg.rfind("--", 0) != 0)
    msg = "unexpected argument " + optim::quote(arg)
          + " (options are --name=value)";
  else if (opt == nullptr)
    msg = "unknown option --" + plain_or_quoted(name);
  else if (code == caf::pec::missing_argument
           || arg.find('=') == std::string::npos)
    msg = "option --" + name + " needs a value: --" + name + "=<"
          + to_std(opt->type_name()) + ">";
  else
    msg = "invalid value for --" + name + ": "
          + optim::quote(arg.substr(arg.find('=') + 1)) + " is not a valid "
          + to_std(opt->type_name());
  throw usage_error(command_ + ": " + msg + " (see " + command_ + " --help)");
}

namespace {

/// `text` wrapped at word boundaries into lines of at most `width`
/// characters (a longer word stands alone), each but the first prefixed by
/// `indent`.
std::string wrapped(const std::string& text, std::size_t width,
                    const std::string& indent) {
  std::istringstream words{text};
  std::string out, line, word;
  while (words >> word) {
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n" + indent;
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  return out + line;
}

} // namespace

void option_parser::section(std::string title, std::vector<std::string> names) {
  sections_.emplace_back(std::move(title), std::move(names));
}

std::string option_parser::help() const {
  // Fits an 80-column terminal: names in the first 30 columns, the
  // descriptions wrapped in the other 50.
  constexpr std::size_t column = 30, width = 80;
  std::ostringstream out;
  out << "usage: " << command_ << " [--name=value ...]\n";
  // The common options first (by section), then each group under its
  // heading.
  std::vector<std::string> groups;
  for (const auto& o : opts_) {
    auto category = to_std(o.category());
    if (category != "global"
        && std::find(groups.begin(), groups.end(), category) == groups.end())
      groups.push_back(category);
  }
  auto heading = [&](const std::string& title) {
    out << '\n' << wrapped(title + ":", width, "") << '\n';
  };
  auto entry = [&](const caf::config_option& o) {
    std::string lhs
        = "  --" + to_std(o.long_name()) + "=<" + to_std(o.type_name()) + ">";
    const std::string indent(column, ' ');
    if (lhs.size() + 1 < column)
      out << lhs << std::string(column - lhs.size(), ' ');
    else
      out << lhs << '\n' << indent;
    out << wrapped(to_std(o.description()), width - column, indent) << '\n';
  };
  std::set<std::string> listed;
  for (const auto& [title, names] : sections_) {
    bool any = false;
    for (const auto& name : names)
      for (const auto& o : opts_)
        if (to_std(o.category()) == "global" && to_std(o.long_name()) == name
            && listed.insert(name).second) {
          if (!any)
            heading(title);
          any = true;
          entry(o);
        }
  }
  bool rest = false;
  for (const auto& o : opts_)
    if (to_std(o.category()) == "global"
        && listed.count(to_std(o.long_name())) == 0) {
      if (!rest)
        heading(sections_.empty() ? "options" : "other options");
      rest = true;
      entry(o);
    }
  for (const auto& g : groups) {
    auto title = group_titles.find(g);
    heading(title != group_titles.end() ? title->second : g + " options");
    for (const auto& o : opts_)
      if (to_std(o.category()) == g)
        entry(o);
  }
  out << help_footer;
  return out.str();
}

std::string fixed(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, x);
  return buf;
}

} // namespace troupe::apps
