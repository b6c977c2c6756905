#pragma once
// pkitctl's --help: option values named in words (`--timeout SECONDS`, `--since
// DURATION`) instead of CLI11's types and validator notes (`FLOAT:POSITIVE`,
// `INT in [0 - 1073741824]`), with the default in words after them.

#include <memory>

#include <CLI/CLI.hpp>

namespace pkit::ctl {

// The formatter main gives the app before adding subcommands (they inherit it).
std::shared_ptr<CLI::Formatter> words_formatter();

}  // namespace pkit::ctl
