#pragma once
// Test helpers: a configuration tree in a fresh temp directory, removed afterwards,
// and loads that give diagnostics with the temp prefix stripped, so a test can
// assert "services/web.toml:3:7: error: ..." exactly.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "config/loader.hpp"

namespace pkit::config::test {

class TempTree {
public:
    TempTree();
    ~TempTree();
    TempTree(const TempTree&) = delete;
    TempTree& operator=(const TempTree&) = delete;

    const std::filesystem::path& root() const { return m_root; }
    // Writes `content` to root/relative, creating directories on the way.
    void write(std::string_view relative, std::string_view content) const;
    // services/NAME.toml
    void service(std::string_view name, std::string_view content) const;
    void daemon(std::string_view content) const { write("pkitd.toml", content); }

    LoadResult load(const LoadOptions& options) const;
    LoadResult load() const;
    // Every diagnostic as text, relative to root; empty when the tree loaded.
    std::vector<std::string> errors(const LoadOptions& options) const;
    std::vector<std::string> errors() const;

private:
    std::filesystem::path m_root;
};

// Options for tests: not root, this process's ids.
LoadOptions test_options();

// One service "web" with `content`; its diagnostics.
std::vector<std::string> service_errors(std::string_view content);

// A bad value of a service file and the one diagnostic it must give.
struct BadCase {
    const char* toml;   // after a first line `command = ["x"]`
    const char* error;  // "LINE:COLUMN: error: MESSAGE" in services/web.toml
};
// Checks that `c.toml` gives exactly `c.error`.
void check_bad(const BadCase& c);
// One service "web" with `content`, which must load; its spec.
ServiceSpec service_spec(std::string_view content);

}  // namespace pkit::config::test
