#include "tests/unit/config/temp_tree.hpp"

#include <unistd.h>
#include "tests/unit/config/config_doctest.hpp"

#include <cstdlib>
#include <fstream>

namespace pkit::config::test {

TempTree::TempTree() {
    std::string pattern = "/tmp/pkit-config-test-XXXXXX";
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    m_root = pattern;
    // A configuration directory has one, even empty: a missing one is an error.
    std::filesystem::create_directory(m_root / "services");
}

TempTree::~TempTree() {
    std::error_code ec;
    std::filesystem::remove_all(m_root, ec);
}

void TempTree::write(std::string_view relative, std::string_view content) const {
    std::filesystem::path path = m_root / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    out << content;
    REQUIRE(out.good());
}

void TempTree::service(std::string_view name, std::string_view content) const {
    write("services/" + std::string(name) + ".toml", content);
}

LoadResult TempTree::load(const LoadOptions& options) const {
    return load_tree(m_root, options);
}

LoadResult TempTree::load() const {
    return load(test_options());
}

std::vector<std::string> TempTree::errors(const LoadOptions& options) const {
    auto result = load(options);
    std::vector<std::string> out;
    if (result) {
        return out;
    }
    std::string prefix = m_root.string() + "/";
    for (const Diagnostic& diag : result.error()) {
        std::string text = diag.to_string();
        if (text.starts_with(prefix)) {
            text.erase(0, prefix.size());
        }
        out.push_back(text);
    }
    return out;
}

std::vector<std::string> TempTree::errors() const {
    return errors(test_options());
}

LoadOptions test_options() {
    return LoadOptions{.as_root = false, .uid = ::getuid(), .gid = ::getgid()};
}

std::vector<std::string> service_errors(std::string_view content) {
    TempTree tree;
    tree.service("web", content);
    return tree.errors();
}

ServiceSpec service_spec(std::string_view content) {
    TempTree tree;
    tree.service("web", content);
    auto result = tree.load();
    if (!result) {
        for (const auto& diag : result.error()) {
            MESSAGE(diag.to_string());
        }
    }
    REQUIRE(result.has_value());
    REQUIRE(result->services.size() == 1);
    return result->services.front();
}

void check_bad(const BadCase& c) {
    CAPTURE(c.toml);
    CHECK(service_errors(std::string("command = [\"x\"]\n") + c.toml) ==
          std::vector<std::string>{std::string("services/web.toml:") + c.error});
}

}  // namespace pkit::config::test
