#pragma once
// Temporary configuration trees for integration cases: one directory per case, holding
// pkitd.toml, services/*.toml, helper scripts, marker files and pkitd's socket.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace pkit::itest {

namespace fs = std::filesystem;

// A fresh directory under /tmp (mkdtemp), removed recursively at destruction. Its path
// is also the case's marker: every process a case starts carries it (in argv or in
// the PKIT_ITEST_MARKER environment variable), so leftovers can be found in /proc.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const fs::path& path() const { return m_path; }
    std::string str() const { return m_path.string(); }
    // DIR/NAME as a string, for paths handed to services.
    std::string file(std::string_view name) const { return (m_path / name).string(); }

    // Writes DIR/services/NAME.toml.
    void service(std::string_view name, std::string_view toml) const;
    // Writes DIR/pkitd.toml.
    void daemon_config(std::string_view toml) const;
    // Writes an executable `#!/bin/sh` script DIR/NAME and returns its path.
    std::string script(std::string_view name, std::string_view body) const;

private:
    fs::path m_path;
};

// Writes `content` to `path`, creating parent directories.
void write_file(const fs::path& path, std::string_view content);
// Creates `path` (empty) when missing and sets its mtime to now: a heartbeat for file
// probes, which see a file only while it is newer than 2 × interval. A case that waits
// for such a probe touches the file on each poll: one write may be stale before a
// probe of a loaded pkitd gets to it.
void touch(const fs::path& path);
// The whole content of a file; empty when it does not exist.
std::string read_file(const fs::path& path);
// Non-empty lines of a file.
std::vector<std::string> read_lines(const fs::path& path);

// A TOML basic string literal for `text`, quotes included.
std::string toml_str(std::string_view text);
// A TOML array of strings.
std::string toml_array(const std::vector<std::string>& items);
// `command = ["/bin/sh", "-c", SCRIPT]` as a TOML line (newline included).
std::string sh_command(std::string_view script);

}  // namespace pkit::itest
