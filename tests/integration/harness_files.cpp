#include "tests/integration/harness_files.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace pkit::itest {

TempDir::TempDir() {
    std::string templ = "/tmp/pkit-itest-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) {
        throw std::runtime_error("mkdtemp failed");
    }
    m_path = templ;
    fs::create_directories(m_path / "services");
}

TempDir::~TempDir() {
    std::error_code ignored;
    fs::remove_all(m_path, ignored);
}

void TempDir::service(std::string_view name, std::string_view toml) const {
    write_file(m_path / "services" / (std::string(name) + ".toml"), toml);
}

void TempDir::daemon_config(std::string_view toml) const {
    write_file(m_path / "pkitd.toml", toml);
}

std::string TempDir::script(std::string_view name, std::string_view body) const {
    const fs::path path = m_path / name;
    write_file(path, "#!/bin/sh\n" + std::string(body) + "\n");
    ::chmod(path.c_str(), 0755);
    return path.string();
}

void write_file(const fs::path& path, std::string_view content) {
    if (path.has_parent_path()) {
        fs::create_directories(path.parent_path());
    }
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) {
        throw std::runtime_error("cannot write " + path.string());
    }
}

void touch(const fs::path& path) {
    if (!fs::exists(path)) {
        write_file(path, "");
    }
    fs::last_write_time(path, fs::file_time_type::clock::now());
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::vector<std::string> read_lines(const fs::path& path) {
    std::vector<std::string> lines;
    std::istringstream in(read_file(path));
    for (std::string line; std::getline(in, line);) {
        if (!line.empty()) {
            lines.push_back(line);
        }
    }
    return lines;
}

std::string toml_str(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                out += c;
        }
    }
    return out + "\"";
}

std::string toml_array(const std::vector<std::string>& items) {
    std::string out = "[";
    for (std::size_t i = 0; i < items.size(); ++i) {
        out += (i == 0 ? "" : ", ") + toml_str(items[i]);
    }
    return out + "]";
}

std::string sh_command(std::string_view script) {
    return "command = " + toml_array({"/bin/sh", "-c", std::string(script)}) + "\n";
}

}  // namespace pkit::itest
